// The backward ops run as their forward ops' #soap.config says: a gradient
// generic over the forward op's loops carries its config, and a matmul's
// gradient products carry it with the loops (and so the task order)
// reordered: dW = Xᵀ·dY runs over (k, n, m). The partitioned backward pass
// then splits the loops the forward op split, on the same devices, as the
// simulator prices it (test/Passes/partition/communication-checker.test).
// RUN: soap-opt %s --soap-training-step="loss=mse" | FileCheck %s

// CHECK-LABEL: func.func @train_step
// Forward.
// CHECK: linalg.matmul {soap.config = #soap.config<degrees = [2, 2, 1], devices = [0, 2, 1, 3]>}
// CHECK: linalg.generic {{.*}} attrs = {soap.config = #soap.config<degrees = [2, 2], devices = [0, 2, 1, 3]>}
// Backward: the bias add's gradients (of its input, then of the bias,
// which sums over the rows), then the weight's.
// CHECK: linalg.generic {indexing_maps = [{{.*}}], iterator_types = ["parallel", "parallel"]} {{.*}} attrs = {soap.config = #soap.config<degrees = [2, 2], devices = [0, 2, 1, 3]>}
// CHECK: linalg.generic {indexing_maps = [{{.*}}], iterator_types = ["reduction", "parallel"]} {{.*}} attrs = {soap.config = #soap.config<degrees = [2, 2], devices = [0, 2, 1, 3]>}
// CHECK: linalg.matmul {soap.config = #soap.config<degrees = [1, 2, 2], devices = [0, 1, 2, 3]>} ins(%{{.*}}, %{{.*}} : tensor<6x4xf32>, tensor<4x8xf32>)

#rows = affine_map<(i, j) -> (i, j)>
#cols = affine_map<(i, j) -> (j)>
module attributes {soap.num_devices = 4 : i64} {
func.func @f(%x: tensor<4x6xf32>, %w: tensor<6x8xf32> {soap.param},
             %b: tensor<8xf32> {soap.param}) -> tensor<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = linalg.matmul {soap.config = #soap.config<degrees = [2, 2, 1], devices = [0, 2, 1, 3]>}
         ins(%x, %w : tensor<4x6xf32>, tensor<6x8xf32>)
         outs(%z : tensor<4x8xf32>) -> tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [#rows, #cols, #rows],
                       iterator_types = ["parallel", "parallel"]}
         ins(%y, %b : tensor<4x8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>)
         attrs = {soap.config = #soap.config<degrees = [2, 2], devices = [0, 2, 1, 3]>} {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
}

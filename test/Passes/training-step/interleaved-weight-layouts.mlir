// A weight whose readers' configs interleave (Megatron splitting an RNN's
// weight by columns and by rows at alternate time steps): each product's
// gradient accumulates into the sum of its own layout only (BLAS's
// beta = 1), and the sums of the layouts are added once, in the order they
// began, so that the partitioned step re-splits the gradient once per
// layout instead of once per reader (the simulator's parameter
// synchronization: lib/sim/Parameters.cpp).
// RUN: soap-opt %s --soap-training-step="loss=mse" | FileCheck %s

// CHECK-LABEL: func.func @train_step
// The last reader (columns split) starts its layout's sum ...
// CHECK: %[[Z:.*]] = linalg.fill {{.*}} -> tensor<16x16xf32>
// CHECK: %[[C:.*]] = linalg.matmul {soap.config = #soap.config<degrees = [1, 2, 1], devices = [0, 1]>} ins({{.*}} : tensor<16x4xf32>, tensor<4x16xf32>) outs(%[[Z]] : tensor<16x16xf32>)
// ... the middle one (reduction split) starts its own ...
// CHECK: %[[B:.*]] = linalg.matmul {soap.config = #soap.config<degrees = [2, 1, 1], devices = [0, 1]>} ins({{.*}} : tensor<16x4xf32>, tensor<4x16xf32>) outs(%[[Z]] : tensor<16x16xf32>)
// ... and the first accumulates into the last one's.
// CHECK: %[[A:.*]] = linalg.matmul {soap.config = #soap.config<degrees = [1, 2, 1], devices = [0, 1]>} ins({{.*}} : tensor<16x4xf32>, tensor<4x16xf32>) outs(%[[C]] : tensor<16x16xf32>)
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[A]], %[[B]] : tensor<16x16xf32>, tensor<16x16xf32>)
// CHECK: linalg.generic {{.*}} ins(%arg0, %[[SUM]] : tensor<16x16xf32>, tensor<16x16xf32>)
// CHECK: return

module attributes {soap.num_devices = 2 : i64} {
func.func @f(%x: tensor<4x16xf32>, %w: tensor<16x16xf32> {soap.param}) -> tensor<4x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %a = linalg.matmul {soap.config = #soap.config<degrees = [1, 2, 1], devices = [0, 1]>}
         ins(%x, %w : tensor<4x16xf32>, tensor<16x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %b = linalg.matmul {soap.config = #soap.config<degrees = [1, 1, 2], devices = [0, 1]>}
         ins(%a, %w : tensor<4x16xf32>, tensor<16x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %c = linalg.matmul {soap.config = #soap.config<degrees = [1, 2, 1], devices = [0, 1]>}
         ins(%b, %w : tensor<4x16xf32>, tensor<16x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %c : tensor<4x16xf32>
}
}

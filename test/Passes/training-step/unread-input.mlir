// An input the body never reads has no gradient: torch-mlir's batch norm
// counts the elements of its input with a reduction whose body adds 1.0
// (it reads the input for its shape alone). The training step builds no
// zeros for it, adds none to the input's other gradient, and so the
// partitioner moves none between devices (a searched ResNet-18 moved three
// such gradients of 0.2-0.8 MB by all_to_all in each step before).
// RUN: soap-opt %s --soap-training-step="loss=mse" | FileCheck %s

// Two ops make 4x3 tensors in the step: the input's one gradient (the
// sum's, a broadcast of the adjoint) and the update; before, also the
// count's zeros and their add.
// CHECK-LABEL: func.func @train_step
// CHECK-COUNT-2: } -> tensor<4x3xf32>
// CHECK-NOT: } -> tensor<4x3xf32>
// CHECK: return
#map = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @f(%x: tensor<4x3xf32> {soap.param}) -> tensor<3xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<3xf32>) -> tensor<3xf32>
  %sum = linalg.generic {indexing_maps = [#map, #row], iterator_types = ["reduction", "parallel"]}
      ins(%x : tensor<4x3xf32>) outs(%f : tensor<3xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.addf %a, %acc : f32
    linalg.yield %t : f32
  } -> tensor<3xf32>
  %count = linalg.generic {indexing_maps = [#map, #row], iterator_types = ["reduction", "parallel"]}
      ins(%x : tensor<4x3xf32>) outs(%f : tensor<3xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %one = arith.constant 1.0 : f32
    %t = arith.addf %one, %acc : f32
    linalg.yield %t : f32
  } -> tensor<3xf32>
  %mean = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%sum, %count : tensor<3xf32>, tensor<3xf32>) outs(%e : tensor<3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %q = arith.divf %a, %b : f32
    linalg.yield %q : f32
  } -> tensor<3xf32>
  return %mean : tensor<3xf32>
}

// params= marks arguments that carry weights (JAX passes them so) as
// parameters initialised from the runtime's seed as their uses say (a
// matmul operand from the fan-in of its contracted dimension, a bias
// zeros); a name they already have
// stays. Indices and ranges count the function's own arguments, before the
// lifted constants are put in front.
// RUN: soap-opt %s --soap-lift-params="params=0-1,3" | FileCheck %s
// RUN: soap-opt %s --soap-lift-params="params=3,0,1 min-elements=100" | FileCheck %s --check-prefix=ONLY

// CHECK-LABEL: func.func @loss(
// CHECK-SAME: %arg0: tensor<4xf32> {soap.init = dense<{{.*}}> : tensor<4xf32>, soap.name = "param.0", soap.param}
// CHECK-SAME: %arg1: tensor<3x4xf32> {soap.init = "fan-in:3", soap.name = "arg1", soap.param}
// CHECK-SAME: %arg2: tensor<4xf32> {soap.init = "zeros", soap.name = "b0", soap.param}
// CHECK-SAME: %arg3: tensor<2x3xf32>,
// CHECK-SAME: %arg4: tensor<4x4xf32> {soap.init = "fan-in:4", soap.name = "arg4", soap.param}
// ONLY-LABEL: func.func @loss(
// ONLY-SAME: %arg0: tensor<3x4xf32> {soap.init = "fan-in:3", soap.name = "arg0", soap.param}
// ONLY-SAME: %arg1: tensor<4xf32> {soap.init = "zeros", soap.name = "b0", soap.param}
// ONLY-SAME: %arg2: tensor<2x3xf32>,
// ONLY-SAME: %arg3: tensor<4x4xf32> {soap.init = "fan-in:4", soap.name = "arg3", soap.param}
#id = affine_map<(n, c) -> (n, c)>
#col = affine_map<(n, c) -> (c)>
func.func @loss(%w0: tensor<3x4xf32>, %b0: tensor<4xf32> {soap.name = "b0"},
                %x: tensor<2x3xf32>, %w1: tensor<4x4xf32>) -> tensor<2x4xf32> {
  %shift = arith.constant dense<[0.1, 0.2, 0.3, 0.4]> : tensor<4xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4xf32>) -> tensor<2x4xf32>
  %0 = linalg.matmul ins(%x, %w0 : tensor<2x3xf32>, tensor<3x4xf32>) outs(%z : tensor<2x4xf32>) -> tensor<2x4xf32>
  %1 = linalg.generic {indexing_maps = [#id, #col, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%0, %b0, %shift : tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<2x4xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    %t = arith.addf %s, %c : f32
    linalg.yield %t : f32
  } -> tensor<2x4xf32>
  %2 = linalg.matmul ins(%1, %w1 : tensor<2x4xf32>, tensor<4x4xf32>) outs(%z : tensor<2x4xf32>) -> tensor<2x4xf32>
  return %2 : tensor<2x4xf32>
}

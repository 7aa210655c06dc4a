// Structural splats are not weights: a splat used as a destination (outs),
// or read through the identity map of an elementwise generic beside a
// computed input of the same shape (JAX broadcasts the zero of max(x, 0)
// and SELU's scale to the activation's shape). The same splat read through
// a broadcast (a bias) is a weight.
// RUN: soap-opt %s --soap-lift-params=func=forward | FileCheck %s
// RUN: soap-opt %s --soap-lift-params=func=beside_parameter | FileCheck %s --check-prefix=PARAM

#id = affine_map<(n, c) -> (n, c)>
#col = affine_map<(n, c) -> (c)>

// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[BIAS:arg0]]: tensor<4xf32> {soap.init = dense<0.000000e+00> : tensor<4xf32>, soap.name = "param.0", soap.param}
// CHECK-SAME: %[[X:arg1]]: tensor<2x4xf32>, %[[W:arg2]]: tensor<4x4xf32>) -> tensor<2x4xf32> {
// CHECK-DAG: %[[ZEROS:.*]] = arith.constant dense<0.000000e+00> : tensor<2x4xf32>
// CHECK-DAG: %[[SCALE:.*]] = arith.constant dense<1.050000e+00> : tensor<2x4xf32>
// CHECK: linalg.matmul {{.*}} outs(%[[ZEROS]] :
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[BIAS]] :
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[ZEROS]] :
// CHECK: linalg.generic {{.*}} ins(%[[SCALE]], %{{.*}} :
func.func @forward(%x: tensor<2x4xf32>, %w: tensor<4x4xf32>) -> tensor<2x4xf32> {
  %zeros = arith.constant dense<0.0> : tensor<2x4xf32>
  %bias = arith.constant dense<0.0> : tensor<4xf32>
  %scale = arith.constant dense<1.05> : tensor<2x4xf32>
  %e = tensor.empty() : tensor<2x4xf32>
  %0 = linalg.matmul ins(%x, %w : tensor<2x4xf32>, tensor<4x4xf32>) outs(%zeros : tensor<2x4xf32>) -> tensor<2x4xf32>
  %1 = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%0, %bias : tensor<2x4xf32>, tensor<4xf32>) outs(%e : tensor<2x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<2x4xf32>
  %2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%1, %zeros : tensor<2x4xf32>, tensor<2x4xf32>) outs(%e : tensor<2x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.maximumf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<2x4xf32>
  %3 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%scale, %2 : tensor<2x4xf32>, tensor<2x4xf32>) outs(%e : tensor<2x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.mulf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<2x4xf32>
  return %3 : tensor<2x4xf32>
}

// A splat of the activation's shape added to a parameter (not a computed
// input) is a weight.
// PARAM-LABEL: func.func @beside_parameter(
// PARAM-SAME: %arg0: tensor<2x4xf32> {soap.init = dense<5.000000e-01> : tensor<2x4xf32>, soap.name = "param.0", soap.param}
// PARAM-SAME: %arg1: tensor<2x4xf32> {soap.param}
// PARAM-NOT: arith.constant dense
func.func @beside_parameter(%w: tensor<2x4xf32> {soap.param}) -> tensor<2x4xf32> {
  %c = arith.constant dense<0.5> : tensor<2x4xf32>
  %e = tensor.empty() : tensor<2x4xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%w, %c : tensor<2x4xf32>, tensor<2x4xf32>) outs(%e : tensor<2x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

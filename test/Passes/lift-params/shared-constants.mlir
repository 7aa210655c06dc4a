// CSE merges equal constants. A splat used by several ops is such an
// accident (the dense<0.0> bias of two unrelated layers): one parameter per
// op that uses it. A constant holding data used twice is a real tie (tied
// embeddings): one parameter for all its uses.
// RUN: soap-opt %s --soap-lift-params | FileCheck %s

#id = affine_map<(n, c) -> (n, c)>
#col = affine_map<(n, c) -> (c)>

// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[B1:arg0]]: tensor<4xf32> {soap.init = dense<0.000000e+00> : tensor<4xf32>, soap.name = "param.0", soap.param}
// CHECK-SAME: %[[B2:arg1]]: tensor<4xf32> {soap.init = dense<0.000000e+00> : tensor<4xf32>, soap.name = "param.1", soap.param}
// CHECK-SAME: %[[W:arg2]]: tensor<4x4xf32> {soap.init = dense<{{.*}}> : tensor<4x4xf32>, soap.name = "param.2", soap.param}
// CHECK-SAME: %[[X:arg3]]: tensor<2x4xf32>)
// CHECK-NOT: arith.constant dense
// CHECK: linalg.matmul ins(%[[X]], %[[W]] :
// CHECK: %[[H:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %[[B1]] :
// CHECK: linalg.matmul ins(%[[H]], %[[W]] :
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[B2]] :
func.func @forward(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %bias = arith.constant dense<0.0> : tensor<4xf32>
  %w = arith.constant dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0],
                             [1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]> : tensor<4x4xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4xf32>) -> tensor<2x4xf32>
  %0 = linalg.matmul ins(%x, %w : tensor<2x4xf32>, tensor<4x4xf32>) outs(%z : tensor<2x4xf32>) -> tensor<2x4xf32>
  %1 = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%0, %bias : tensor<2x4xf32>, tensor<4xf32>) outs(%e : tensor<2x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<2x4xf32>
  %2 = linalg.matmul ins(%1, %w : tensor<2x4xf32>, tensor<4x4xf32>) outs(%z : tensor<2x4xf32>) -> tensor<2x4xf32>
  %3 = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%2, %bias : tensor<2x4xf32>, tensor<4xf32>) outs(%e : tensor<2x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<2x4xf32>
  return %3 : tensor<2x4xf32>
}

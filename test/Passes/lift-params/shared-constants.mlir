// CSE merges equal constants. A splat used by several ops is such an
// accident (the dense<0.0> bias of two unrelated layers): one parameter per
// op that uses it. A constant holding data used twice is a real tie (tied
// embeddings): one parameter for all its uses.
// RUN: soap-opt %s --split-input-file --soap-lift-params | FileCheck %s

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

// -----

// CSE merges the broadcast of the splat too: torch-mlir broadcasts a zero
// bias into each convolution's init, and SqueezeNet's fire modules have
// several convolutions of one output shape, so one broadcast is the init of
// all of them. Each convolution gets its own copy of the broadcast and its
// own bias; the copies chain back to the constant (here through a
// reshape), so the chain is copied too.
#bias4 = affine_map<(n, c, h, w) -> (c)>
#id4 = affine_map<(n, c, h, w) -> (n, c, h, w)>

// CHECK-LABEL: func.func @convolutions(
// CHECK-SAME: %[[C1:arg0]]: tensor<3xf32> {soap.init = dense<0.000000e+00> : tensor<3xf32>, soap.name = "param.0", soap.param}
// CHECK-SAME: %[[C2:arg1]]: tensor<3xf32> {soap.init = dense<0.000000e+00> : tensor<3xf32>, soap.name = "param.1", soap.param}
// CHECK-SAME: %[[C3:arg2]]: tensor<3xf32> {soap.init = dense<0.000000e+00> : tensor<3xf32>, soap.name = "param.2", soap.param}
// CHECK-SAME: tensor<3x2x1x1xf32> {soap.init = "fan-in:2", soap.name = "param.3", soap.param}
// CHECK-SAME: %[[X:arg4]]: tensor<1x2x4x4xf32>)
// CHECK-DAG: %[[E1:.*]] = tensor.expand_shape %[[C1]]
// CHECK-DAG: %[[E2:.*]] = tensor.expand_shape %[[C2]]
// CHECK-DAG: %[[E3:.*]] = tensor.expand_shape %[[C3]]
// CHECK-DAG: %[[I1:.*]] = linalg.generic {{.*}} ins(%[[E1]] :
// CHECK-DAG: %[[I2:.*]] = linalg.generic {{.*}} ins(%[[E2]] :
// CHECK-DAG: %[[I3:.*]] = linalg.generic {{.*}} ins(%[[E3]] :
// CHECK-DAG: linalg.conv_2d_nchw_fchw {{.*}} outs(%[[I1]] :
// CHECK-DAG: linalg.conv_2d_nchw_fchw {{.*}} outs(%[[I2]] :
// CHECK-DAG: linalg.conv_2d_nchw_fchw {{.*}} outs(%[[I3]] :
func.func @convolutions(%x: tensor<1x2x4x4xf32>) -> (tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>) {
  %bias = arith.constant dense<0.0> : tensor<3xf32>
  %filter = arith.constant dense_resource<__elided__> : tensor<3x2x1x1xf32>
  %b = tensor.expand_shape %bias [[0, 1]] output_shape [3, 1] : tensor<3xf32> into tensor<3x1xf32>
  %e = tensor.empty() : tensor<1x3x4x4xf32>
  %init = linalg.generic {indexing_maps = [affine_map<(n, c, h, w) -> (c, 0)>, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%b : tensor<3x1xf32>) outs(%e : tensor<1x3x4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x3x4x4xf32>
  %0 = linalg.conv_2d_nchw_fchw ins(%x, %filter : tensor<1x2x4x4xf32>, tensor<3x2x1x1xf32>) outs(%init : tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  %1 = linalg.conv_2d_nchw_fchw ins(%x, %filter : tensor<1x2x4x4xf32>, tensor<3x2x1x1xf32>) outs(%init : tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  %2 = linalg.conv_2d_nchw_fchw ins(%x, %filter : tensor<1x2x4x4xf32>, tensor<3x2x1x1xf32>) outs(%init : tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  return %0, %1, %2 : tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>
}

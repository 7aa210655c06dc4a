// batch-norm=frozen keeps the statistics of a batch norm exported in
// evaluation form as constants, never parameters: exported values stay,
// elided ones become mean 0 and variance 1. Gamma and beta are lifted, one
// parameter per layer even where CSE merged them with the statistics; an
// elided gamma starts at ones and an elided beta at zeros (their uses: a
// factor and an addend).
// RUN: soap-opt %s --soap-lift-params="batch-norm=frozen" | FileCheck %s

#act = affine_map<(n, c, h, w) -> (n, c, h, w)>
#chan = affine_map<(n, c, h, w) -> (c)>

// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[G1:arg0]]: tensor<3xf32> {soap.init = dense<1.000000e+00> : tensor<3xf32>, soap.name = "param.0", soap.param}
// CHECK-SAME: %[[B1:arg1]]: tensor<3xf32> {soap.init = dense<0.000000e+00> : tensor<3xf32>, soap.name = "param.1", soap.param}
// CHECK-SAME: %[[G2:arg2]]: tensor<3xf32> {soap.init = "ones", soap.name = "param.2", soap.param}
// CHECK-SAME: %[[B2:arg3]]: tensor<3xf32> {soap.init = "zeros", soap.name = "param.3", soap.param}
// CHECK-SAME: %[[X:arg4]]: tensor<2x3x4x4xf32>)
// CHECK-NOT: linalg.fill
// CHECK: %[[M1:.*]] = arith.constant dense<0.000000e+00> : tensor<3xf32>
// CHECK: %[[V1:.*]] = arith.constant dense<1.000000e+00> : tensor<3xf32>
// CHECK: %[[BN1:.*]] = linalg.generic {{.*}} ins(%[[X]], %[[G1]], %[[B1]], %[[M1]], %[[V1]] :
// CHECK: %[[M2:.*]] = arith.constant dense<0.000000e+00> : tensor<3xf32>
// CHECK: %[[V2:.*]] = arith.constant dense<1.000000e+00> : tensor<3xf32>
// CHECK: linalg.generic {{.*}} ins(%[[BN1]], %[[G2]], %[[B2]], %[[M2]], %[[V2]] :
// CHECK-NOT: dense_resource
func.func @forward(%x: tensor<2x3x4x4xf32>) -> tensor<2x3x4x4xf32> {
  %ones = arith.constant dense<1.0> : tensor<3xf32>
  %zeros = arith.constant dense<0.0> : tensor<3xf32>
  %gamma = arith.constant dense_resource<__elided__> : tensor<3xf32>
  %beta = arith.constant dense_resource<__elided__> : tensor<3xf32>
  %mean = arith.constant dense_resource<__elided__> : tensor<3xf32>
  %var = arith.constant dense_resource<__elided__> : tensor<3xf32>
  %eps = arith.constant 1.0e-05 : f32
  %0 = linalg.generic {indexing_maps = [#act, #chan, #chan, #chan, #chan, #act],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %ones, %zeros, %zeros, %ones : tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
      outs(%x : tensor<2x3x4x4xf32>) {
  ^bb0(%in: f32, %g: f32, %b: f32, %m: f32, %v: f32, %out: f32):
    %ve = arith.addf %v, %eps : f32
    %r = math.rsqrt %ve : f32
    %d = arith.subf %in, %m : f32
    %n = arith.mulf %d, %r : f32
    %s = arith.mulf %n, %g : f32
    %t = arith.addf %s, %b : f32
    linalg.yield %t : f32
  } -> tensor<2x3x4x4xf32>
  %1 = linalg.generic {indexing_maps = [#act, #chan, #chan, #chan, #chan, #act],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%0, %gamma, %beta, %mean, %var : tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
      outs(%0 : tensor<2x3x4x4xf32>) {
  ^bb0(%in: f32, %g: f32, %b: f32, %m: f32, %v: f32, %out: f32):
    %ve = arith.addf %v, %eps : f32
    %r = math.rsqrt %ve : f32
    %d = arith.subf %in, %m : f32
    %n = arith.mulf %d, %r : f32
    %s = arith.mulf %n, %g : f32
    %t = arith.addf %s, %b : f32
    linalg.yield %t : f32
  } -> tensor<2x3x4x4xf32>
  return %1 : tensor<2x3x4x4xf32>
}

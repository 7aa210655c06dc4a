// Calls pass the lifted constant.
// CHECK-LABEL: func.func @lifted(%arg0: tensor<4xf32> {soap.init = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>, soap.name = "param.0", soap.param}, %arg1: tensor<4xf32>)
// RUN: soap-opt %s --soap-lift-params="func=lifted min-elements=4" | FileCheck %s
func.func @lifted(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %s = arith.addf %c, %x : tensor<4xf32>
  return %s : tensor<4xf32>
}
// CHECK: func.func @caller(%[[X:.*]]: tensor<4xf32>)
// CHECK: %[[C:.*]] = arith.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]>
// CHECK: call @lifted(%[[C]], %[[X]])
func.func @caller(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = call @lifted(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

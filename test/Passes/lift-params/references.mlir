// RUN: soap-opt %s -verify-diagnostics --soap-lift-params="func=lifted min-elements=4"

func.func @lifted(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  return %c : tensor<4xf32>
}

func.func @user() {
  // expected-error @+1 {{soap-lift-params: @lifted is referenced by 'func.constant', which cannot be given the lifted parameters}}
  %f = func.constant @lifted : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// RUN: soap-opt %s -split-input-file -verify-diagnostics --soap-lift-params="min-elements=4"

// Small constants stay: nothing to lift is a warning, not an error.
// expected-warning @+1 {{soap-lift-params: no float constant of at least 4 elements in @small; nothing lifted}}
func.func @small(%x: tensor<2xf32>) -> tensor<2xf32> {
  %c = arith.constant dense<[1.0, 2.0]> : tensor<2xf32>
  return %c : tensor<2xf32>
}

// -----

// expected-error @+1 {{soap-lift-params: the module has 2 functions and no single entry (@a, @b); name one with func=NAME}}
module {
  func.func @a() {
    return
  }
  func.func @b() {
    return
  }
}

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

// -----

// Elided integers are data the model cannot run without.
func.func @positions() -> tensor<1x512xi64> {
  // expected-error @+1 {{soap-lift-params: the exporter elided the values of this integer constant ('tensor<1x512xi64>' = dense_resource<__elided__>); integers are data, not weights to initialise. Re-export the model with its constants, or pass elided-integers=iota to fill it with 0, 1, 2, ... along its last dimension (position ids) or elided-integers=zeros}}
  %ids = arith.constant dense_resource<__elided__> : tensor<1x512xi64>
  return %ids : tensor<1x512xi64>
}

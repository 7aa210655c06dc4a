// --soap-lower-cpu and --soap-mark-train-step name what is wrong.
// RUN: soap-opt %s -split-input-file -verify-diagnostics --soap-lower-cpu

// expected-error @+1 {{no function @train_step with a body to compile}}
module {
  func.func @forward(%x: tensor<2xf32>) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
}

// -----

module {
  // expected-error @+1 {{no result has soap.role = "loss"}}
  func.func @train_step(%x: tensor<2xf32>) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
}

// -----

module {
  // expected-error @+1 {{argument 0 has type 'tensor<?xf32>'; the CPU lowering needs a statically shaped tensor}}
  func.func @train_step(%x: tensor<?xf32>) -> (tensor<f32> {soap.role = "loss"}) {
    %c = arith.constant dense<0.0> : tensor<f32>
    return %c : tensor<f32>
  }
}

// -----

module {
  // expected-error @+1 {{argument 0 has element type 'complex<f32>', which the runtime does not handle}}
  func.func @train_step(%x: tensor<2xcomplex<f32>>) -> (tensor<f32> {soap.role = "loss"}) {
    %c = arith.constant dense<0.0> : tensor<f32>
    return %c : tensor<f32>
  }
}

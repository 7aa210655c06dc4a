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

// -----

// Communication on an element type the MPI backend does not take.
module attributes {soap.num_devices = 2 : i64} {
  func.func @train_step(%x: tensor<2xbf16>) -> (tensor<f32> {soap.role = "loss"}, tensor<2xbf16>) {
    // expected-error @+1 {{element type 'bf16' is not one the MPI backend handles (f32, f64, i1, i8, i32, i64, index)}}
    %r = soap.all_reduce sum %x over [0, 1] : tensor<2xbf16>
    %c = arith.constant dense<0.0> : tensor<f32>
    return %c, %r : tensor<f32>, tensor<2xbf16>
  }
}

// -----

// A mean of booleans is no boolean.
module attributes {soap.num_devices = 2 : i64} {
  func.func @train_step(%x: tensor<2xi1>) -> (tensor<f32> {soap.role = "loss"}, tensor<2xi1>) {
    // expected-error @+1 {{a mean of i1 values has no i1 result}}
    %r = soap.all_reduce mean %x over [0, 1] : tensor<2xi1>
    %c = arith.constant dense<0.0> : tensor<f32>
    return %c, %r : tensor<f32>, tensor<2xi1>
  }
}

// RUN: soap-opt %s -split-input-file -verify-diagnostics --soap-set-batch=4

func.func @partial_slice(%x: tensor<2x3xf32>) -> tensor<1x3xf32> {
  // expected-error @+1 {{soap-set-batch: 'tensor.extract_slice' uses the batch dimension but it takes only part of it}}
  %s = tensor.extract_slice %x[0, 0] [1, 3] [1, 1] : tensor<2x3xf32> to tensor<1x3xf32>
  return %s : tensor<1x3xf32>
}

// -----

func.func @constant_batch(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{soap-set-batch: 'arith.constant' uses the batch dimension but a constant cannot change its shape}}
  %c = arith.constant dense<1.0> : tensor<2x3xf32>
  %e = tensor.empty() : tensor<2x3xf32>
  %y = linalg.add ins(%x, %c : tensor<2x3xf32>, tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// expected-error @+1 {{soap-set-batch: inputs disagree on the batch size (2 and 3 in argument 1); mark the batch dimension with {soap.batch_dim = k}}}
func.func @disagree(%x: tensor<2x3xf32>, %y: tensor<3x2xf32>) {
  return
}

// -----

// expected-error @+1 {{soap-set-batch: @params_only has no input argument with a batch dimension}}
func.func @params_only(%w: tensor<2x3xf32> {soap.param}) {
  return
}

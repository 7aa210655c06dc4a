// RUN: soap-opt %s -split-input-file -verify-diagnostics --soap-set-batch=4

func.func @partial_slice(%x: tensor<2x3xf32>) -> tensor<1x3xf32> {
  // expected-error @+1 {{soap-set-batch: 'tensor.extract_slice' uses the batch dimension but it takes only part of it}}
  %s = tensor.extract_slice %x[0, 0] [1, 3] [1, 1] : tensor<2x3xf32> to tensor<1x3xf32>
  return %s : tensor<1x3xf32>
}

// -----

func.func @constant_batch(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{soap-set-batch: 'arith.constant' uses the batch dimension but a constant that is not a splat cannot change its shape}}
  %c = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
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

// -----

// A weight that only looks batch-shaped (its leading dimension equals the
// batch): the parameter keeps its shape, so the batch cannot change.
func.func @param_batch(%w: tensor<2x3xf32> {soap.param, soap.name = "w"}, %x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %e = tensor.empty() : tensor<2x3xf32>
  // expected-error @+1 {{soap-set-batch: argument 0 ('w') is not an input (a parameter keeps its shape), but 'linalg.add' ties its dimension 0 to the batch; the model mixes samples with this weight, so the batch cannot change}}
  %y = linalg.add ins(%x, %w : tensor<2x3xf32>, tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// A mean over the batch written as a sum and a division by a constant
// (JAX's _mse: / 120.0 for 20 x 6): the constant is reported by name.
#all = affine_map<(d0, d1) -> (d0, d1)>
#none = affine_map<(d0, d1) -> ()>
#scalar = affine_map<() -> ()>
func.func @mean_over_batch(%x: tensor<2x3xf32>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  // expected-note @+1 {{the reduction over the batch}}
  %sum = linalg.generic {indexing_maps = [#all, #none], iterator_types = ["reduction", "reduction"]} ins(%x : tensor<2x3xf32>) outs(%init : tensor<f32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %count = arith.constant dense<6.0> : tensor<f32>
  %e2 = tensor.empty() : tensor<f32>
  // expected-warning @+1 {{soap-set-batch: divides by 6, which counts the 6 elements that 'linalg.generic' sums over the batch at batch 2; the constant is kept, so at batch 4 (12 elements) this is no longer a mean (rescale-means=1 rescales it)}}
  %mean = linalg.generic {indexing_maps = [#scalar, #scalar, #scalar], iterator_types = []} ins(%sum, %count : tensor<f32>, tensor<f32>) outs(%e2 : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %d = arith.divf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<f32>
  return %mean : tensor<f32>
}

// -----

// A per-sample mask read at index 0 by a loop that folds the batch with the
// heads (TOSA attention after lowering): only right at batch 1.
#all = affine_map<(d0, d1) -> (d0, d1)>
#first = affine_map<(d0, d1) -> (0, d1)>
func.func @folded_batch(%x: tensor<1x2x3xf32>, %mask: tensor<1x3xf32>) -> tensor<2x3xf32> {
  %heads = tensor.collapse_shape %x [[0, 1], [2]] : tensor<1x2x3xf32> into tensor<2x3xf32>
  %e = tensor.empty() : tensor<2x3xf32>
  // expected-error @+1 {{soap-set-batch: 'linalg.generic' uses the batch dimension but reads it at a fixed index, from a loop that is not the batch alone (the batch folded with another dimension)}}
  %y = linalg.generic {indexing_maps = [#all, #first, #all], iterator_types = ["parallel", "parallel"]} ins(%heads, %mask : tensor<2x3xf32>, tensor<1x3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

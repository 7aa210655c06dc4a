// RUN: soap-opt %s -split-input-file -verify-diagnostics --soap-training-step

// An op on the path from a parameter to the loss without a gradient rule.
func.func @loss(%w: tensor<4xf32> {soap.param}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%w : tensor<4xf32>) outs(%f : tensor<f32>) {
  ^bb0(%x: f32, %o: f32):
    // expected-error @+1 {{'math.atan' op cannot be differentiated: no derivative rule for it}}
    %a = math.atan %x : f32
    %s = arith.addf %o, %a : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// A product reduction has no rule.
func.func @loss(%w: tensor<4xf32> {soap.param}) -> tensor<f32> {
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%one : f32) outs(%e : tensor<f32>) -> tensor<f32>
  // expected-error @+1 {{'linalg.generic' op cannot be differentiated: its reduction is not a sum, maximum or minimum of the output and one value}}
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%w : tensor<4xf32>) outs(%f : tensor<f32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.mulf %o, %x : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// A window read through a non-projected map (a convolution written as a
// generic) is reported at the op.
func.func @loss(%w: tensor<6xf32> {soap.param}, %k: tensor<3xf32>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e4 = tensor.empty() : tensor<4xf32>
  %f4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{'linalg.generic' op cannot be differentiated: operand 0 is read through (d0, d1) -> (d0 + d1), which is not a projection of the loops}}
  %c = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0 + d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%w, %k : tensor<6xf32>, tensor<3xf32>) outs(%f4 : tensor<4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%c : tensor<4xf32>) outs(%f : tensor<f32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %o, %x : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// An op outside linalg/tensor on the path.
func.func private @external(tensor<4xf32>) -> tensor<f32>
func.func @loss(%w: tensor<4xf32> {soap.param}) -> tensor<f32> {
  // expected-error @+1 {{'func.call' op cannot be differentiated: no gradient rule for it}}
  %r = func.call @external(%w) : (tensor<4xf32>) -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// expected-error @+1 {{no loss function: no function has arguments marked {soap.param}}}
module {
  func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}

// -----

module {
  // expected-error @+1 {{the function returns 'tensor<4xf32>', not a scalar loss; append one with loss=softmax-xent or loss=mse}}
  func.func @forward(%x: tensor<4xf32> {soap.param}) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}

// -----

// expected-error @+1 {{more than one function has {soap.param} arguments ('a', 'b'); choose one with func=}}
module {
  func.func @a(%x: tensor<f32> {soap.param}) -> tensor<f32> {
    return %x : tensor<f32>
  }
  func.func @b(%x: tensor<f32> {soap.param}) -> tensor<f32> {
    return %x : tensor<f32>
  }
}

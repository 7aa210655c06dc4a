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

// A reduction in which the output's old value enters other than linearly
// (a sum), or as a factor, maximum or minimum of an independent value.
func.func @loss(%w: tensor<4xf32> {soap.param}) -> tensor<f32> {
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%one : f32) outs(%e : tensor<f32>) -> tensor<f32>
  // expected-error @+1 {{'linalg.generic' op cannot be differentiated: its reduction is not a sum, product, maximum or minimum of the output and a value that does not depend on it}}
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%w : tensor<4xf32>) outs(%f : tensor<f32>) {
  ^bb0(%x: f32, %o: f32):
    %sq = arith.mulf %o, %o : f32
    %s = arith.addf %sq, %x : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// A product whose initial value is a parameter.
func.func @loss(%w: tensor<4xf32> {soap.param}, %init: tensor<f32> {soap.param}) -> tensor<f32> {
  // expected-error @+1 {{'linalg.generic' op cannot be differentiated: the initial value of its min/max/product reduction depends on the parameters}}
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%w : tensor<4xf32>) outs(%init : tensor<f32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.mulf %o, %x : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// An index expression that is neither a projection nor a window.
func.func @loss(%w: tensor<6xf32> {soap.param}, %k: tensor<3xf32>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e4 = tensor.empty() : tensor<4xf32>
  %f4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{'linalg.generic' op cannot be differentiated: operand 0 is read through (d0, d1) -> (d0 + d1 floordiv 2), which is neither a projection of the loops nor a window (s * o + d * k) over them}}
  %c = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0 + d1 floordiv 2)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
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

// An op without a derivative inside a branch of an scf.if is refused by
// name (never a silent zero).
func.func @loss(%w: tensor<4xf32> {soap.param}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%w : tensor<4xf32>) outs(%f : tensor<f32>) {
  ^bb0(%x: f32, %o: f32):
    %c = arith.cmpf ogt, %x, %zero : f32
    %v = scf.if %c -> f32 {
      // expected-error @+1 {{'math.atan' op cannot be differentiated: no derivative rule for it}}
      %a = math.atan %x : f32
      scf.yield %a : f32
    } else {
      scf.yield %x : f32
    }
    %s = arith.addf %o, %v : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// A table captured by a body and read other than by tensor.extract.
func.func @loss(%t: tensor<4xf32> {soap.param}, %x: tensor<4xf32>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  // expected-error @+1 {{'linalg.generic' op cannot be differentiated: its body uses a differentiated value defined outside it in 'tensor.dim' (only tensor.extract of a tensor is differentiated: a gather)}}
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%x : tensor<4xf32>) outs(%f : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %c0 = arith.constant 0 : index
    %d = tensor.dim %t, %c0 : tensor<4xf32>
    %i = arith.index_cast %d : index to i64
    %fi = arith.sitofp %i : i64 to f32
    %m = arith.mulf %a, %fi : f32
    %s = arith.addf %o, %m : f32
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

// A strided depthwise convolution split along the batch, its input scaled
// per channel on the same split, its output read split along the columns
// by the loss: the input gradient (the adjoint spread, read through the
// window) follows the convolution's batch split.
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#chan = affine_map<(d0, d1, d2, d3) -> (d1)>
#all = affine_map<(d0, d1, d2, d3) -> ()>
func.func @loss(%s: tensor<4xf32> {soap.param, soap.name = "scale"},
                %w: tensor<4x3x3xf32> {soap.param, soap.name = "w"},
                %x: tensor<4x4x9x9xf32> {soap.name = "input"}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4x9x9xf32>
  %h = linalg.generic {indexing_maps = [#map, #chan, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %s : tensor<4x4x9x9xf32>, tensor<4xf32>) outs(%e : tensor<4x4x9x9xf32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1, 1, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<4x4x9x9xf32>
  %e1 = tensor.empty() : tensor<4x4x4x4xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x4x4x4xf32>) -> tensor<4x4x4x4xf32>
  %y = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>,
      soap.config = #soap.config<degrees = [2, 1, 1, 1, 1, 1], devices = [0, 1]>}
      ins(%h, %w : tensor<4x4x9x9xf32>, tensor<4x3x3xf32>) outs(%f1 : tensor<4x4x4x4xf32>) -> tensor<4x4x4x4xf32>
  %e0 = tensor.empty() : tensor<f32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#map, #all], iterator_types = ["reduction", "reduction", "reduction", "reduction"]}
      ins(%y : tensor<4x4x4x4xf32>) outs(%f0 : tensor<f32>)
      attrs = {soap.config = #soap.config<degrees = [1, 1, 1, 2], devices = [0, 1]>} {
  ^bb0(%v: f32, %acc: f32):
    %q = arith.mulf %v, %v : f32
    %t = arith.addf %acc, %q : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}

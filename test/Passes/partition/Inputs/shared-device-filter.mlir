// Input of shared-device-filter.test: a convolution whose two tasks
// (output channel halves) run on device 1, and a loss summed on device 0.
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#all = affine_map<(d0, d1, d2, d3) -> ()>
func.func @loss(%x: tensor<2x3x6x6xf32>, %w: tensor<4x3x3x3xf32> {soap.param, soap.init = "fan-in"}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4x4x4xf32>
  %f = linalg.fill {soap.config = #soap.config<degrees = [1, 2, 1, 1], devices = [1, 1]>} ins(%zero : f32) outs(%e : tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>, soap.config = #soap.config<degrees = [1, 2, 1, 1, 1, 1, 1], devices = [1, 1]>}
      ins(%x, %w : tensor<2x3x6x6xf32>, tensor<4x3x3x3xf32>) outs(%f : tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32>
  %e0 = tensor.empty() : tensor<f32>
  %f0 = linalg.fill {soap.config = #soap.config<degrees = [], devices = [0]>} ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [#id, #all], iterator_types = ["reduction", "reduction", "reduction", "reduction"]}
      ins(%y : tensor<2x4x4x4xf32>) outs(%f0 : tensor<f32>) attrs = {soap.config = #soap.config<degrees = [1, 1, 1, 1], devices = [0]>} {
  ^bb0(%a: f32, %o: f32):
    %sq = arith.mulf %a, %a : f32
    %r = arith.addf %o, %sq : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  return %s : tensor<f32>
}

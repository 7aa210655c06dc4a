// A replicated convolution of stride 2 with a 1x1 filter reads rows and
// columns 0, 2 and 4 of its 6x6 input: a box of 5x5, which is all its
// input moves. Its input is split along the batch.
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#all = affine_map<(d0, d1, d2, d3) -> ()>
func.func @loss(%w: tensor<3x2x1x1xf32> {soap.param, soap.name = "w"},
                %x: tensor<4x2x6x6xf32> {soap.name = "input"}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<4x2x6x6xf32>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<4x2x6x6xf32>) outs(%e0 : tensor<4x2x6x6xf32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1, 1, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %o: f32):
    %t = math.tanh %a : f32
    linalg.yield %t : f32
  } -> tensor<4x2x6x6xf32>
  %e1 = tensor.empty() : tensor<4x3x3x3xf32>
  %f1 = linalg.fill {soap.replicated} ins(%zero : f32) outs(%e1 : tensor<4x3x3x3xf32>) -> tensor<4x3x3x3xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>, soap.replicated}
      ins(%r, %w : tensor<4x2x6x6xf32>, tensor<3x2x1x1xf32>) outs(%f1 : tensor<4x3x3x3xf32>) -> tensor<4x3x3x3xf32>
  %e2 = tensor.empty() : tensor<f32>
  %f2 = linalg.fill {soap.replicated} ins(%zero : f32) outs(%e2 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#map, #all], iterator_types = ["reduction", "reduction", "reduction", "reduction"]}
      ins(%c : tensor<4x3x3x3xf32>) outs(%f2 : tensor<f32>) attrs = {soap.replicated} {
  ^bb0(%a: f32, %acc: f32):
    %p = arith.mulf %a, %a : f32
    %t = arith.addf %acc, %p : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}

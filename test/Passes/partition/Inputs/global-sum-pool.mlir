// A global sum pooling split along the batch whose result one device
// scales (MobileNetV3's squeeze-excitation: the pooled values go to device
// 1 alone, and their gradient comes back from there).
#map4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#all4 = affine_map<(d0, d1, d2, d3) -> ()>
func.func @loss(%w: tensor<4x2x4x4xf32> {soap.param, soap.name = "w"}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<4x2x4x4xf32>
  %sq = linalg.generic {indexing_maps = [#map4, #map4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%w : tensor<4x2x4x4xf32>) outs(%e1 : tensor<4x2x4x4xf32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1, 1, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %o: f32):
    %y = arith.mulf %a, %a : f32
    linalg.yield %y : f32
  } -> tensor<4x2x4x4xf32>
  %e2 = tensor.empty() : tensor<4x2x1x1xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4x2x1x1xf32>) -> tensor<4x2x1x1xf32>
  %win = tensor.empty() : tensor<4x4xf32>
  %pool = linalg.pooling_nchw_sum {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>,
      soap.config = #soap.config<degrees = [2, 1, 1, 1, 1, 1], devices = [0, 1]>}
      ins(%sq, %win : tensor<4x2x4x4xf32>, tensor<4x4xf32>) outs(%f2 : tensor<4x2x1x1xf32>) -> tensor<4x2x1x1xf32>
  %e3 = tensor.empty() : tensor<f32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#map4, #all4], iterator_types = ["reduction", "reduction", "reduction", "reduction"]}
      ins(%pool : tensor<4x2x1x1xf32>) outs(%f3 : tensor<f32>)
      attrs = {soap.config = #soap.config<degrees = [1, 1, 1, 1], devices = [1]>} {
  ^bb0(%a: f32, %acc: f32):
    %q = arith.mulf %a, %a : f32
    %t = arith.addf %acc, %q : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}

#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d1)>
#map2 = affine_map<(d0, d1) -> ()>
func.func @loss(%w: tensor<16x8xf32> {soap.init = "fan-in:16", soap.name = "w", soap.param},
                %bias: tensor<8xf32> {soap.init = "fan-in:8", soap.name = "bias", soap.param},
                %x: tensor<8x16xf32> {soap.name = "input"}) -> tensor<f32> {
  %zero = arith.constant 0.000000e+00 : f32
  %e0 = tensor.empty() : tensor<8x8xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %y = linalg.matmul {soap.config = #soap.config<degrees = [2, 1, 2], devices = [1, 0, 1, 3]>}
      ins(%x, %w : tensor<8x16xf32>, tensor<16x8xf32>) outs(%f0 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %e1 = tensor.empty() : tensor<8x8xf32>
  %z = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]}
      ins(%y, %bias : tensor<8x8xf32>, tensor<8xf32>) outs(%e1 : tensor<8x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [1, 2], devices = [2, 3]>} {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<8x8xf32>
  %e2 = tensor.empty() : tensor<f32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["reduction", "reduction"]}
      ins(%z : tensor<8x8xf32>) outs(%f2 : tensor<f32>)
      attrs = {soap.config = #soap.config<degrees = [1, 1], devices = [2]>} {
  ^bb0(%a: f32, %acc: f32):
    %sq = arith.mulf %a, %a : f32
    %s = arith.addf %acc, %sq : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}

#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d1)>
#map2 = affine_map<(d0, d1, d2, d3) -> ()>
func.func @loss(%scale: tensor<2xf32> {soap.init = "fan-in:2", soap.name = "scale", soap.param},
                %x: tensor<4x2x5x5xf32> {soap.name = "input"}) -> tensor<f32> {
  %zero = arith.constant 0.000000e+00 : f32
  %e0 = tensor.empty() : tensor<4x2x5x5xf32>
  %y = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %scale : tensor<4x2x5x5xf32>, tensor<2xf32>) outs(%e0 : tensor<4x2x5x5xf32>)
      attrs = {soap.config = #soap.config<degrees = [1, 1, 1, 1], devices = [0]>} {
  ^bb0(%a: f32, %s: f32, %out: f32):
    %m = arith.mulf %a, %s : f32
    linalg.yield %m : f32
  } -> tensor<4x2x5x5xf32>
  %p = tensor.pad %y low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } {soap.config = #soap.config<degrees = [2, 1, 1, 1], devices = [0, 1]>} : tensor<4x2x5x5xf32> to tensor<4x2x7x7xf32>
  %e1 = tensor.empty() : tensor<f32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["reduction", "reduction", "reduction", "reduction"]}
      ins(%p : tensor<4x2x7x7xf32>) outs(%f1 : tensor<f32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1, 1, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %acc: f32):
    %sq = arith.mulf %a, %a : f32
    %s = arith.addf %acc, %sq : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}

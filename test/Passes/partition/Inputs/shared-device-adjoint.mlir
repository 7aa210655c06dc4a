#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
#map2 = affine_map<(d0) -> (d0)>
#map3 = affine_map<(d0) -> ()>
func.func @loss(%w: tensor<16x4xf32> {soap.init = "fan-in:16", soap.name = "w", soap.param},
                %x: tensor<8x16xf32> {soap.name = "input"}) -> tensor<f32> {
  %zero = arith.constant 0.000000e+00 : f32
  %e0 = tensor.empty() : tensor<8x4xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<8x4xf32>) -> tensor<8x4xf32>
  %y = linalg.matmul {soap.config = #soap.config<degrees = [1, 2, 1], devices = [0, 2]>}
      ins(%x, %w : tensor<8x16xf32>, tensor<16x4xf32>) outs(%f0 : tensor<8x4xf32>) -> tensor<8x4xf32>
  %e1 = tensor.empty() : tensor<8xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8xf32>) -> tensor<8xf32>
  %a = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]}
      ins(%y : tensor<8x4xf32>) outs(%f1 : tensor<8xf32>)
      attrs = {soap.config = #soap.config<degrees = [4, 1], devices = [3, 0, 3, 1]>} {
  ^bb0(%v: f32, %acc: f32):
    %sq = arith.mulf %v, %v : f32
    %s = arith.addf %acc, %sq : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %b = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]}
      ins(%y : tensor<8x4xf32>) outs(%f1 : tensor<8xf32>)
      attrs = {soap.config = #soap.config<degrees = [4, 1], devices = [0, 1, 2, 3]>} {
  ^bb0(%v: f32, %acc: f32):
    %sq = arith.mulf %v, %v : f32
    %cube = arith.mulf %sq, %v : f32
    %s = arith.addf %acc, %cube : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %e2 = tensor.empty() : tensor<f32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#map2, #map2, #map3], iterator_types = ["reduction"]}
      ins(%a, %b : tensor<8xf32>, tensor<8xf32>) outs(%f2 : tensor<f32>)
      attrs = {soap.config = #soap.config<degrees = [1], devices = [1]>} {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %s = arith.addf %p, %q : f32
    %t = arith.addf %acc, %s : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}

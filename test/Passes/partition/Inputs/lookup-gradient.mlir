#ids = affine_map<(d0, d1) -> (d0)>
#map = affine_map<(d0, d1) -> (d0, d1)>
#all = affine_map<(d0, d1) -> ()>
func.func @loss(%table: tensor<10x4xf32> {soap.init = "fan-in:4", soap.name = "table", soap.param},
                %ids: tensor<8xi64> {soap.name = "ids", soap.range = 10 : i64}) -> tensor<f32> {
  %zero = arith.constant 0.000000e+00 : f32
  %e0 = tensor.empty() : tensor<8x4xf32>
  %rows = linalg.generic {indexing_maps = [#ids, #map], iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<8xi64>) outs(%e0 : tensor<8x4xf32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1, 1], devices = [1, 0]>} {
  ^bb0(%id: i64, %out: f32):
    %row = arith.index_cast %id : i64 to index
    %col = linalg.index 1 : index
    %v = tensor.extract %table[%row, %col] : tensor<10x4xf32>
    linalg.yield %v : f32
  } -> tensor<8x4xf32>
  %e1 = tensor.empty() : tensor<8x4xf32>
  %sq = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%rows : tensor<8x4xf32>) outs(%e1 : tensor<8x4xf32>)
      attrs = {soap.config = #soap.config<degrees = [1, 2], devices = [0, 1]>} {
  ^bb0(%a: f32, %out: f32):
    %s = arith.mulf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  %e2 = tensor.empty() : tensor<f32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#map, #all], iterator_types = ["reduction", "reduction"]}
      ins(%sq : tensor<8x4xf32>) outs(%f2 : tensor<f32>)
      attrs = {soap.config = #soap.config<degrees = [1, 1], devices = [0]>} {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}

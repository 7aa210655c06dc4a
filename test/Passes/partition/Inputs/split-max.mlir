// A softmax-like chain whose max is split along its reduction loop on
// [0, 1] and read by an op split along the rows: the max's partial results
// are needed by that reader (its rows) and by the max's own gradient (its
// input compared with the complete max).
#map = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#all = affine_map<(d0, d1) -> ()>
func.func @loss(%w: tensor<6x8xf32> {soap.param, soap.name = "w"},
                %x: tensor<4x6xf32> {soap.name = "input"}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e1 = tensor.empty() : tensor<4x8xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %h = linalg.matmul {soap.config = #soap.config<degrees = [2, 1, 1], devices = [0, 1]>}
      ins(%x, %w : tensor<4x6xf32>, tensor<6x8xf32>) outs(%f1 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %e2 = tensor.empty() : tensor<4xf32>
  %f2 = linalg.fill ins(%ninf : f32) outs(%e2 : tensor<4xf32>) -> tensor<4xf32>
  %m = linalg.generic {indexing_maps = [#map, #row], iterator_types = ["parallel", "reduction"]}
      ins(%h : tensor<4x8xf32>) outs(%f2 : tensor<4xf32>)
      attrs = {soap.config = #soap.config<degrees = [1, 2], devices = [0, 1]>} {
  ^bb0(%a: f32, %acc: f32):
    %y = arith.maximumf %a, %acc : f32
    linalg.yield %y : f32
  } -> tensor<4xf32>
  %s = linalg.generic {indexing_maps = [#map, #row, #map], iterator_types = ["parallel", "parallel"]}
      ins(%h, %m : tensor<4x8xf32>, tensor<4xf32>) outs(%e1 : tensor<4x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %y = math.exp %d : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %e3 = tensor.empty() : tensor<f32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#map, #all], iterator_types = ["reduction", "reduction"]}
      ins(%s : tensor<4x8xf32>) outs(%f3 : tensor<f32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.addf %acc, %a : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}

// A ReLU split along the rows on [0, 1], scaled by 1.0 (torch's alpha=1)
// on device 0 alone, read by a product that splits its reduction on
// [0, 1]. Canonicalization folds x * 1.0 to x and erases the copy, so the
// product reads the ReLU's blocks; the simulator's op graph has no node
// for it either (soap::identityCopySources sees through the fold).
#map = affine_map<(d0, d1) -> (d0, d1)>
#all = affine_map<(d0, d1) -> ()>
func.func @loss(%w: tensor<8x6xf32> {soap.param, soap.name = "w"},
                %x: tensor<4x8xf32> {soap.name = "input"}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e1 : tensor<4x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %o: f32):
    %y = arith.maximumf %a, %zero : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %s = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%r : tensor<4x8xf32>) outs(%e1 : tensor<4x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [1, 1], devices = [0]>} {
  ^bb0(%a: f32, %o: f32):
    %one = arith.constant 1.0 : f32
    %y = arith.mulf %a, %one : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %e2 = tensor.empty() : tensor<4x6xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4x6xf32>) -> tensor<4x6xf32>
  %h = linalg.matmul {soap.config = #soap.config<degrees = [1, 1, 2], devices = [0, 1]>}
      ins(%s, %w : tensor<4x8xf32>, tensor<8x6xf32>) outs(%f2 : tensor<4x6xf32>) -> tensor<4x6xf32>
  %e3 = tensor.empty() : tensor<f32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#map, #all], iterator_types = ["reduction", "reduction"]}
      ins(%h : tensor<4x6xf32>) outs(%f3 : tensor<f32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.mulf %a, %a : f32
    %u = arith.addf %acc, %t : f32
    linalg.yield %u : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}

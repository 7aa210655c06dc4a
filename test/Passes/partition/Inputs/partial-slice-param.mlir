// A slice of a parameter split along its rows that leaves rows no one
// reads (BERT's position embeddings: 32 of 64 positions).
#map3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#pos = affine_map<(d0, d1, d2) -> (d1, d2)>
#all3 = affine_map<(d0, d1, d2) -> ()>
func.func @loss(%p: tensor<8x3xf32> {soap.param, soap.name = "positions"},
                %x: tensor<4x4x3xf32> {soap.name = "input"}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %slice = tensor.extract_slice %p[0, 0] [4, 3] [1, 1]
      {soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>} : tensor<8x3xf32> to tensor<4x3xf32>
  %e4 = tensor.empty() : tensor<4x4x3xf32>
  %emb = linalg.generic {indexing_maps = [#map3, #pos, #map3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %slice : tensor<4x4x3xf32>, tensor<4x3xf32>) outs(%e4 : tensor<4x4x3xf32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %y = arith.addf %a, %b : f32
    %q = arith.mulf %y, %y : f32
    linalg.yield %q : f32
  } -> tensor<4x4x3xf32>
  %e3 = tensor.empty() : tensor<f32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#map3, #all3], iterator_types = ["reduction", "reduction", "reduction"]}
      ins(%emb : tensor<4x4x3xf32>) outs(%f3 : tensor<f32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.addf %acc, %a : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}

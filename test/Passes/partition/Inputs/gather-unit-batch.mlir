// A lookup with a batch of one (a position embedding: table[ids[0, s], h]),
// split along its width over two devices. The training step's scatter-add
// nest has no loop for the batch of one (canonicalization would inline
// it), and the gather's config over the nest's loops goes on its
// outermost loop (soap.scatter_config).
#ids = affine_map<(d0, d1, d2) -> (d0, d1)>
#rows = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map = affine_map<(d0, d1) -> (d0, d1)>
#all = affine_map<(d0, d1) -> ()>
func.func @loss(%table: tensor<8x4xf32> {soap.param, soap.name = "table", soap.init = "fan-in:1"},
                   %weight: tensor<4x5xf32> {soap.param, soap.name = "weight", soap.init = "fan-in:4"},
                   %ids: tensor<1x6xi64> {soap.name = "ids", soap.range = 8 : i64}) -> tensor<f32> {
  %e = tensor.empty() : tensor<1x6x4xf32>
  %rows = linalg.generic {indexing_maps = [#ids, #rows], iterator_types = ["parallel", "parallel", "parallel"],
                          soap.config = #soap.config<degrees = [1, 1, 2, 1], devices = [0, 1]>}
      ins(%ids : tensor<1x6xi64>) outs(%e : tensor<1x6x4xf32>) {
  ^bb0(%id: i64, %out: f32):
    %r = arith.index_cast %id : i64 to index
    %c = linalg.index 2 : index
    %v = tensor.extract %table[%r, %c] : tensor<8x4xf32>
    linalg.yield %v : f32
  } -> tensor<1x6x4xf32>
  %flat = tensor.collapse_shape %rows [[0, 1], [2]] {soap.config = #soap.config<degrees = [1, 2, 1], devices = [0, 1]>}
      : tensor<1x6x4xf32> into tensor<6x4xf32>
  %zero = arith.constant 0.0 : f32
  %o = tensor.empty() : tensor<6x5xf32>
  %f = linalg.fill ins(%zero : f32) outs(%o : tensor<6x5xf32>) -> tensor<6x5xf32>
  %logits = linalg.matmul {soap.config = #soap.config<degrees = [2, 1, 1], devices = [0, 1]>}
      ins(%flat, %weight : tensor<6x4xf32>, tensor<4x5xf32>) outs(%f : tensor<6x5xf32>) -> tensor<6x5xf32>
  %e0 = tensor.empty() : tensor<f32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#map, #all], iterator_types = ["reduction", "reduction"]}
      ins(%logits : tensor<6x5xf32>) outs(%f0 : tensor<f32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %acc: f32):
    %t = math.tanh %a : f32
    %s = arith.addf %acc, %t : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}

// An embedding lookup as torch-mlir writes it (a generic reading the table
// with tensor.extract at the ids), its rows flattened, then a linear layer:
// batch 4, 2 ids a sample, vocabulary 64, width 8, 3 classes. The table
// (2 KB) is larger than what its gradient reads (the lookup's 256-byte
// output gradient and the 64 bytes of ids).
#ids = affine_map<(d0, d1, d2) -> (d0, d1)>
#rows = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @forward(%table: tensor<64x8xf32> {soap.param, soap.name = "table", soap.init = "fan-in:1"},
                   %weight: tensor<16x3xf32> {soap.param, soap.name = "weight", soap.init = "fan-in:16"},
                   %ids: tensor<4x2xi64> {soap.name = "ids", soap.range = 64 : i64}) -> tensor<4x3xf32> {
  %e = tensor.empty() : tensor<4x2x8xf32>
  %rows = linalg.generic {indexing_maps = [#ids, #rows], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ids : tensor<4x2xi64>) outs(%e : tensor<4x2x8xf32>) {
  ^bb0(%id: i64, %out: f32):
    %r = arith.index_cast %id : i64 to index
    %c = linalg.index 2 : index
    %v = tensor.extract %table[%r, %c] : tensor<64x8xf32>
    linalg.yield %v : f32
  } -> tensor<4x2x8xf32>
  %flat = tensor.collapse_shape %rows [[0], [1, 2]] : tensor<4x2x8xf32> into tensor<4x16xf32>
  %zero = arith.constant 0.0 : f32
  %o = tensor.empty() : tensor<4x3xf32>
  %f = linalg.fill ins(%zero : f32) outs(%o : tensor<4x3xf32>) -> tensor<4x3xf32>
  %logits = linalg.matmul ins(%flat, %weight : tensor<4x16xf32>, tensor<16x3xf32>) outs(%f : tensor<4x3xf32>) -> tensor<4x3xf32>
  return %logits : tensor<4x3xf32>
}

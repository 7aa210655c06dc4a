// gather-model.mlir with a vocabulary of 8 and the lookup's #soap.config
// left to the test: sed fills in DEGREES (over d0: batch, d1: width, v: the
// table's rows), DEVICES and NDEV.
#ids = affine_map<(d0, d1) -> (d0)>
#rows = affine_map<(d0, d1) -> (d0, d1)>
module attributes {soap.num_devices = NDEV : i64} {
func.func @forward(%table: tensor<8x4xf32> {soap.param, soap.name = "table", soap.init = "fan-in:1"},
                   %weight: tensor<4x5xf32> {soap.param, soap.name = "weight", soap.init = "fan-in:4"},
                   %ids: tensor<4xi64> {soap.name = "ids", soap.range = 8 : i64}) -> tensor<4x5xf32> {
  %e = tensor.empty() : tensor<4x4xf32>
  %rows = linalg.generic {indexing_maps = [#ids, #rows], iterator_types = ["parallel", "parallel"],
                          soap.config = #soap.config<degrees = [DEGREES], devices = [DEVICES]>}
      ins(%ids : tensor<4xi64>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%id: i64, %out: f32):
    %r = arith.index_cast %id : i64 to index
    %c = linalg.index 1 : index
    %v = tensor.extract %table[%r, %c] : tensor<8x4xf32>
    linalg.yield %v : f32
  } -> tensor<4x4xf32>
  %zero = arith.constant 0.0 : f32
  %o = tensor.empty() : tensor<4x5xf32>
  %f = linalg.fill ins(%zero : f32) outs(%o : tensor<4x5xf32>) -> tensor<4x5xf32>
  %logits = linalg.matmul ins(%rows, %weight : tensor<4x4xf32>, tensor<4x5xf32>) outs(%f : tensor<4x5xf32>) -> tensor<4x5xf32>
  return %logits : tensor<4x5xf32>
}
}

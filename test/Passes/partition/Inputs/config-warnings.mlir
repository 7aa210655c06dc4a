// A product over a split reduction loop (no sum, max or min to combine the
// parts) and a pad of a split tensor.
module attributes {soap.num_devices = 2 : i64} {
  func.func @train_step(%x: tensor<4x6xf32> {soap.role = "input"}) -> (tensor<4xf32> {soap.role = "loss"}, tensor<6x6xf32>) {
    %one = arith.constant 1.0 : f32
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4xf32>
    %init = linalg.fill ins(%one : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %prod = linalg.generic {
        indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
        iterator_types = ["parallel", "reduction"]}
        ins(%x : tensor<4x6xf32>) outs(%init : tensor<4xf32>)
        attrs = {soap.config = #soap.config<degrees = [1, 2], devices = [0, 1]>} {
    ^bb0(%a: f32, %acc: f32):
      %m = arith.mulf %a, %acc : f32
      linalg.yield %m : f32
    } -> tensor<4xf32>
    %e2 = tensor.empty() : tensor<4x6xf32>
    %twice = linalg.generic {
        indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
        iterator_types = ["parallel", "parallel"]}
        ins(%x : tensor<4x6xf32>) outs(%e2 : tensor<4x6xf32>)
        attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>} {
    ^bb0(%a: f32, %o: f32):
      %s = arith.addf %a, %a : f32
      linalg.yield %s : f32
    } -> tensor<4x6xf32>
    %padded = tensor.pad %twice low[1, 0] high[1, 0] {
    ^bb0(%i: index, %j: index):
      tensor.yield %zero : f32
    } : tensor<4x6xf32> to tensor<6x6xf32>
    return %prod, %padded : tensor<4xf32>, tensor<6x6xf32>
  }
}

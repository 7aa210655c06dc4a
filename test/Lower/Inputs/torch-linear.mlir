// A linear layer as torch-mlir writes it: the weight [out, in] transposed by
// a linalg.generic copy, then a matmul, then the bias.
#wt = affine_map<(d0, d1) -> (d1, d0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @forward(%x: tensor<4x6xf32>) -> tensor<4x3xf32> {
  %w = arith.constant dense_resource<__elided__> : tensor<3x6xf32>
  %b = arith.constant dense<0.0> : tensor<3xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6x3xf32>
  // The transposing copy (line 12).
  %t = linalg.generic {indexing_maps = [#wt, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<3x6xf32>) outs(%e : tensor<6x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<6x3xf32>
  %o = tensor.empty() : tensor<4x3xf32>
  %z = linalg.fill ins(%zero : f32) outs(%o : tensor<4x3xf32>) -> tensor<4x3xf32>
  %m = linalg.matmul ins(%x, %t : tensor<4x6xf32>, tensor<6x3xf32>) outs(%z : tensor<4x3xf32>) -> tensor<4x3xf32>
  %y = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%m, %b : tensor<4x3xf32>, tensor<3xf32>) outs(%o : tensor<4x3xf32>) {
  ^bb0(%a: f32, %c: f32, %out: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

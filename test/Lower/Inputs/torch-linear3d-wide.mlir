// Two linear layers on a 3-D input [batch, tokens, features] as torch-mlir
// writes them (torch-linear3d.mlir at sizes where the copies matter): the
// first layer's weight transposed, given a unit batch dimension and
// broadcast along the batch by linalg.generic copies (2 MB broadcast), the
// second's by linalg.transpose and linalg.broadcast; each then a
// batch_matmul.
#wt = affine_map<(d0, d1) -> (d1, d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#unit = affine_map<(d0, d1, d2) -> (d1, d2)>
#bcast = affine_map<(d0, d1, d2) -> (0, d1, d2)>
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#col = affine_map<(d0, d1, d2) -> (d2)>
func.func @forward(%x: tensor<8x32x64xf32>) -> tensor<8x32x16xf32> {
  %w = arith.constant dense_resource<__elided__> : tensor<1024x64xf32>
  %b = arith.constant dense<0.0> : tensor<1024xf32>
  %w2 = arith.constant dense_resource<__elided__> : tensor<16x1024xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x1024xf32>
  %t = linalg.generic {indexing_maps = [#wt, #id2], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<1024x64xf32>) outs(%e : tensor<64x1024xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<64x1024xf32>
  %e1 = tensor.empty() : tensor<1x64x1024xf32>
  %t1 = linalg.generic {indexing_maps = [#unit, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%t : tensor<64x1024xf32>) outs(%e1 : tensor<1x64x1024xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x64x1024xf32>
  %e2 = tensor.empty() : tensor<8x64x1024xf32>
  %tb = linalg.generic {indexing_maps = [#bcast, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%t1 : tensor<1x64x1024xf32>) outs(%e2 : tensor<8x64x1024xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<8x64x1024xf32>
  %o = tensor.empty() : tensor<8x32x1024xf32>
  %z = linalg.fill ins(%zero : f32) outs(%o : tensor<8x32x1024xf32>) -> tensor<8x32x1024xf32>
  %m = linalg.batch_matmul ins(%x, %tb : tensor<8x32x64xf32>, tensor<8x64x1024xf32>) outs(%z : tensor<8x32x1024xf32>) -> tensor<8x32x1024xf32>
  %h = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%m, %b : tensor<8x32x1024xf32>, tensor<1024xf32>) outs(%o : tensor<8x32x1024xf32>) {
  ^bb0(%a: f32, %c: f32, %out: f32):
    %s = arith.addf %a, %c : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<8x32x1024xf32>
  %e3 = tensor.empty() : tensor<1024x16xf32>
  %t2 = linalg.transpose ins(%w2 : tensor<16x1024xf32>) outs(%e3 : tensor<1024x16xf32>) permutation = [1, 0]
  %e4 = tensor.empty() : tensor<8x1024x16xf32>
  %tb2 = linalg.broadcast ins(%t2 : tensor<1024x16xf32>) outs(%e4 : tensor<8x1024x16xf32>) dimensions = [0]
  %o2 = tensor.empty() : tensor<8x32x16xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%o2 : tensor<8x32x16xf32>) -> tensor<8x32x16xf32>
  %y = linalg.batch_matmul ins(%h, %tb2 : tensor<8x32x1024xf32>, tensor<8x1024x16xf32>) outs(%z2 : tensor<8x32x16xf32>) -> tensor<8x32x16xf32>
  return %y : tensor<8x32x16xf32>
}

// Linear layers on a 3-D input as torch-mlir writes them (aten.linear on
// [batch, tokens, features]): the weight [out, in] transposed by a copy,
// given a unit batch dimension by a copy, broadcast along the batch by a
// copy (line 28), then a batch_matmul, then the bias.
#wt = affine_map<(d0, d1) -> (d1, d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#unit = affine_map<(d0, d1, d2) -> (d1, d2)>
#bcast = affine_map<(d0, d1, d2) -> (0, d1, d2)>
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#col = affine_map<(d0, d1, d2) -> (d2)>
func.func @forward(%x: tensor<4x6x8xf32>) -> tensor<4x6x3xf32> {
  %w = arith.constant dense_resource<__elided__> : tensor<5x8xf32>
  %b = arith.constant dense<0.0> : tensor<5xf32>
  %w2 = arith.constant dense_resource<__elided__> : tensor<3x5xf32>
  %w3 = arith.constant dense_resource<__elided__> : tensor<3x3xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x5xf32>
  %t = linalg.generic {indexing_maps = [#wt, #id2], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<5x8xf32>) outs(%e : tensor<8x5xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<8x5xf32>
  %e1 = tensor.empty() : tensor<1x8x5xf32>
  %t1 = linalg.generic {indexing_maps = [#unit, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%t : tensor<8x5xf32>) outs(%e1 : tensor<1x8x5xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x8x5xf32>
  %e2 = tensor.empty() : tensor<4x8x5xf32>
  %tb = linalg.generic {indexing_maps = [#bcast, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%t1 : tensor<1x8x5xf32>) outs(%e2 : tensor<4x8x5xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<4x8x5xf32>
  %o = tensor.empty() : tensor<4x6x5xf32>
  %z = linalg.fill ins(%zero : f32) outs(%o : tensor<4x6x5xf32>) -> tensor<4x6x5xf32>
  %m = linalg.batch_matmul ins(%x, %tb : tensor<4x6x8xf32>, tensor<4x8x5xf32>) outs(%z : tensor<4x6x5xf32>) -> tensor<4x6x5xf32>
  %h = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%m, %b : tensor<4x6x5xf32>, tensor<5xf32>) outs(%o : tensor<4x6x5xf32>) {
  ^bb0(%a: f32, %c: f32, %out: f32):
    %s = arith.addf %a, %c : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x6x5xf32>
  // The second layer's weight broadcast by a linalg.broadcast (line 45).
  %e3 = tensor.empty() : tensor<5x3xf32>
  %t2 = linalg.transpose ins(%w2 : tensor<3x5xf32>) outs(%e3 : tensor<5x3xf32>) permutation = [1, 0]
  %e4 = tensor.empty() : tensor<4x5x3xf32>
  %tb2 = linalg.broadcast ins(%t2 : tensor<5x3xf32>) outs(%e4 : tensor<4x5x3xf32>) dimensions = [0]
  %o2 = tensor.empty() : tensor<4x6x3xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%o2 : tensor<4x6x3xf32>) -> tensor<4x6x3xf32>
  %y = linalg.batch_matmul ins(%h, %tb2 : tensor<4x6x5xf32>, tensor<4x5x3xf32>) outs(%z2 : tensor<4x6x3xf32>) -> tensor<4x6x3xf32>
  // A third layer, written as the first.
  %e5 = tensor.empty() : tensor<3x3xf32>
  %t3 = linalg.generic {indexing_maps = [#wt, #id2], iterator_types = ["parallel", "parallel"]} ins(%w3 : tensor<3x3xf32>) outs(%e5 : tensor<3x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<3x3xf32>
  %e6 = tensor.empty() : tensor<1x3x3xf32>
  %t31 = linalg.generic {indexing_maps = [#unit, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%t3 : tensor<3x3xf32>) outs(%e6 : tensor<1x3x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x3x3xf32>
  %e7 = tensor.empty() : tensor<4x3x3xf32>
  %tb3 = linalg.generic {indexing_maps = [#bcast, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%t31 : tensor<1x3x3xf32>) outs(%e7 : tensor<4x3x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<4x3x3xf32>
  %z3 = linalg.fill ins(%zero : f32) outs(%o2 : tensor<4x6x3xf32>) -> tensor<4x6x3xf32>
  %y3 = linalg.batch_matmul ins(%y, %tb3 : tensor<4x6x3xf32>, tensor<4x3x3xf32>) outs(%z3 : tensor<4x6x3xf32>) -> tensor<4x6x3xf32>
  return %y3 : tensor<4x6x3xf32>
}

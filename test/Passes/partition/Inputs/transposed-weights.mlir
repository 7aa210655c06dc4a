// Two linear layers as torch-mlir exports them: each weight transposed,
// then multiplied. The transposes are split one way, the products another:
// the first product splits the batch (its weight gradient is partial sums),
// the second the weight's rows on [1, 0] (its gradient is complete there).
#map = affine_map<(d0, d1) -> (d0, d1)>
#all = affine_map<(d0, d1) -> ()>
func.func @loss(%w1: tensor<8x6xf32> {soap.param, soap.name = "w1"},
                %w2: tensor<4x8xf32> {soap.param, soap.name = "w2"},
                %x: tensor<4x6xf32> {soap.name = "input"}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %t1e = tensor.empty() : tensor<6x8xf32>
  %t1 = linalg.transpose ins(%w1 : tensor<8x6xf32>) outs(%t1e : tensor<6x8xf32>) permutation = [1, 0]
      {soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>}
  %e1 = tensor.empty() : tensor<4x8xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %h = linalg.matmul {soap.config = #soap.config<degrees = [2, 1, 1], devices = [0, 1]>}
      ins(%x, %t1 : tensor<4x6xf32>, tensor<6x8xf32>) outs(%f1 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %t2e = tensor.empty() : tensor<8x4xf32>
  %t2 = linalg.transpose ins(%w2 : tensor<4x8xf32>) outs(%t2e : tensor<8x4xf32>) permutation = [1, 0]
      {soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>}
  %e2 = tensor.empty() : tensor<4x4xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4x4xf32>) -> tensor<4x4xf32>
  %o = linalg.matmul {soap.config = #soap.config<degrees = [1, 2, 1], devices = [1, 0]>}
      ins(%h, %t2 : tensor<4x8xf32>, tensor<8x4xf32>) outs(%f2 : tensor<4x4xf32>) -> tensor<4x4xf32>
  %e3 = tensor.empty() : tensor<f32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#map, #all], iterator_types = ["reduction", "reduction"]}
      ins(%o : tensor<4x4xf32>) outs(%f3 : tensor<f32>)
      attrs = {soap.config = #soap.config<degrees = [1, 2], devices = [1, 0]>} {
  ^bb0(%a: f32, %acc: f32):
    %q = arith.mulf %a, %a : f32
    %t = arith.addf %acc, %q : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}

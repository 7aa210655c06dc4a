// A product that splits its rows and columns into four tasks on two
// devices, [0, 1, 1, 0] (a random strategy's config on fewer devices than
// tasks): the gradient of its first operand splits the reduction over the
// columns, so each device holds partial sums of both row blocks, one per
// task. The gradient of the second operand and of the first read the
// output's adjoint in two task orders.
#map = affine_map<(d0, d1) -> (d0, d1)>
#all = affine_map<(d0, d1) -> ()>
func.func @loss(%w0: tensor<8x8xf32> {soap.param, soap.name = "w0"},
                %w1: tensor<8x8xf32> {soap.param, soap.name = "w1"},
                %x: tensor<8x8xf32> {soap.name = "input"}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %a = linalg.matmul {soap.config = #soap.config<degrees = [2, 1, 1], devices = [0, 1]>}
      ins(%x, %w0 : tensor<8x8xf32>, tensor<8x8xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  %c = linalg.matmul {soap.config = #soap.config<degrees = [2, 2, 1], devices = [0, 1, 1, 0]>}
      ins(%a, %w1 : tensor<8x8xf32>, tensor<8x8xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  %e0 = tensor.empty() : tensor<f32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#map, #all], iterator_types = ["reduction", "reduction"]}
      ins(%c : tensor<8x8xf32>) outs(%f0 : tensor<f32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [1, 0]>} {
  ^bb0(%v: f32, %acc: f32):
    %q = arith.mulf %v, %v : f32
    %t = arith.addf %acc, %q : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}

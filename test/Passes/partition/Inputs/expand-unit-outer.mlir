// A [1, 8, 4] weight read at a constant index along its unit dimension
// (torch-mlir's broadcast of a weight across the batch), by an op split
// along the weight's rows. The training step computes the weight's
// gradient at [8, 4] and expands it back to [1, 8, 4]: the split along
// the rows passes through the expand along the group's first dimension
// that is not a unit one, so nothing moves (the partitioner gathered the
// gradient whole and sliced its rows back).
#x = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#w = affine_map<(d0, d1, d2) -> (0, d1, d2)>
#all3 = affine_map<(d0, d1, d2) -> ()>
func.func @loss(%w1: tensor<1x8x4xf32> {soap.param, soap.name = "w1"},
                %x: tensor<2x8x4xf32> {soap.name = "input"}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<2x8x4xf32>
  %h = linalg.generic {indexing_maps = [#x, #w, #x], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %w1 : tensor<2x8x4xf32>, tensor<1x8x4xf32>) outs(%e1 : tensor<2x8x4xf32>)
      attrs = {soap.config = #soap.config<degrees = [1, 2, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %y = arith.mulf %a, %b : f32
    linalg.yield %y : f32
  } -> tensor<2x8x4xf32>
  %e3 = tensor.empty() : tensor<f32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#x, #all3], iterator_types = ["reduction", "reduction", "reduction"]}
      ins(%h : tensor<2x8x4xf32>) outs(%f3 : tensor<f32>)
      attrs = {soap.config = #soap.config<degrees = [1, 2, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %acc: f32):
    %sq = arith.mulf %a, %a : f32
    %s = arith.addf %acc, %sq : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}

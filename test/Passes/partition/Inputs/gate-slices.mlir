// An LSTM cell's gates: a product whose bias add the strategy runs whole
// on every device (soap.replicated), sliced into two gates, each split
// along the batch on [0, 1]. The gates' gradients, zero outside their
// columns, add up without moving; the bias add's gradient reads the sum
// whole.
#map = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#all = affine_map<(d0, d1) -> ()>
func.func @loss(%w: tensor<6x8xf32> {soap.param, soap.name = "w"},
                %bias: tensor<8xf32> {soap.param, soap.name = "bias"},
                %x: tensor<4x6xf32> {soap.name = "input"}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<4x8xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %h = linalg.matmul {soap.config = #soap.config<degrees = [1, 2, 1], devices = [0, 1]>}
      ins(%x, %w : tensor<4x6xf32>, tensor<6x8xf32>) outs(%f1 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %b = linalg.generic {indexing_maps = [#map, #col, #map], iterator_types = ["parallel", "parallel"]}
      ins(%h, %bias : tensor<4x8xf32>, tensor<8xf32>) outs(%e1 : tensor<4x8xf32>) attrs = {soap.replicated} {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %y = arith.addf %a, %c : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %g0 = tensor.extract_slice %b[0, 0] [4, 4] [1, 1]
      {soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>} : tensor<4x8xf32> to tensor<4x4xf32>
  %g1 = tensor.extract_slice %b[0, 4] [4, 4] [1, 1]
      {soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>} : tensor<4x8xf32> to tensor<4x4xf32>
  %e2 = tensor.empty() : tensor<4x4xf32>
  %p = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%g0, %g1 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e2 : tensor<4x4xf32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = math.tanh %a : f32
    %y = arith.mulf %s, %c : f32
    linalg.yield %y : f32
  } -> tensor<4x4xf32>
  %e3 = tensor.empty() : tensor<f32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#map, #all], iterator_types = ["reduction", "reduction"]}
      ins(%p : tensor<4x4xf32>) outs(%f3 : tensor<f32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %acc: f32):
    %q = arith.mulf %a, %a : f32
    %t = arith.addf %acc, %q : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}

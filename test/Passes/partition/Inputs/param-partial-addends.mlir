// A bias read at three time steps in three layouts, as an RNN's: rows on
// devices [1, 0] (its gradient partial sums on both), columns on [1, 0]
// (complete halves) and rows in two tasks on device 0 (partial sums in
// two pieces there). The adjoint sum is added where its last complete
// addend is (the columns' halves): the partial sums are reduce-scattered
// there and the update runs on the halves, where the bias stays across
// steps; the next step gathers it for the first reader.
#map = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
#all = affine_map<(d0, d1) -> ()>
func.func @loss(%b: tensor<8xf32> {soap.param, soap.name = "bias"},
                %x: tensor<4x8xf32> {soap.name = "input"}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %y1 = linalg.generic {indexing_maps = [#map, #row, #map], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<4x8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [1, 0]>} {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    %t = math.tanh %s : f32
    linalg.yield %t : f32
  } -> tensor<4x8xf32>
  %y2 = linalg.generic {indexing_maps = [#map, #row, #map], iterator_types = ["parallel", "parallel"]}
      ins(%y1, %b : tensor<4x8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [1, 2], devices = [1, 0]>} {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    %t = math.tanh %s : f32
    linalg.yield %t : f32
  } -> tensor<4x8xf32>
  %y3 = linalg.generic {indexing_maps = [#map, #row, #map], iterator_types = ["parallel", "parallel"]}
      ins(%y2, %b : tensor<4x8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [0, 0]>} {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    %t = math.tanh %s : f32
    linalg.yield %t : f32
  } -> tensor<4x8xf32>
  %e3 = tensor.empty() : tensor<f32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#map, #all], iterator_types = ["reduction", "reduction"]}
      ins(%y3 : tensor<4x8xf32>) outs(%f3 : tensor<f32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %acc: f32):
    %q2 = arith.mulf %a, %a : f32
    %r = arith.addf %acc, %q2 : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}

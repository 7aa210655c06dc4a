// A weight read by two products: the first splits its reduction (the
// weight's rows) on [0, 1], so its gradient is the weight's rows, complete;
// the second splits its batch in two tasks both on device 0, so its
// gradient is two partial sums there. In the backward pass the second's
// gradient starts the sum, which the first product accumulates into (its
// init: the two partial sums added on device 0, then brought to the
// first's blocks), and the update runs on the first's rows, where the
// weight stays across steps (an RNN's weight under model parallelism).
#map = affine_map<(d0, d1) -> (d0, d1)>
#all = affine_map<(d0, d1) -> ()>
func.func @loss(%w: tensor<16x32xf32> {soap.param, soap.name = "w"},
                %x1: tensor<4x16xf32> {soap.name = "input"},
                %x2: tensor<4x16xf32> {soap.name = "other"}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<4x32xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x32xf32>) -> tensor<4x32xf32>
  %h1 = linalg.matmul {soap.config = #soap.config<degrees = [1, 1, 2], devices = [0, 1]>}
      ins(%x1, %w : tensor<4x16xf32>, tensor<16x32xf32>) outs(%f1 : tensor<4x32xf32>) -> tensor<4x32xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x32xf32>) -> tensor<4x32xf32>
  %h2 = linalg.matmul {soap.config = #soap.config<degrees = [2, 1, 1], devices = [0, 0]>}
      ins(%x2, %w : tensor<4x16xf32>, tensor<16x32xf32>) outs(%f2 : tensor<4x32xf32>) -> tensor<4x32xf32>
  %t = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%h1, %h2 : tensor<4x32xf32>, tensor<4x32xf32>) outs(%e1 : tensor<4x32xf32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %y = arith.mulf %a, %b : f32
    linalg.yield %y : f32
  } -> tensor<4x32xf32>
  %e3 = tensor.empty() : tensor<f32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#map, #all], iterator_types = ["reduction", "reduction"]}
      ins(%t : tensor<4x32xf32>) outs(%f3 : tensor<f32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}

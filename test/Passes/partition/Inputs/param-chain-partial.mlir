// A weight shared by three products (an RNN's time steps), the second
// of which splits its reduction (rows of the batch on devices 1 and 0):
// its weight gradient is partial sums on both devices. The training step
// accumulates the weight's gradient in place through the products; the
// sum so far (the third product's columns) goes into the second's partial
// sums where it lies (the partitioner's embeddedInit), and those partial
// sums are reduce-scattered into the first product's rows, where the
// update runs and the weight stays across steps.
#map = affine_map<(d0, d1) -> (d0, d1)>
#all = affine_map<(d0, d1) -> ()>
func.func @loss(%w: tensor<8x8xf32> {soap.param, soap.name = "w"},
                %x: tensor<4x8xf32> {soap.name = "input"}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %p1 = linalg.matmul {soap.config = #soap.config<degrees = [1, 1, 2], devices = [0, 1]>}
      ins(%x, %w : tensor<4x8xf32>, tensor<8x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %h1 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%p1 : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %o: f32):
    %y = math.tanh %a : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %p2 = linalg.matmul {soap.config = #soap.config<degrees = [2, 1, 1], devices = [1, 0]>}
      ins(%h1, %w : tensor<4x8xf32>, tensor<8x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %h2 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%p2 : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %o: f32):
    %y = math.tanh %a : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %p3 = linalg.matmul {soap.config = #soap.config<degrees = [1, 2, 1], devices = [1, 0]>}
      ins(%h2, %w : tensor<4x8xf32>, tensor<8x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %h3 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%p3 : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %o: f32):
    %y = math.tanh %a : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %e0 = tensor.empty() : tensor<f32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#map, #all], iterator_types = ["reduction", "reduction"]}
      ins(%h3 : tensor<4x8xf32>) outs(%f0 : tensor<f32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.addf %acc, %a : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}

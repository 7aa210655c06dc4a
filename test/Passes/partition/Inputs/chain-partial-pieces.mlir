// A value in two tasks on device 1 read by a product that splits its
// output columns over devices [0, 1] and, after it, by an op run whole on
// every device. The product accumulates the gradient so far in place: a
// split reduction over two devices, whose partial sums complete once (an
// all-reduce of the whole gradient), from which both pieces of the value
// take their rows (before, the simulator completed them once per piece).
#map = affine_map<(d0, d1) -> (d0, d1)>
#all = affine_map<(d0, d1) -> ()>
func.func @loss(%w: tensor<8x8xf32> {soap.param, soap.name = "w"},
                %s0: tensor<8x8xf32> {soap.param, soap.name = "scale"},
                %x: tensor<8x8xf32> {soap.name = "input"}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %h = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%x, %s0 : tensor<8x8xf32>, tensor<8x8xf32>) outs(%e : tensor<8x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [1, 1]>} {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %p = linalg.matmul {soap.config = #soap.config<degrees = [1, 2, 1], devices = [0, 1]>}
      ins(%h, %w : tensor<8x8xf32>, tensor<8x8xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  %t = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<8x8xf32>) outs(%e : tensor<8x8xf32>)
      attrs = {soap.replicated} {
  ^bb0(%a: f32, %o: f32):
    %y = math.tanh %a : f32
    linalg.yield %y : f32
  } -> tensor<8x8xf32>
  %s = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%p, %t : tensor<8x8xf32>, tensor<8x8xf32>) outs(%e : tensor<8x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %ab = arith.mulf %a, %b : f32
    linalg.yield %ab : f32
  } -> tensor<8x8xf32>
  %e3 = tensor.empty() : tensor<f32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#map, #all], iterator_types = ["reduction", "reduction"]}
      ins(%s : tensor<8x8xf32>) outs(%f3 : tensor<f32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %acc: f32):
    %q2 = arith.mulf %a, %a : f32
    %r = arith.addf %acc, %q2 : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}

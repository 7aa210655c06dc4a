// A value `h` read directly (by `s`) and through an identity copy `c` (by
// the products `m1` and `m2`), which canonicalization erases after the
// training step has differentiated it: the gradients of the copy's
// readers add up first (`m1`'s product accumulates `m2`'s in place, on
// device 1), and that sum is one addend of `h`'s adjoint beside `s`'s.
#map = affine_map<(d0, d1) -> (d0, d1)>
#all = affine_map<(d0, d1) -> ()>
func.func @loss(%w0: tensor<4x8xf32> {soap.param, soap.name = "w0"},
                %w1: tensor<8x8xf32> {soap.param, soap.name = "w1"},
                %w2: tensor<8x8xf32> {soap.param, soap.name = "w2"},
                %in: tensor<4x8xf32> {soap.name = "input"}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %h = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%in, %w0 : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %x = arith.mulf %a, %b : f32
    %y = math.tanh %x : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %c = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<4x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %m1 = linalg.matmul {soap.config = #soap.config<degrees = [1, 1, 1], devices = [1]>}
      ins(%c, %w1 : tensor<4x8xf32>, tensor<8x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %m2 = linalg.matmul {soap.config = #soap.config<degrees = [1, 1, 2], devices = [0, 0]>}
      ins(%c, %w2 : tensor<4x8xf32>, tensor<8x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %s = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%h, %m1 : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [1, 2], devices = [1, 0]>} {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %y = arith.mulf %a, %b : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %t = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%s, %m2 : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %y = arith.addf %a, %b : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %e0 = tensor.empty() : tensor<f32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#map, #all], iterator_types = ["reduction", "reduction"]}
      ins(%t : tensor<4x8xf32>) outs(%f0 : tensor<f32>) attrs = {soap.replicated} {
  ^bb0(%a: f32, %acc: f32):
    %q = arith.mulf %a, %a : f32
    %y = arith.addf %acc, %q : f32
    linalg.yield %y : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}

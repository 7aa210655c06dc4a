// Gradients that are one value for several readers.
// - A residual add `s` on device 0 of `p` (rows split over devices 0, 1)
//   and `q` (whole on device 1): the training step's gradients of both
//   inputs are the add's adjoint itself. The backward pass reaches `q`
//   first and brings it whole to device 1; `p`'s rows there come from that
//   copy.
// - A reshape `v` that only a replicated op reads: its adjoint is whole on
//   every device, and so is its backward reshape, from which `r`'s blocks
//   come where they are.
#map = affine_map<(d0, d1) -> (d0, d1)>
#map3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#all = affine_map<(d0, d1, d2) -> ()>
func.func @loss(%w: tensor<4x8xf32> {soap.param, soap.name = "w"},
                %in: tensor<4x8xf32> {soap.name = "input"}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %x = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%in, %w : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %y = arith.mulf %a, %b : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %p = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %o: f32):
    %y = math.tanh %a : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %q = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [1, 1], devices = [1]>} {
  ^bb0(%a: f32, %o: f32):
    %y = arith.mulf %a, %a : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %s = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%p, %q : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [1, 1], devices = [0]>} {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %y = arith.addf %a, %b : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%s : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [1, 0]>} {
  ^bb0(%a: f32, %o: f32):
    %y = math.tanh %a : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %v = tensor.expand_shape %r [[0], [1, 2]] output_shape [4, 1, 8]
      {soap.config = #soap.config<degrees = [2, 1, 1], devices = [0, 1]>}
      : tensor<4x8xf32> into tensor<4x1x8xf32>
  %e3 = tensor.empty() : tensor<4x1x8xf32>
  %t = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%v : tensor<4x1x8xf32>) outs(%e3 : tensor<4x1x8xf32>) attrs = {soap.replicated} {
  ^bb0(%a: f32, %o: f32):
    %y = math.tanh %a : f32
    linalg.yield %y : f32
  } -> tensor<4x1x8xf32>
  %e0 = tensor.empty() : tensor<f32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#map3, #all], iterator_types = ["reduction", "reduction", "reduction"]}
      ins(%t : tensor<4x1x8xf32>) outs(%f0 : tensor<f32>) attrs = {soap.replicated} {
  ^bb0(%a: f32, %acc: f32):
    %y = arith.addf %acc, %a : f32
    linalg.yield %y : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}

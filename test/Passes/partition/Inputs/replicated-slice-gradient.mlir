// The gradient of a replicated slice is zero outside the slice's region
// and whole on every device inside it. `h` (columns split: 0-7 on device
// 1, 8-15 on device 0) is read by a slice `s1` of columns 0-7 whose two
// tasks both run on device 1 and by a replicated slice `s2` of columns
// 8-15. The gradients of the two slices are disjoint parts of `h`'s
// adjoint: device 0 takes columns 8-15 from its own copy of `s2`'s, and
// device 1 columns 0-7 from `s1`'s, which it computed.
#map = affine_map<(d0, d1) -> (d0, d1)>
#all = affine_map<(d0, d1) -> ()>
func.func @loss(%w: tensor<4x16xf32> {soap.param, soap.name = "w"},
                %in: tensor<4x16xf32> {soap.name = "input"}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %x = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%in, %w : tensor<4x16xf32>, tensor<4x16xf32>) outs(%e : tensor<4x16xf32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %y = arith.mulf %a, %b : f32
    linalg.yield %y : f32
  } -> tensor<4x16xf32>
  %h = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x16xf32>) outs(%e : tensor<4x16xf32>)
      attrs = {soap.config = #soap.config<degrees = [1, 2], devices = [1, 0]>} {
  ^bb0(%a: f32, %o: f32):
    %y = math.tanh %a : f32
    linalg.yield %y : f32
  } -> tensor<4x16xf32>
  %s1 = tensor.extract_slice %h[0, 0] [4, 8] [1, 1]
      {soap.config = #soap.config<degrees = [2, 1], devices = [1, 1]>}
      : tensor<4x16xf32> to tensor<4x8xf32>
  %s2 = tensor.extract_slice %h[0, 8] [4, 8] [1, 1] {soap.replicated}
      : tensor<4x16xf32> to tensor<4x8xf32>
  %e8 = tensor.empty() : tensor<4x8xf32>
  %t = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%s1, %s2 : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e8 : tensor<4x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %y = arith.mulf %a, %b : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %e0 = tensor.empty() : tensor<f32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#map, #all], iterator_types = ["reduction", "reduction"]}
      ins(%t : tensor<4x8xf32>) outs(%f0 : tensor<f32>) attrs = {soap.replicated} {
  ^bb0(%a: f32, %acc: f32):
    %y = arith.addf %acc, %a : f32
    linalg.yield %y : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}

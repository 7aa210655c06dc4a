// One value read by three elementwise ops, two of them with several
// tasks on a device: the adjoint sum of their gradients.
#map = affine_map<(d0, d1) -> (d0, d1)>
#all = affine_map<(d0, d1) -> ()>
func.func @loss(%w: tensor<8x8xf32> {soap.param, soap.name = "w"},
                %x: tensor<8x8xf32> {soap.name = "input"}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %h = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%x, %w : tensor<8x8xf32>, tensor<8x8xf32>) outs(%e : tensor<8x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<8x8xf32>
  %a = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<8x8xf32>) outs(%e : tensor<8x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [1, 2], devices = [1, 0]>} {
  ^bb0(%v: f32, %o: f32):
    %m = arith.mulf %v, %v : f32
    linalg.yield %m : f32
  } -> tensor<8x8xf32>
  %c = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<8x8xf32>) outs(%e : tensor<8x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [1, 4], devices = [0, 1, 1, 0]>} {
  ^bb0(%v: f32, %o: f32):
    %m = arith.addf %v, %one : f32
    %n = arith.mulf %m, %v : f32
    linalg.yield %n : f32
  } -> tensor<8x8xf32>
  %d = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<8x8xf32>) outs(%e : tensor<8x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [4, 1], devices = [1, 0, 0, 1]>} {
  ^bb0(%v: f32, %o: f32):
    %m = arith.subf %v, %one : f32
    %n = arith.mulf %m, %m : f32
    linalg.yield %n : f32
  } -> tensor<8x8xf32>
  %s1 = linalg.generic {indexing_maps = [#map, #map, #map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%a, %c, %d : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) outs(%e : tensor<8x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>} {
  ^bb0(%p: f32, %q: f32, %r: f32, %o: f32):
    %m = arith.addf %p, %q : f32
    %n = arith.addf %m, %r : f32
    linalg.yield %n : f32
  } -> tensor<8x8xf32>
  %e0 = tensor.empty() : tensor<f32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#map, #all], iterator_types = ["reduction", "reduction"]}
      ins(%s1 : tensor<8x8xf32>) outs(%f0 : tensor<f32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>} {
  ^bb0(%v: f32, %acc: f32):
    %t = arith.addf %acc, %v : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}

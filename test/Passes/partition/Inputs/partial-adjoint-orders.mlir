// A column mean read by three ops: a centering split along the batch on
// devices [1, 0], a sum of squares split along the batch on [0, 1], and a
// replicated square. Their gradients of the mean are partial sums with
// copies on different device orders and a whole tensor on every device.
#map = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#all = affine_map<(d0, d1) -> ()>
#vec = affine_map<(d0) -> (d0)>
#vall = affine_map<(d0) -> ()>
#s = affine_map<() -> ()>
func.func @loss(%w: tensor<6x8xf32> {soap.param, soap.name = "w"},
                %x: tensor<4x6xf32> {soap.name = "input"}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<4x8xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %h = linalg.matmul {soap.config = #soap.config<degrees = [2, 1, 1], devices = [0, 1]>}
      ins(%x, %w : tensor<4x6xf32>, tensor<6x8xf32>) outs(%f1 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %e2 = tensor.empty() : tensor<8xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8xf32>) -> tensor<8xf32>
  %m = linalg.generic {indexing_maps = [#map, #col], iterator_types = ["reduction", "parallel"]}
      ins(%h : tensor<4x8xf32>) outs(%f2 : tensor<8xf32>)
      attrs = {soap.config = #soap.config<degrees = [1, 2], devices = [0, 1]>} {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.addf %acc, %a : f32
    linalg.yield %t : f32
  } -> tensor<8xf32>
  %c = linalg.generic {indexing_maps = [#map, #col, #map], iterator_types = ["parallel", "parallel"]}
      ins(%h, %m : tensor<4x8xf32>, tensor<8xf32>) outs(%e1 : tensor<4x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [1, 0]>} {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %q = arith.mulf %d, %d : f32
    linalg.yield %q : f32
  } -> tensor<4x8xf32>
  %e3 = tensor.empty() : tensor<f32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<f32>) -> tensor<f32>
  %l1 = linalg.generic {indexing_maps = [#map, #all], iterator_types = ["reduction", "reduction"]}
      ins(%c : tensor<4x8xf32>) outs(%f3 : tensor<f32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [1, 0]>} {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.addf %acc, %a : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  %l2 = linalg.generic {indexing_maps = [#map, #col, #all], iterator_types = ["reduction", "reduction"]}
      ins(%h, %m : tensor<4x8xf32>, tensor<8xf32>) outs(%f3 : tensor<f32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %t = arith.addf %acc, %p : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  %l3 = linalg.generic {indexing_maps = [#vec, #vall], iterator_types = ["reduction"]}
      ins(%m : tensor<8xf32>) outs(%f3 : tensor<f32>) attrs = {soap.replicated} {
  ^bb0(%a: f32, %acc: f32):
    %p = arith.mulf %a, %a : f32
    %t = arith.addf %acc, %p : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  %s1 = linalg.generic {indexing_maps = [#s, #s, #s], iterator_types = []}
      ins(%l1, %l2 : tensor<f32>, tensor<f32>) outs(%e3 : tensor<f32>)
      attrs = {soap.replicated} {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %t = arith.addf %a, %b : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  %s2 = linalg.generic {indexing_maps = [#s, #s, #s], iterator_types = []}
      ins(%s1, %l3 : tensor<f32>, tensor<f32>) outs(%e3 : tensor<f32>)
      attrs = {soap.replicated} {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %t = arith.addf %a, %b : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  return %s2 : tensor<f32>
}

// A bias added over four tasks on devices [1, 0, 0, 2]: its gradient sums
// the rows, so device 0 holds partial sums of both halves (two tasks),
// device 1 of the first and device 2 of the second. Complete, the halves
// do not make one layout (device 0 holds the whole bias, the others a
// half each): the update runs whole on every device.
#map = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#all = affine_map<(d0, d1) -> ()>
func.func @loss(%w: tensor<8x8xf32> {soap.param, soap.name = "w"},
                %b: tensor<8xf32> {soap.param, soap.name = "b"},
                %x: tensor<8x8xf32> {soap.name = "input"}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %h = linalg.matmul {soap.config = #soap.config<degrees = [2, 1, 1], devices = [0, 1]>}
      ins(%x, %w : tensor<8x8xf32>, tensor<8x8xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  %y = linalg.generic {indexing_maps = [#map, #col, #map], iterator_types = ["parallel", "parallel"]}
      ins(%h, %b : tensor<8x8xf32>, tensor<8xf32>) outs(%e : tensor<8x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [2, 2], devices = [1, 0, 0, 2]>} {
  ^bb0(%v: f32, %c: f32, %o: f32):
    %s = arith.addf %v, %c : f32
    linalg.yield %s : f32
  } -> tensor<8x8xf32>
  %e0 = tensor.empty() : tensor<f32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#map, #all], iterator_types = ["reduction", "reduction"]}
      ins(%y : tensor<8x8xf32>) outs(%f0 : tensor<f32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [2, 3]>} {
  ^bb0(%v: f32, %acc: f32):
    %q = arith.mulf %v, %v : f32
    %t = arith.addf %acc, %q : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}

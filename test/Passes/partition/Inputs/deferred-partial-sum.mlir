// A product `v` on device 0 read by two ops whose gradients have no one
// complete layout: a tanh with both of its tasks on device 1 (two pieces
// there) and a broadcast product split along the batch it adds (partial
// sums on devices 0 and 1). The training step adds the two gradients;
// the partitioner leaves that sum to the matmul's backward work, which
// brings each addend to its blocks (the partial sums completed there,
// the pieces sent), as the simulator moves each reader's gradient.
#map = affine_map<(d0, d1) -> (d0, d1)>
#all = affine_map<(d0, d1) -> ()>
#bcast = affine_map<(d0, d1, d2) -> (d1, d2)>
#map3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#all3 = affine_map<(d0, d1, d2) -> ()>
func.func @loss(%w: tensor<6x8xf32> {soap.param, soap.name = "w"},
                %x: tensor<4x6xf32> {soap.name = "input"},
                %y: tensor<2x4x8xf32> {soap.name = "scale"}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %v = linalg.matmul {soap.config = #soap.config<degrees = [1, 1, 1], devices = [0]>}
      ins(%x, %w : tensor<4x6xf32>, tensor<6x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %t = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%v : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [1, 2], devices = [1, 1]>} {
  ^bb0(%a: f32, %o: f32):
    %r = math.tanh %a : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %e3 = tensor.empty() : tensor<2x4x8xf32>
  %p = linalg.generic {indexing_maps = [#bcast, #map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%v, %y : tensor<4x8xf32>, tensor<2x4x8xf32>) outs(%e3 : tensor<2x4x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x4x8xf32>
  %e0 = tensor.empty() : tensor<f32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s1 = linalg.generic {indexing_maps = [#map, #all], iterator_types = ["reduction", "reduction"]}
      ins(%t : tensor<4x8xf32>) outs(%f0 : tensor<f32>)
      attrs = {soap.config = #soap.config<degrees = [1, 1], devices = [1]>} {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %acc, %a : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %s2 = linalg.generic {indexing_maps = [#map3, #all3], iterator_types = ["reduction", "reduction", "reduction"]}
      ins(%p : tensor<2x4x8xf32>) outs(%s1 : tensor<f32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %acc, %a : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  return %s2 : tensor<f32>
}

// A value in two pieces on device 1 (a product whose two row tasks both
// run there), read by two ops split along its columns in opposite device
// orders. The first reader's transfers make a copy (device 0: columns
// 0-3, device 1: columns 4-7) that the partitioner keeps beside the
// pieces; it overlaps them, so no transfer plan fits all three, and the
// second reader took an all-reduce of the whole value. It now takes its
// columns from the two pieces alone (layout::planReshardBesideCopies),
// as the simulator plans it.
#map = affine_map<(d0, d1) -> (d0, d1)>
#all = affine_map<(d0, d1) -> ()>
func.func @loss(%w1: tensor<6x8xf32> {soap.param, soap.name = "w1"},
                %x: tensor<8x6xf32> {soap.name = "input"}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %three = arith.constant 3.0 : f32
  %e1 = tensor.empty() : tensor<8x8xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %h = linalg.matmul {soap.config = #soap.config<degrees = [2, 1, 1], devices = [1, 1]>}
      ins(%x, %w1 : tensor<8x6xf32>, tensor<6x8xf32>) outs(%f1 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %a = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<8x8xf32>) outs(%e1 : tensor<8x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [1, 2], devices = [0, 1]>} {
  ^bb0(%v: f32, %o: f32):
    %y = arith.mulf %v, %v : f32
    linalg.yield %y : f32
  } -> tensor<8x8xf32>
  %b = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<8x8xf32>) outs(%e1 : tensor<8x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [1, 2], devices = [1, 0]>} {
  ^bb0(%v: f32, %o: f32):
    %y = arith.mulf %v, %three : f32
    linalg.yield %y : f32
  } -> tensor<8x8xf32>
  %e3 = tensor.empty() : tensor<f32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#map, #map, #all], iterator_types = ["reduction", "reduction"]}
      ins(%a, %b : tensor<8x8xf32>, tensor<8x8xf32>) outs(%f3 : tensor<f32>)
      attrs = {soap.config = #soap.config<degrees = [1, 2], devices = [0, 1]>} {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %s = arith.addf %p, %q : f32
    %t = arith.addf %acc, %s : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}

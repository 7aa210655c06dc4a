// A broadcast along a unit dimension whose two tasks run on device 1,
// split along the rows (dimension 1), reading a value split along the
// batch on [0, 1]. The training step reduces the broadcast's gradient to
// the unit dimension's shape and expands it back; the expand_shape runs
// on device 1, where the two tasks' blocks tile the tensor
// (SpmdPartitioner::runOnHolders), so device 0's batch rows move in one
// piece, not one per task.
#map = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#unit = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
#all = affine_map<(d0, d1, d2) -> ()>
func.func @loss(%p: tensor<4x6x1xf32> {soap.param, soap.name = "p"},
                %x: tensor<4x6x1xf32> {soap.name = "input"},
                %y: tensor<4x6x8xf32> {soap.name = "other"}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<4x6x1xf32>
  %v = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %p : tensor<4x6x1xf32>, tensor<4x6x1xf32>) outs(%e1 : tensor<4x6x1xf32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<4x6x1xf32>
  %e2 = tensor.empty() : tensor<4x6x8xf32>
  %b = linalg.generic {indexing_maps = [#unit, #map], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%v : tensor<4x6x1xf32>) outs(%e2 : tensor<4x6x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [1, 2, 1], devices = [1, 1]>} {
  ^bb0(%a: f32, %o: f32):
    %r = math.exp %a : f32
    linalg.yield %r : f32
  } -> tensor<4x6x8xf32>
  %m = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%b, %y : tensor<4x6x8xf32>, tensor<4x6x8xf32>) outs(%e2 : tensor<4x6x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [1, 2, 1], devices = [1, 1]>} {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %r = arith.mulf %a, %c : f32
    linalg.yield %r : f32
  } -> tensor<4x6x8xf32>
  %e3 = tensor.empty() : tensor<f32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#map, #all], iterator_types = ["reduction", "reduction", "reduction"]}
      ins(%m : tensor<4x6x8xf32>) outs(%f3 : tensor<f32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.addf %acc, %a : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}

// bias-init-adjoint.mlir with the second matmul's reader in two tasks on
// device 0: the adjoint is two pieces there, which device 1 receives whole
// for the matmul's backward work; the second bias broadcast's backward
// work on device 1 takes its rows from that copy, with nothing moved.
#row = affine_map<(d0, d1) -> (d1)>
#map = affine_map<(d0, d1) -> (d0, d1)>
#all = affine_map<(d0, d1) -> ()>
func.func @loss(%w1: tensor<6x8xf32> {soap.param, soap.name = "w1"},
                %b1: tensor<8xf32> {soap.param, soap.name = "b1"},
                %w2: tensor<8x8xf32> {soap.param, soap.name = "w2"},
                %b2: tensor<8xf32> {soap.param, soap.name = "b2"},
                %x: tensor<4x6xf32> {soap.name = "input"}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %bb1 = linalg.generic {indexing_maps = [#row, #map], iterator_types = ["parallel", "parallel"]}
      ins(%b1 : tensor<8xf32>) outs(%e : tensor<4x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<4x8xf32>
  %h1 = linalg.matmul {soap.config = #soap.config<degrees = [1, 1, 2], devices = [0, 1]>}
      ins(%x, %w1 : tensor<4x6xf32>, tensor<6x8xf32>) outs(%bb1 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %r1 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%h1 : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %o: f32):
    %y = math.tanh %a : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %bb2 = linalg.generic {indexing_maps = [#row, #map], iterator_types = ["parallel", "parallel"]}
      ins(%b2 : tensor<8xf32>) outs(%e : tensor<4x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<4x8xf32>
  %h2 = linalg.matmul {soap.config = #soap.config<degrees = [1, 1, 1], devices = [1]>}
      ins(%r1, %w2 : tensor<4x8xf32>, tensor<8x8xf32>) outs(%bb2 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %r2 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%h2 : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [0, 0]>} {
  ^bb0(%a: f32, %o: f32):
    %y = math.tanh %a : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %e3 = tensor.empty() : tensor<f32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#map, #all], iterator_types = ["reduction", "reduction"]}
      ins(%r2 : tensor<4x8xf32>) outs(%f3 : tensor<f32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.addf %acc, %a : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}

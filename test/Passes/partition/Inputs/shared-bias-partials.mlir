// A bias `b` that three ops read, each splitting the batch rows (the
// bias's gradient is a sum over them: partial sums per task): `a1`'s two
// tasks on device 0, `a2`'s on devices 1 and 0, `a3`'s on devices 0 and
// 1. No reader's gradient is complete by itself, so each device adds what
// it holds and one all-reduce completes the sum, and the update runs on
// both devices, where every reader finds `b` the next step.
#map = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
#all = affine_map<(d0, d1) -> ()>
func.func @loss(%b: tensor<8xf32> {soap.param, soap.name = "b"},
                %in: tensor<4x8xf32> {soap.name = "input"}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %a1 = linalg.generic {indexing_maps = [#map, #row, #map], iterator_types = ["parallel", "parallel"]}
      ins(%in, %b : tensor<4x8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [0, 0]>} {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %t = math.tanh %x : f32
    %s = arith.addf %t, %y : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %a2 = linalg.generic {indexing_maps = [#map, #row, #map], iterator_types = ["parallel", "parallel"]}
      ins(%a1, %b : tensor<4x8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [1, 0]>} {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %t = math.tanh %x : f32
    %s = arith.addf %t, %y : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %a3 = linalg.generic {indexing_maps = [#map, #row, #map], iterator_types = ["parallel", "parallel"]}
      ins(%a2, %b : tensor<4x8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>} {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %t = math.tanh %x : f32
    %s = arith.addf %t, %y : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %e0 = tensor.empty() : tensor<f32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#map, #all], iterator_types = ["reduction", "reduction"]}
      ins(%a3 : tensor<4x8xf32>) outs(%f0 : tensor<f32>) attrs = {soap.replicated} {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}

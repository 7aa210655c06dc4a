#map = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#vec = affine_map<(d0) -> (d0)>
#all = affine_map<(d0) -> ()>
func.func @loss(%w: tensor<4x6xf32> {soap.init = "fan-in:4", soap.name = "w", soap.param},
                %x: tensor<8x4xf32> {soap.name = "input"}) -> tensor<f32> {
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e0 = tensor.empty() : tensor<8x6xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<8x6xf32>) -> tensor<8x6xf32>
  %y = linalg.matmul {soap.config = #soap.config<degrees = [2, 1, 1], devices = [0, 1]>}
      ins(%x, %w : tensor<8x4xf32>, tensor<4x6xf32>) outs(%f0 : tensor<8x6xf32>) -> tensor<8x6xf32>
  %e1 = tensor.empty() : tensor<8xf32>
  %f1 = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<8xf32>) -> tensor<8xf32>
  %m = linalg.generic {indexing_maps = [#map, #row], iterator_types = ["parallel", "reduction"]}
      ins(%y : tensor<8x6xf32>) outs(%f1 : tensor<8xf32>)
      attrs = {soap.config = #soap.config<degrees = [1, 2], devices = [0, 1]>} {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8xf32>) -> tensor<8xf32>
  %s = linalg.generic {indexing_maps = [#map, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%y, %m : tensor<8x6xf32>, tensor<8xf32>) outs(%f2 : tensor<8xf32>)
      attrs = {soap.config = #soap.config<degrees = [1, 2], devices = [0, 1]>} {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %d = arith.subf %a, %b : f32
    %e = math.exp %d : f32
    %r = arith.addf %acc, %e : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %e3 = tensor.empty() : tensor<8xf32>
  %lse = linalg.generic {indexing_maps = [#vec, #vec, #vec], iterator_types = ["parallel"]}
      ins(%s, %m : tensor<8xf32>, tensor<8xf32>) outs(%e3 : tensor<8xf32>)
      attrs = {soap.config = #soap.config<degrees = [2], devices = [0, 1]>} {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %l = math.log %a : f32
    %r = arith.addf %l, %b : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %e4 = tensor.empty() : tensor<f32>
  %f4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#vec, #all], iterator_types = ["reduction"]}
      ins(%lse : tensor<8xf32>) outs(%f4 : tensor<f32>)
      attrs = {soap.config = #soap.config<degrees = [1], devices = [0]>} {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %acc, %a : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}

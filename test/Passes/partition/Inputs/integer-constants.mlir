// Integer tables sliced on device 1 and read on [0, 1] (torch-mlir BERT's
// position and token type ids: an iota table and a table of zeros): the
// slices carry no gradient, and the slice of the zeros is a splat the
// partitioner rebuilds where it is read.
#map = affine_map<(d0, d1) -> (d0, d1)>
#all = affine_map<(d0, d1) -> ()>
func.func @loss(%w: tensor<1x4xf32> {soap.param, soap.name = "w"}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %iota = arith.constant dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>
  %zeros = arith.constant dense<0> : tensor<1x8xi64>
  %ids = tensor.extract_slice %iota[0, 0] [1, 4] [1, 1]
      {soap.config = #soap.config<degrees = [1, 1], devices = [1]>} : tensor<1x8xi64> to tensor<1x4xi64>
  %types = tensor.extract_slice %zeros[0, 0] [1, 4] [1, 1]
      {soap.config = #soap.config<degrees = [1, 1], devices = [1]>} : tensor<1x8xi64> to tensor<1x4xi64>
  %e = tensor.empty() : tensor<1x4xf32>
  %t = linalg.generic {indexing_maps = [#map, #map, #map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%w, %ids, %types : tensor<1x4xf32>, tensor<1x4xi64>, tensor<1x4xi64>) outs(%e : tensor<1x4xf32>)
      attrs = {soap.config = #soap.config<degrees = [1, 2], devices = [0, 1]>} {
  ^bb0(%a: f32, %i: i64, %j: i64, %o: f32):
    %k = arith.addi %i, %j : i64
    %f = arith.sitofp %k : i64 to f32
    %y = arith.mulf %a, %f : f32
    %q = arith.mulf %y, %y : f32
    linalg.yield %q : f32
  } -> tensor<1x4xf32>
  %e3 = tensor.empty() : tensor<f32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#map, #all], iterator_types = ["reduction", "reduction"]}
      ins(%t : tensor<1x4xf32>) outs(%f3 : tensor<f32>)
      attrs = {soap.config = #soap.config<degrees = [1, 2], devices = [0, 1]>} {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}

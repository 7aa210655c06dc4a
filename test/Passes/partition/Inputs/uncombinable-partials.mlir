// A softmax whose max also yields its index (torch-mlir's aten.max.dim):
// two outputs, so the partial results of a split of its reduction loop
// cannot be combined. Its config splits that loop on [0, 1].
#map = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>
#all = affine_map<(d0, d1) -> ()>
func.func @loss(%w: tensor<6x8xf32> {soap.param, soap.name = "w"},
                %x: tensor<4x6xf32> {soap.name = "input"}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c0 = arith.constant 0 : i64
  %e1 = tensor.empty() : tensor<4x8xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %h = linalg.matmul {soap.config = #soap.config<degrees = [1, 2, 1], devices = [0, 1]>}
      ins(%x, %w : tensor<4x6xf32>, tensor<6x8xf32>) outs(%f1 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %em = tensor.empty() : tensor<4x1xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%em : tensor<4x1xf32>) -> tensor<4x1xf32>
  %ei = tensor.empty() : tensor<4x1xi64>
  %fi = linalg.fill ins(%c0 : i64) outs(%ei : tensor<4x1xi64>) -> tensor<4x1xi64>
  %m:2 = linalg.generic {indexing_maps = [#map, #row, #row],
                         iterator_types = ["parallel", "reduction"]}
      ins(%h : tensor<4x8xf32>) outs(%fm, %fi : tensor<4x1xf32>, tensor<4x1xi64>)
      attrs = {soap.config = #soap.config<degrees = [1, 2], devices = [0, 1]>} {
  ^bb0(%a: f32, %mx: f32, %ix: i64):
    %j = linalg.index 1 : index
    %jj = arith.index_cast %j : index to i64
    %y = arith.maximumf %a, %mx : f32
    %gt = arith.cmpf ogt, %a, %mx : f32
    %k = arith.select %gt, %jj, %ix : i64
    linalg.yield %y, %k : f32, i64
  } -> (tensor<4x1xf32>, tensor<4x1xi64>)
  %s = linalg.generic {indexing_maps = [#map, #row, #map],
                       iterator_types = ["parallel", "parallel"]}
      ins(%h, %m#0 : tensor<4x8xf32>, tensor<4x1xf32>) outs(%e1 : tensor<4x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [1, 2], devices = [0, 1]>} {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %q = math.exp %d : f32
    linalg.yield %q : f32
  } -> tensor<4x8xf32>
  %e3 = tensor.empty() : tensor<f32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#map, #all], iterator_types = ["reduction", "reduction"]}
      ins(%s : tensor<4x8xf32>) outs(%f3 : tensor<f32>)
      attrs = {soap.config = #soap.config<degrees = [1, 2], devices = [0, 1]>} {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.addf %acc, %a : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}

// A value computed whole on every device (a layer norm) read by three
// products and an elementwise op, as BERT's attention reads its input: the
// key's product (rows on [0, 1]) and the value's (rows, two tasks on
// device 0) accumulate the gradient so far in place, and so does the
// query's, which splits its output columns over two tasks on device 0:
// its input gradient is a split reduction, each task reading the sum so
// far, brought once to device 0, whole (the partitioner materializes it
// for the first task and keeps it for the second). The sum, two partials
// on device 0, then goes whole to device 1 for the replicated producer.
#map = affine_map<(d0, d1) -> (d0, d1)>
#all = affine_map<(d0, d1) -> ()>
func.func @loss(%wq: tensor<8x8xf32> {soap.param, soap.name = "wq"},
                %wk: tensor<8x8xf32> {soap.param, soap.name = "wk"},
                %wv: tensor<8x8xf32> {soap.param, soap.name = "wv"},
                %s0: tensor<8x8xf32> {soap.param, soap.name = "scale"},
                %x: tensor<8x8xf32> {soap.name = "input"}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %h = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%x, %s0 : tensor<8x8xf32>, tensor<8x8xf32>) outs(%e : tensor<8x8xf32>)
      attrs = {soap.replicated} {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %y = math.tanh %m : f32
    linalg.yield %y : f32
  } -> tensor<8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %q = linalg.matmul {soap.config = #soap.config<degrees = [1, 2, 1], devices = [0, 0]>}
      ins(%h, %wq : tensor<8x8xf32>, tensor<8x8xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  %k = linalg.matmul {soap.config = #soap.config<degrees = [2, 1, 1], devices = [0, 1]>}
      ins(%h, %wk : tensor<8x8xf32>, tensor<8x8xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  %v = linalg.matmul {soap.config = #soap.config<degrees = [2, 1, 1], devices = [0, 0]>}
      ins(%h, %wv : tensor<8x8xf32>, tensor<8x8xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  %s = linalg.generic {indexing_maps = [#map, #map, #map, #map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%q, %k, %v, %h : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) outs(%e : tensor<8x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %b: f32, %c: f32, %d: f32, %o: f32):
    %ab = arith.mulf %a, %b : f32
    %abc = arith.addf %ab, %c : f32
    %dd = arith.mulf %d, %d : f32
    %t = arith.addf %abc, %dd : f32
    linalg.yield %t : f32
  } -> tensor<8x8xf32>
  %e3 = tensor.empty() : tensor<f32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#map, #all], iterator_types = ["reduction", "reduction"]}
      ins(%s : tensor<8x8xf32>) outs(%f3 : tensor<f32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %acc: f32):
    %q2 = arith.mulf %a, %a : f32
    %t = arith.addf %acc, %q2 : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}

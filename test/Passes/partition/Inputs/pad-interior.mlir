// A pad split along the batch between a product and a max pooling split
// along the channels. The pad's backward reads the interior of the
// pooling's input gradient (channels split) with the batch split: the
// interior alone is re-split (each device slices it out of its part, then
// an all_to_all), not gathered whole with its padding.
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#chw = affine_map<(d0, d1, d2, d3) -> (d1, d2, d3)>
#all = affine_map<(d0, d1, d2, d3) -> ()>
func.func @loss(%w: tensor<4x6x6xf32> {soap.param, soap.name = "w"},
                %x: tensor<4x4x6x6xf32> {soap.name = "input"}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e1 = tensor.empty() : tensor<4x4x6x6xf32>
  %h = linalg.generic {indexing_maps = [#map, #chw, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %w : tensor<4x4x6x6xf32>, tensor<4x6x6xf32>) outs(%e1 : tensor<4x4x6x6xf32>)
      attrs = {soap.config = #soap.config<degrees = [1, 2, 1, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %y = arith.mulf %a, %b : f32
    linalg.yield %y : f32
  } -> tensor<4x4x6x6xf32>
  %p = tensor.pad %h low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %ninf : f32
  } {soap.config = #soap.config<degrees = [2, 1, 1, 1], devices = [0, 1]>} : tensor<4x4x6x6xf32> to tensor<4x4x8x8xf32>
  %win = tensor.empty() : tensor<3x3xf32>
  %e2 = tensor.empty() : tensor<4x4x6x6xf32>
  %f2 = linalg.fill ins(%ninf : f32) outs(%e2 : tensor<4x4x6x6xf32>) -> tensor<4x4x6x6xf32>
  %m = linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>,
                                soap.config = #soap.config<degrees = [1, 2, 1, 1, 1, 1], devices = [0, 1]>}
      ins(%p, %win : tensor<4x4x8x8xf32>, tensor<3x3xf32>) outs(%f2 : tensor<4x4x6x6xf32>) -> tensor<4x4x6x6xf32>
  %e3 = tensor.empty() : tensor<f32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#map, #all], iterator_types = ["reduction", "reduction", "reduction", "reduction"]}
      ins(%m : tensor<4x4x6x6xf32>) outs(%f3 : tensor<f32>)
      attrs = {soap.config = #soap.config<degrees = [1, 2, 1, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.addf %acc, %a : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}

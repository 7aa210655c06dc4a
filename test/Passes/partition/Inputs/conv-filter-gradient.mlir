// A strided convolution split along its output columns on devices [0, 1],
// read by a ReLU split along the batch: the forward moves the output from
// columns to samples (an all_to_all), and the backward moves the ReLU's
// gradient back to the convolution's columns, where each device computes
// the partial filter gradient of its columns (reading the input's columns
// with their halo) before the parameter's all_reduce.
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#all = affine_map<(d0, d1, d2, d3) -> ()>
func.func @loss(%w: tensor<4x2x3x3xf32> {soap.param, soap.name = "conv.weight"},
                %x: tensor<4x2x9x9xf32> {soap.name = "input"}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<4x4x4x4xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x4x4x4xf32>) -> tensor<4x4x4x4xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>,
                                 soap.config = #soap.config<degrees = [1, 1, 1, 2, 1, 1, 1], devices = [0, 1]>}
      ins(%x, %w : tensor<4x2x9x9xf32>, tensor<4x2x3x3xf32>) outs(%f1 : tensor<4x4x4x4xf32>) -> tensor<4x4x4x4xf32>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%c : tensor<4x4x4x4xf32>) outs(%e1 : tensor<4x4x4x4xf32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1, 1, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %o: f32):
    %gt = arith.cmpf ugt, %a, %zero : f32
    %y = arith.select %gt, %a, %zero : f32
    linalg.yield %y : f32
  } -> tensor<4x4x4x4xf32>
  %e2 = tensor.empty() : tensor<f32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#map, #all], iterator_types = ["reduction", "reduction", "reduction", "reduction"]}
      ins(%r : tensor<4x4x4x4xf32>) outs(%f2 : tensor<f32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1, 1, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.mulf %a, %a : f32
    %t = arith.addf %acc, %s : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}

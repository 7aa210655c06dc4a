// A stride-2 convolution whose windows reach rows and columns 0-4 of a
// 6x6 input, split along its output rows on [1, 0], reading a ReLU split
// along the rows on [0, 1]. The training step trims the input to 5x5 for
// the filter gradient (an extract_slice without a config, then a lazy
// transpose); the partitioner takes each task's block of the trimmed
// input from where the forward pass brought it, as the simulator's
// backward task reads it, instead of gathering the whole input again.
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#all = affine_map<(d0, d1, d2, d3) -> ()>
func.func @loss(%k: tensor<8x3x3x3xf32> {soap.param, soap.name = "k"},
                %x: tensor<4x3x6x6xf32> {soap.name = "input"}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3x6x6xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<4x3x6x6xf32>) outs(%e : tensor<4x3x6x6xf32>)
      attrs = {soap.config = #soap.config<degrees = [1, 1, 2, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<4x3x6x6xf32>
  %e1 = tensor.empty() : tensor<4x8x2x2xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x8x2x2xf32>) -> tensor<4x8x2x2xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>,
                                 soap.config = #soap.config<degrees = [1, 1, 2, 1, 1, 1, 1], devices = [1, 0]>}
      ins(%r, %k : tensor<4x3x6x6xf32>, tensor<8x3x3x3xf32>) outs(%f1 : tensor<4x8x2x2xf32>) -> tensor<4x8x2x2xf32>
  %e3 = tensor.empty() : tensor<f32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#id, #all], iterator_types = ["reduction", "reduction", "reduction", "reduction"]}
      ins(%c : tensor<4x8x2x2xf32>) outs(%f3 : tensor<f32>)
      attrs = {soap.config = #soap.config<degrees = [1, 1, 2, 1], devices = [1, 0]>} {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.mulf %a, %a : f32
    %t = arith.addf %acc, %s : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}

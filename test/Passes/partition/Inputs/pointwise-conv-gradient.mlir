// A pointwise (1x1, stride 1) convolution split along its output rows and
// its input channels (partial sums of the output) on devices [0, 1, 2, 3],
// its input split along the rows and columns, the loss along the batch.
// The training step reads the adjoint itself for the input gradient (a
// 1x1 window needs no spread): each device computes its forward task's
// part of the gradient, its rows of its input channels.
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d1)>
#all = affine_map<(d0, d1, d2, d3) -> ()>
func.func @loss(%w: tensor<6x4x1x1xf32> {soap.param, soap.name = "conv.weight"},
                %s: tensor<4xf32> {soap.param, soap.name = "scale"},
                %x0: tensor<4x4x8x8xf32> {soap.name = "input"}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %ex = tensor.empty() : tensor<4x4x8x8xf32>
  %x = linalg.generic {indexing_maps = [#map, #ch, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x0, %s : tensor<4x4x8x8xf32>, tensor<4xf32>) outs(%ex : tensor<4x4x8x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [1, 1, 2, 2], devices = [0, 1, 2, 3]>} {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %t = math.tanh %m : f32
    linalg.yield %t : f32
  } -> tensor<4x4x8x8xf32>
  %e1 = tensor.empty() : tensor<4x6x8x8xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x6x8x8xf32>) -> tensor<4x6x8x8xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>,
                                 soap.config = #soap.config<degrees = [1, 1, 2, 1, 2, 1, 1], devices = [0, 1, 2, 3]>}
      ins(%x, %w : tensor<4x4x8x8xf32>, tensor<6x4x1x1xf32>) outs(%f1 : tensor<4x6x8x8xf32>) -> tensor<4x6x8x8xf32>
  %e2 = tensor.empty() : tensor<f32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#map, #all], iterator_types = ["reduction", "reduction", "reduction", "reduction"]}
      ins(%c : tensor<4x6x8x8xf32>) outs(%f2 : tensor<f32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1, 1, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %acc: f32):
    %q = arith.mulf %a, %a : f32
    %t = arith.addf %acc, %q : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}

// A padded convolution split along its output columns on devices [1, 0]
// after a pad run whole on every device: the pad's gradient slice takes
// the interior of the convolution's partial input gradient, each device
// receiving only the other's overlap with it (lib/layout's
// SendRecvCombine); before, the partial sums were first completed whole
// everywhere (an all-reduce of the padded tensor), then sliced.
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d1)>
#all = affine_map<(d0, d1, d2, d3) -> ()>
func.func @loss(%w: tensor<4x2x3x3xf32> {soap.param, soap.name = "conv.weight"},
                %s: tensor<2xf32> {soap.param, soap.name = "scale"},
                %x0: tensor<4x2x8x8xf32> {soap.name = "input"}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %ex = tensor.empty() : tensor<4x2x8x8xf32>
  %x = linalg.generic {indexing_maps = [#map, #ch, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x0, %s : tensor<4x2x8x8xf32>, tensor<2xf32>) outs(%ex : tensor<4x2x8x8xf32>)
      attrs = {soap.config = #soap.config<degrees = [1, 1, 2, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<4x2x8x8xf32>
  %xp = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %zero : f32
  } {soap.replicated} : tensor<4x2x8x8xf32> to tensor<4x2x10x10xf32>
  %e1 = tensor.empty() : tensor<4x4x8x8xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x4x8x8xf32>) -> tensor<4x4x8x8xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>,
                                 soap.config = #soap.config<degrees = [1, 1, 1, 2, 1, 1, 1], devices = [1, 0]>}
      ins(%xp, %w : tensor<4x2x10x10xf32>, tensor<4x2x3x3xf32>) outs(%f1 : tensor<4x4x8x8xf32>) -> tensor<4x4x8x8xf32>
  %e2 = tensor.empty() : tensor<f32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#map, #all], iterator_types = ["reduction", "reduction", "reduction", "reduction"]}
      ins(%c : tensor<4x4x8x8xf32>) outs(%f2 : tensor<f32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1, 1, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %acc: f32):
    %q = arith.mulf %a, %a : f32
    %t = arith.addf %acc, %q : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}

// A padded, dilated convolution split along its window's rows and
// columns: 6 tasks on 4 devices [3, 2, 1, 0, 0, 1] (two on devices 0 and
// 1), its input split along rows and columns, the pad along the channels,
// the loss on device 0.
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d1)>
#all = affine_map<(d0, d1, d2, d3) -> ()>
func.func @loss(%w: tensor<4x2x4x3xf32> {soap.param, soap.name = "conv.weight"},
                %s: tensor<2xf32> {soap.param, soap.name = "scale"},
                %x0: tensor<4x2x10x10xf32> {soap.name = "input"}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %ex = tensor.empty() : tensor<4x2x10x10xf32>
  %x = linalg.generic {indexing_maps = [#map, #ch, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x0, %s : tensor<4x2x10x10xf32>, tensor<2xf32>) outs(%ex : tensor<4x2x10x10xf32>)
      attrs = {soap.config = #soap.config<degrees = [1, 1, 2, 2], devices = [0, 1, 2, 3]>} {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<4x2x10x10xf32>
  %xp = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %zero : f32
  } {soap.config = #soap.config<degrees = [1, 2, 1, 1], devices = [2, 3]>} : tensor<4x2x10x10xf32> to tensor<4x2x12x12xf32>
  %e1 = tensor.empty() : tensor<4x4x6x8xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x4x6x8xf32>) -> tensor<4x4x6x8xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<2> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>,
                                 soap.config = #soap.config<degrees = [1, 1, 1, 1, 1, 2, 3], devices = [3, 2, 1, 0, 0, 1]>}
      ins(%xp, %w : tensor<4x2x12x12xf32>, tensor<4x2x4x3xf32>) outs(%f1 : tensor<4x4x6x8xf32>) -> tensor<4x4x6x8xf32>
  %e2 = tensor.empty() : tensor<f32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#map, #all], iterator_types = ["reduction", "reduction", "reduction", "reduction"]}
      ins(%c : tensor<4x4x6x8xf32>) outs(%f2 : tensor<f32>)
      attrs = {soap.config = #soap.config<degrees = [1, 1, 1, 1], devices = [0]>} {
  ^bb0(%a: f32, %acc: f32):
    %q = arith.mulf %a, %a : f32
    %t = arith.addf %acc, %q : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}

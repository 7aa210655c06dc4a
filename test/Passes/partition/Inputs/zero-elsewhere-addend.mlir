// A ReLU read by a 1x1 convolution of stride 2 (its input gradient is zero
// in the rows and columns the windows skip) and by a pad, the pad and the
// convolutions on the devices in the other order. The two gradients add up
// where the ReLU's backward work runs: each moves there, as the simulator
// moves each reader's gradient to its producer.
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#chw = affine_map<(d0, d1, d2, d3) -> (d1, d2, d3)>
#all = affine_map<(d0, d1, d2, d3) -> ()>
func.func @loss(%p: tensor<4x4x4xf32> {soap.param, soap.name = "p"},
                %w: tensor<4x4x1x1xf32> {soap.param, soap.name = "w"},
                %w2: tensor<4x4x3x3xf32> {soap.param, soap.name = "w2"},
                %x: tensor<4x4x4x4xf32> {soap.name = "input"}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4x4x4xf32>
  %h = linalg.generic {indexing_maps = [#map, #chw, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %p : tensor<4x4x4x4xf32>, tensor<4x4x4xf32>) outs(%e : tensor<4x4x4x4xf32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1, 1, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %y = arith.maximumf %m, %zero : f32
    linalg.yield %y : f32
  } -> tensor<4x4x4x4xf32>
  %ed = tensor.empty() : tensor<4x4x2x2xf32>
  %fd = linalg.fill ins(%zero : f32) outs(%ed : tensor<4x4x2x2xf32>) -> tensor<4x4x2x2xf32>
  %d = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>,
                                 soap.config = #soap.config<degrees = [2, 1, 1, 1, 1, 1, 1], devices = [1, 0]>}
      ins(%h, %w : tensor<4x4x4x4xf32>, tensor<4x4x1x1xf32>) outs(%fd : tensor<4x4x2x2xf32>) -> tensor<4x4x2x2xf32>
  %hp = tensor.pad %h low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } {soap.config = #soap.config<degrees = [2, 1, 1, 1], devices = [1, 0]>} : tensor<4x4x4x4xf32> to tensor<4x4x6x6xf32>
  %fc = linalg.fill ins(%zero : f32) outs(%ed : tensor<4x4x2x2xf32>) -> tensor<4x4x2x2xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>,
                                 soap.config = #soap.config<degrees = [2, 1, 1, 1, 1, 1, 1], devices = [1, 0]>}
      ins(%hp, %w2 : tensor<4x4x6x6xf32>, tensor<4x4x3x3xf32>) outs(%fc : tensor<4x4x2x2xf32>) -> tensor<4x4x2x2xf32>
  %s = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%d, %c : tensor<4x4x2x2xf32>, tensor<4x4x2x2xf32>) outs(%ed : tensor<4x4x2x2xf32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1, 1, 1], devices = [1, 0]>} {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %y = arith.mulf %a, %b : f32
    linalg.yield %y : f32
  } -> tensor<4x4x2x2xf32>
  %e3 = tensor.empty() : tensor<f32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#map, #all], iterator_types = ["reduction", "reduction", "reduction", "reduction"]}
      ins(%s : tensor<4x4x2x2xf32>) outs(%f3 : tensor<f32>)
      attrs = {soap.config = #soap.config<degrees = [2, 1, 1, 1], devices = [1, 0]>} {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.addf %acc, %a : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}

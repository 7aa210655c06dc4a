// A convolution and a max pooling without padding, both split along their
// output rows on 2 devices: each pooling task reads rows of the convolution
// output that the other device computed (a halo).
#map4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @forward(%w: tensor<4x1x3x3xf32> {soap.param, soap.name = "conv.weight"},
                   %fc: tensor<144x3xf32> {soap.param, soap.name = "fc.weight"},
                   %x: tensor<2x1x10x8xf32> {soap.name = "input"}) -> tensor<2x3xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e1 = tensor.empty() : tensor<2x4x8x6xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x4x8x6xf32>) -> tensor<2x4x8x6xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>,
                                 soap.config = #soap.config<degrees = [1, 1, 2, 1, 1, 1, 1], devices = [0, 1]>}
      ins(%x, %w : tensor<2x1x10x8xf32>, tensor<4x1x3x3xf32>) outs(%f1 : tensor<2x4x8x6xf32>) -> tensor<2x4x8x6xf32>
  %r = linalg.generic {indexing_maps = [#map4, #map4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%c : tensor<2x4x8x6xf32>) outs(%e1 : tensor<2x4x8x6xf32>)
      attrs = {soap.config = #soap.config<degrees = [1, 1, 2, 1], devices = [0, 1]>} {
  ^bb0(%a: f32, %o: f32):
    %gt = arith.cmpf ugt, %a, %zero : f32
    %y = arith.select %gt, %a, %zero : f32
    linalg.yield %y : f32
  } -> tensor<2x4x8x6xf32>
  %window = tensor.empty() : tensor<3x1xf32>
  %e2 = tensor.empty() : tensor<2x4x6x6xf32>
  %f2 = linalg.fill ins(%ninf : f32) outs(%e2 : tensor<2x4x6x6xf32>) -> tensor<2x4x6x6xf32>
  %p = linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>,
                                soap.config = #soap.config<degrees = [1, 1, 2, 1, 1, 1], devices = [0, 1]>}
      ins(%r, %window : tensor<2x4x8x6xf32>, tensor<3x1xf32>) outs(%f2 : tensor<2x4x6x6xf32>) -> tensor<2x4x6x6xf32>
  %flat = tensor.collapse_shape %p [[0], [1, 2, 3]] : tensor<2x4x6x6xf32> into tensor<2x144xf32>
  %e3 = tensor.empty() : tensor<2x3xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<2x3xf32>) -> tensor<2x3xf32>
  %logits = linalg.matmul ins(%flat, %fc : tensor<2x144xf32>, tensor<144x3xf32>) outs(%f3 : tensor<2x3xf32>) -> tensor<2x3xf32>
  return %logits : tensor<2x3xf32>
}

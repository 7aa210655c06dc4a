// A small NHWC network of the layers real exports use and the zoo does not:
// an NHWC/HWCF convolution with stride 2, a depthwise NHWC convolution with
// dilation, NHWC max pooling, and a classifier; weights are parameters.
#map4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#c4 = affine_map<(d0, d1, d2, d3) -> (d3)>
func.func @forward(%w1: tensor<3x3x3x8xf32> {soap.param, soap.name = "conv.weight"},
                   %b1: tensor<8xf32> {soap.param, soap.name = "conv.bias"},
                   %w2: tensor<3x3x8xf32> {soap.param, soap.name = "dw.weight"},
                   %fc: tensor<32x10xf32> {soap.param, soap.name = "fc.weight"},
                   %x: tensor<4x12x12x3xf32> {soap.name = "input"}) -> tensor<4x10xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e1 = tensor.empty() : tensor<4x5x5x8xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x5x5x8xf32>) -> tensor<4x5x5x8xf32>
  %c1 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w1 : tensor<4x12x12x3xf32>, tensor<3x3x3x8xf32>) outs(%f1 : tensor<4x5x5x8xf32>) -> tensor<4x5x5x8xf32>
  %r1 = linalg.generic {indexing_maps = [#map4, #c4, #map4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%c1, %b1 : tensor<4x5x5x8xf32>, tensor<8xf32>) outs(%e1 : tensor<4x5x5x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    %gt = arith.cmpf ugt, %s, %zero : f32
    %r = arith.select %gt, %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x5x5x8xf32>
  %padded = tensor.pad %r1 low[0, 2, 2, 0] high[0, 2, 2, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %zero : f32
  } : tensor<4x5x5x8xf32> to tensor<4x9x9x8xf32>
  %e2 = tensor.empty() : tensor<4x5x5x8xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4x5x5x8xf32>) -> tensor<4x5x5x8xf32>
  %c2 = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<2> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%padded, %w2 : tensor<4x9x9x8xf32>, tensor<3x3x8xf32>) outs(%f2 : tensor<4x5x5x8xf32>) -> tensor<4x5x5x8xf32>
  %window = tensor.empty() : tensor<2x2xf32>
  %e3 = tensor.empty() : tensor<4x2x2x8xf32>
  %f3 = linalg.fill ins(%ninf : f32) outs(%e3 : tensor<4x2x2x8xf32>) -> tensor<4x2x2x8xf32>
  %p = linalg.pooling_nhwc_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%c2, %window : tensor<4x5x5x8xf32>, tensor<2x2xf32>) outs(%f3 : tensor<4x2x2x8xf32>) -> tensor<4x2x2x8xf32>
  %flat = tensor.collapse_shape %p [[0], [1, 2, 3]] : tensor<4x2x2x8xf32> into tensor<4x32xf32>
  %e4 = tensor.empty() : tensor<4x10xf32>
  %f4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<4x10xf32>) -> tensor<4x10xf32>
  %logits = linalg.matmul ins(%flat, %fc : tensor<4x32xf32>, tensor<32x10xf32>) outs(%f4 : tensor<4x10xf32>) -> tensor<4x10xf32>
  return %logits : tensor<4x10xf32>
}

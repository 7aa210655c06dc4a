// Grouped and depthwise convolutions, a model to differentiate: an NCHW
// depthwise convolution (stride 2, dilation 2 along H), a grouped NGCHW
// convolution (2 groups of 3 -> 4 channels) and an NHWC depthwise
// convolution with a channel multiplier of 2.
module {
  func.func @forward(%w1: tensor<6x3x3xf32> {soap.param, soap.name = "w1", soap.init = "fan-in"},
                     %w2: tensor<2x4x3x3x3xf32> {soap.param, soap.name = "w2", soap.init = "fan-in"},
                     %w3: tensor<1x2x8x2xf32> {soap.param, soap.name = "w3", soap.init = "fan-in"},
                     %x: tensor<2x6x11x12xf32>) -> tensor<2x2x2x8x2xf32> {
    %zero = arith.constant 0.0 : f32
    %e1 = tensor.empty() : tensor<2x6x4x5xf32>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x6x4x5xf32>) -> tensor<2x6x4x5xf32>
    %y1 = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<[2, 1]> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
        ins(%x, %w1 : tensor<2x6x11x12xf32>, tensor<6x3x3xf32>) outs(%z1 : tensor<2x6x4x5xf32>) -> tensor<2x6x4x5xf32>
    %g = tensor.expand_shape %y1 [[0], [1, 2], [3], [4]] output_shape [2, 2, 3, 4, 5] : tensor<2x6x4x5xf32> into tensor<2x2x3x4x5xf32>
    %e2 = tensor.empty() : tensor<2x2x4x2x3xf32>
    %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x2x4x2x3xf32>) -> tensor<2x2x4x2x3xf32>
    %y2 = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
        ins(%g, %w2 : tensor<2x2x3x4x5xf32>, tensor<2x4x3x3x3xf32>) outs(%z2 : tensor<2x2x4x2x3xf32>) -> tensor<2x2x4x2x3xf32>
    %c = tensor.collapse_shape %y2 [[0], [1, 2], [3], [4]] : tensor<2x2x4x2x3xf32> into tensor<2x8x2x3xf32>
    %et = tensor.empty() : tensor<2x2x3x8xf32>
    %t = linalg.transpose ins(%c : tensor<2x8x2x3xf32>) outs(%et : tensor<2x2x3x8xf32>) permutation = [0, 2, 3, 1]
    %e3 = tensor.empty() : tensor<2x2x2x8x2xf32>
    %z3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<2x2x2x8x2xf32>) -> tensor<2x2x2x8x2xf32>
    %y3 = linalg.depthwise_conv_2d_nhwc_hwcm {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
        ins(%t, %w3 : tensor<2x2x3x8xf32>, tensor<1x2x8x2xf32>) outs(%z3 : tensor<2x2x2x8x2xf32>) -> tensor<2x2x2x8x2xf32>
    return %y3 : tensor<2x2x2x8x2xf32>
  }
}

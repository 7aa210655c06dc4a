// Two NHWC/HWCF convolutions, a model to differentiate: the autodiff
// writes the second one's input gradient as a linalg.generic that reads
// the flipped filter and the spread adjoint (the image last) beside the
// differentiated operand, which its body does not read.
module {
  func.func @forward(%w: tensor<3x3x4x8xf32> {soap.param, soap.name = "w", soap.init = "fan-in"}, %w2: tensor<3x3x8x8xf32> {soap.param, soap.name = "w2", soap.init = "fan-in"}, %x: tensor<2x10x10x4xf32>) -> tensor<2x6x6x8xf32> {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<2x8x8x8xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x8x8x8xf32>) -> tensor<2x8x8x8xf32>
    %y = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<2x10x10x4xf32>, tensor<3x3x4x8xf32>) outs(%z : tensor<2x8x8x8xf32>) -> tensor<2x8x8x8xf32>
    %e2 = tensor.empty() : tensor<2x6x6x8xf32>
    %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x6x6x8xf32>) -> tensor<2x6x6x8xf32>
    %y2 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%y, %w2 : tensor<2x8x8x8xf32>, tensor<3x3x8x8xf32>) outs(%z2 : tensor<2x6x6x8xf32>) -> tensor<2x6x6x8xf32>
    return %y2 : tensor<2x6x6x8xf32>
  }
}

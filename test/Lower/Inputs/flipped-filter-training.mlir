// Unit-stride convolutions whose input gradients read the forward filter
// flipped (windows reversed, channels swapped): a padded 3x3 convolution
// and an unpadded dilated one; the first convolution's input is data (no
// gradient).
module {
  func.func @forward(%w1: tensor<8x4x3x3xf32> {soap.param, soap.name = "w1", soap.init = "fan-in"},
                     %w2: tensor<8x8x3x3xf32> {soap.param, soap.name = "w2", soap.init = "fan-in"},
                     %w3: tensor<6x8x3x3xf32> {soap.param, soap.name = "w3", soap.init = "fan-in"},
                     %x: tensor<2x4x9x9xf32>) -> tensor<2x6x3x3xf32> {
    %zero = arith.constant 0.0 : f32
    %e1 = tensor.empty() : tensor<2x8x7x7xf32>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x8x7x7xf32>) -> tensor<2x8x7x7xf32>
    %y1 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
        ins(%x, %w1 : tensor<2x4x9x9xf32>, tensor<8x4x3x3xf32>) outs(%z1 : tensor<2x8x7x7xf32>) -> tensor<2x8x7x7xf32>
    %p1 = tensor.pad %y1 low[0, 0, 1, 1] high[0, 0, 1, 1] {
    ^bb0(%a: index, %b: index, %c: index, %d: index):
      tensor.yield %zero : f32
    } : tensor<2x8x7x7xf32> to tensor<2x8x9x9xf32>
    %e2 = tensor.empty() : tensor<2x8x7x7xf32>
    %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x8x7x7xf32>) -> tensor<2x8x7x7xf32>
    %y2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
        ins(%p1, %w2 : tensor<2x8x9x9xf32>, tensor<8x8x3x3xf32>) outs(%z2 : tensor<2x8x7x7xf32>) -> tensor<2x8x7x7xf32>
    %e3 = tensor.empty() : tensor<2x6x3x3xf32>
    %z3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<2x6x3x3xf32>) -> tensor<2x6x3x3xf32>
    %y3 = linalg.conv_2d_nchw_fchw {dilations = dense<2> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
        ins(%y2, %w3 : tensor<2x8x7x7xf32>, tensor<6x8x3x3xf32>) outs(%z3 : tensor<2x6x3x3xf32>) -> tensor<2x6x3x3xf32>
    return %y3 : tensor<2x6x3x3xf32>
  }
}

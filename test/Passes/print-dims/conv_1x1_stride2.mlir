// RUN: soap-opt %s --soap-print-dims="show-cost=true" -o /dev/null 2>&1 | FileCheck %s --implicit-check-not=remark:

// A ResNet downsampling shortcut: a 1x1 convolution with stride 2 (NHWC),
// 14x14 -> 7x7. Unlike a 3x3 window, the windows do not overlap: only the
// even rows and columns of the input are read.
//
// flops = 2 * n*oh*ow*f*kh*kw*c = 2 * 4*7*7*16*1*1*8 = 50176
// input rows 2*oh for oh < 7 -> 7 of 14 (and 7 columns): 4*7*7*8*4 = 6272
// filter 1*1*8*16*4 = 512; init read by the body 4*7*7*16*4 = 12544;
// result 12544. bytes = 6272 + 512 + 12544 + 12544 = 31872
// CHECK: remark: dims n:4:sample oh:7:attribute ow:7:attribute f:16:parameter kh:1:reduction kw:1:reduction c:8:reduction flops=50176 bytes=31872{{$}}
// CHECK-NEXT: linalg.conv_2d_nhwc_hwcf
func.func @shortcut(%x: tensor<4x14x14x8xf32>, %w: tensor<1x1x8x16xf32> {soap.param},
                    %acc: tensor<4x7x7x16xf32>) -> tensor<4x7x7x16xf32> {
  %y = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>,
                                 strides = dense<2> : tensor<2xi64>}
         ins(%x, %w : tensor<4x14x14x8xf32>, tensor<1x1x8x16xf32>)
         outs(%acc : tensor<4x7x7x16xf32>) -> tensor<4x7x7x16xf32>
  return %y : tensor<4x7x7x16xf32>
}

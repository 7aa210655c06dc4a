// RUN: soap-opt %s --soap-print-dims="show-cost=true" -o /dev/null 2>&1 | FileCheck %s --implicit-check-not=remark:

// A depthwise 3x3 convolution (MobileNet style): the channel loop indexes the
// input, the filter and the output, so it is a parameter loop (named c since
// there is no separate input channel), not a reduction.
//
// flops = 2 (mul+add) * n*oh*ow*c*kh*kw = 2 * 2*14*14*32*3*3 = 225792
// input 2*16*16*32*4 = 65536 (oh + kh covers all 16 rows); filter 3*3*32*4 =
// 1152; init read by the body 2*14*14*32*4 = 50176; result 50176.
// bytes = 65536 + 1152 + 50176 + 50176 = 167040
// CHECK: remark: dims n:2:sample oh:14:attribute ow:14:attribute c:32:parameter kh:3:reduction kw:3:reduction flops=225792 bytes=167040{{$}}
// CHECK-NEXT: linalg.depthwise_conv_2d_nhwc_hwc
// CHECK-NOT: not partitionable
func.func @dwconv(%x: tensor<2x16x16x32xf32>, %w: tensor<3x3x32xf32> {soap.param},
                  %acc: tensor<2x14x14x32xf32>) -> tensor<2x14x14x32xf32> {
  %y = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>,
                                          strides = dense<1> : tensor<2xi64>}
         ins(%x, %w : tensor<2x16x16x32xf32>, tensor<3x3x32xf32>)
         outs(%acc : tensor<2x14x14x32xf32>) -> tensor<2x14x14x32xf32>
  return %y : tensor<2x14x14x32xf32>
}

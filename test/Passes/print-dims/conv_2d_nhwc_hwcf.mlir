// RUN: soap-opt %s --soap-print-dims="show-cost=true" -o /dev/null 2>&1 | FileCheck %s --implicit-check-not=remark:

// A channels-last 3x3 convolution (stride 1, no padding): 14x14 -> 12x12.
// The loops are (n, oh, ow, f, kh, kw, c) and are printed in that order.
//
// flops = 2 (mul+add) * 4*12*12*16*3*3*8 = 1327104
// input rows touched: oh + kh for oh < 12, kh < 3 -> 14 (the whole input):
//   4*14*14*8*4 = 25088
// filter 3*3*8*16*4 = 4608; init read by the body 4*12*12*16*4 = 36864;
// result 36864. bytes = 25088 + 4608 + 36864 + 36864 = 103424
// CHECK: remark: dims n:4:sample oh:12:attribute ow:12:attribute f:16:parameter kh:3:reduction kw:3:reduction c:8:reduction flops=1327104 bytes=103424{{$}}
// CHECK-NEXT: linalg.conv_2d_nhwc_hwcf
// CHECK-NOT: not partitionable
func.func @conv(%x: tensor<4x14x14x8xf32>, %w: tensor<3x3x8x16xf32> {soap.param},
                %acc: tensor<4x12x12x16xf32>) -> tensor<4x12x12x16xf32> {
  %y = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>,
                                 strides = dense<1> : tensor<2xi64>}
         ins(%x, %w : tensor<4x14x14x8xf32>, tensor<3x3x8x16xf32>)
         outs(%acc : tensor<4x12x12x16xf32>) -> tensor<4x12x12x16xf32>
  return %y : tensor<4x12x12x16xf32>
}

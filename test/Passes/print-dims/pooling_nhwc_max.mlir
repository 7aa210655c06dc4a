// RUN: soap-opt %s --soap-print-dims="show-cost=true" -o /dev/null 2>&1 | FileCheck %s --implicit-check-not=remark:

// 3x3 max pooling, stride 1, channels last: 8x8 -> 6x6. The loops are
// (n, oh, ow, c, kh, kw). The window operand only carries the window shape
// and moves no bytes.

// CHECK: remark: dims d0:3:attribute d1:3:attribute flops=0 bytes=0{{$}}
// CHECK-NEXT: %window = tensor.empty
//
// flops = 1 (max) * 2*6*6*16*3*3 = 10368
// input (oh + kh covers all 8 rows) 2*8*8*16*4 = 8192; init read by the body
// 2*6*6*16*4 = 4608; result 4608; window 0. bytes = 8192 + 4608 + 4608 = 17408
// CHECK: remark: dims n:2:sample oh:6:attribute ow:6:attribute c:16:attribute kh:3:reduction kw:3:reduction flops=10368 bytes=17408{{$}}
// CHECK-NEXT: linalg.pooling_nhwc_max
// CHECK-NOT: not partitionable
func.func @maxpool(%x: tensor<2x8x8x16xf32>,
                   %acc: tensor<2x6x6x16xf32>) -> tensor<2x6x6x16xf32> {
  %window = tensor.empty() : tensor<3x3xf32>
  %y = linalg.pooling_nhwc_max {dilations = dense<1> : tensor<2xi64>,
                                strides = dense<1> : tensor<2xi64>}
         ins(%x, %window : tensor<2x8x8x16xf32>, tensor<3x3xf32>)
         outs(%acc : tensor<2x6x6x16xf32>) -> tensor<2x6x6x16xf32>
  return %y : tensor<2x6x6x16xf32>
}

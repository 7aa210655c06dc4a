// RUN: soap-opt %s --soap-print-dims="show-cost=true" -o /dev/null 2>&1 | FileCheck %s --implicit-check-not=remark:

// 2x2 sum pooling with stride 2, channels last: 8x8 -> 4x4. The window
// operand only carries the window shape and moves no bytes.

// CHECK: remark: dims d0:2:attribute d1:2:attribute flops=0 bytes=0{{$}}
// CHECK-NEXT: %window = tensor.empty
//
// flops = 1 (add) * 2*4*4*16*2*2 = 2048
// input rows 2*oh + kh for oh < 4, kh < 2 -> 8 (all): 2*8*8*16*4 = 8192;
// init read by the body 2*4*4*16*4 = 2048; result 2048; window 0.
// bytes = 8192 + 2048 + 2048 = 12288
// CHECK: remark: dims n:2:sample oh:4:attribute ow:4:attribute c:16:attribute kh:2:reduction kw:2:reduction flops=2048 bytes=12288{{$}}
// CHECK-NEXT: linalg.pooling_nhwc_sum
// CHECK-NOT: not partitionable
func.func @sumpool(%x: tensor<2x8x8x16xf32>,
                   %acc: tensor<2x4x4x16xf32>) -> tensor<2x4x4x16xf32> {
  %window = tensor.empty() : tensor<2x2xf32>
  %y = linalg.pooling_nhwc_sum {dilations = dense<1> : tensor<2xi64>,
                                strides = dense<2> : tensor<2xi64>}
         ins(%x, %window : tensor<2x8x8x16xf32>, tensor<2x2xf32>)
         outs(%acc : tensor<2x4x4x16xf32>) -> tensor<2x4x4x16xf32>
  return %y : tensor<2x4x4x16xf32>
}

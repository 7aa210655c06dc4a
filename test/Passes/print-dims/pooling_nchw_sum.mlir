// RUN: soap-opt %s --soap-print-dims="show-cost=true" -o /dev/null 2>&1 | FileCheck %s --implicit-check-not=remark:

// Global sum pooling (the numerator of a global average pool) over a 7x7
// NCHW feature map; the accumulator is a function argument. The window
// operand only carries the window shape and moves no bytes.

// CHECK: remark: dims d0:7:attribute d1:7:attribute flops=0 bytes=0{{$}}
// CHECK-NEXT: %window = tensor.empty
//
// flops = 1 (add) * n*c*oh*ow*kh*kw = 8*64*1*1*7*7 = 25088
// input 8*64*7*7*4 = 100352; init read by the body 8*64*1*1*4 = 2048;
// result 2048; window 0. bytes = 100352 + 2048 + 2048 = 104448
// CHECK: remark: dims n:8:sample c:64:attribute oh:1:attribute ow:1:attribute kh:7:reduction kw:7:reduction flops=25088 bytes=104448{{$}}
// CHECK-NEXT: linalg.pooling_nchw_sum
// CHECK-NOT: not partitionable
func.func @global_sum(%x: tensor<8x64x7x7xf32>,
                      %acc: tensor<8x64x1x1xf32>) -> tensor<8x64x1x1xf32> {
  %window = tensor.empty() : tensor<7x7xf32>
  %y = linalg.pooling_nchw_sum {dilations = dense<1> : tensor<2xi64>,
                                strides = dense<1> : tensor<2xi64>}
         ins(%x, %window : tensor<8x64x7x7xf32>, tensor<7x7xf32>)
         outs(%acc : tensor<8x64x1x1xf32>) -> tensor<8x64x1x1xf32>
  return %y : tensor<8x64x1x1xf32>
}

// RUN: soap-opt %s --soap-print-dims="show-cost=true" -o /dev/null 2>&1 | FileCheck %s --implicit-check-not=remark:

// 2x2 max pooling with stride 2 (NCHW), initialised with -inf. Pooling has no
// weights: its channel loop is a second batch-like loop, named c, and is an
// attribute. The window operand only carries the window shape: the body never
// reads it, so it moves no bytes.

// CHECK: remark: dims d0:8:sample d1:16:attribute d2:16:attribute d3:16:attribute flops=0 bytes=0{{$}}
// CHECK-NEXT: %init = tensor.empty
//
// fill writes 8*16*16*16*4 = 131072.
// CHECK: remark: dims d0:8:sample d1:16:attribute d2:16:attribute d3:16:attribute flops=0 bytes=131072{{$}}
// CHECK-NEXT: %acc = linalg.fill
//
// The window tensor is an allocation: no bytes.
// CHECK: remark: dims d0:2:attribute d1:2:attribute flops=0 bytes=0{{$}}
// CHECK-NEXT: %window = tensor.empty
//
// flops = 1 (max) * n*c*oh*ow*kh*kw = 8*16*16*16*2*2 = 131072
// input rows 2*oh + kh for oh < 16, kh < 2 -> 32 (all): 8*16*32*32*4 = 524288
// init read by the body (max with the running value) 8*16*16*16*4 = 131072;
// result 131072; window 0. bytes = 524288 + 131072 + 131072 = 786432
// CHECK: remark: dims n:8:sample c:16:attribute oh:16:attribute ow:16:attribute kh:2:reduction kw:2:reduction flops=131072 bytes=786432{{$}}
// CHECK-NEXT: linalg.pooling_nchw_max
// CHECK-NOT: not partitionable
func.func @maxpool(%x: tensor<8x16x32x32xf32>) -> tensor<8x16x16x16xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %init = tensor.empty() : tensor<8x16x16x16xf32>
  %acc = linalg.fill ins(%ninf : f32) outs(%init : tensor<8x16x16x16xf32>) -> tensor<8x16x16x16xf32>
  %window = tensor.empty() : tensor<2x2xf32>
  %y = linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>,
                                strides = dense<2> : tensor<2xi64>}
         ins(%x, %window : tensor<8x16x32x32xf32>, tensor<2x2xf32>)
         outs(%acc : tensor<8x16x16x16xf32>) -> tensor<8x16x16x16xf32>
  return %y : tensor<8x16x16x16xf32>
}

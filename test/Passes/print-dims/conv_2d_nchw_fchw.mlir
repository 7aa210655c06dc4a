// RUN: soap-opt %s --soap-print-dims="show-cost=true" -o /dev/null 2>&1 | FileCheck %s --implicit-check-not=remark:

// A strided 3x3 convolution on a zero-padded NCHW input, initialised by a
// fill of an empty tensor. The batch flows back from the convolution into
// the fill and the empty tensor.

// tensor.pad 8x3x32x32 -> 8x3x34x34 (low 1, high 1): reads the whole source
// 8*3*32*32*4 = 98304, writes 8*3*34*34*4 = 110976; total 209280.
// CHECK: remark: dims d0:8:sample d1:3:attribute d2:34:attribute d3:34:attribute flops=0 bytes=209280{{$}}
// CHECK-NEXT: %padded = tensor.pad
//
// tensor.empty moves no bytes.
// CHECK: remark: dims d0:8:sample d1:16:attribute d2:16:attribute d3:16:attribute flops=0 bytes=0{{$}}
// CHECK-NEXT: %init = tensor.empty
//
// linalg.fill: no arithmetic, its init is not read; writes 8*16*16*16*4 = 131072.
// CHECK: remark: dims d0:8:sample d1:16:attribute d2:16:attribute d3:16:attribute flops=0 bytes=131072{{$}}
// CHECK-NEXT: %acc = linalg.fill
//
// Convolution, stride 2: out = (34 - 3) / 2 + 1 = 16.
// flops = 2 (mul+add) * n*f*oh*ow*c*kh*kw = 2 * 8*16*16*16*3*3*3 = 1769472
// input rows touched: 2*oh + kh for oh < 16, kh < 3 -> 0..32, 33 rows (and
// 33 columns): 8*3*33*33*4 = 104544
// filter 16*3*3*3*4 = 1728; init read by the body 8*16*16*16*4 = 131072;
// result 131072. bytes = 104544 + 1728 + 131072 + 131072 = 368416
// CHECK: remark: dims n:8:sample f:16:parameter oh:16:attribute ow:16:attribute c:3:reduction kh:3:reduction kw:3:reduction flops=1769472 bytes=368416{{$}}
// CHECK-NEXT: %y = linalg.conv_2d_nchw_fchw
// CHECK-NOT: not partitionable
func.func @conv(%x: tensor<8x3x32x32xf32>,
                %w: tensor<16x3x3x3xf32> {soap.param}) -> tensor<8x16x16x16xf32> {
  %zero = arith.constant 0.0 : f32
  %padded = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<8x3x32x32xf32> to tensor<8x3x34x34xf32>
  %init = tensor.empty() : tensor<8x16x16x16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<8x16x16x16xf32>) -> tensor<8x16x16x16xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>,
                                 strides = dense<2> : tensor<2xi64>}
         ins(%padded, %w : tensor<8x3x34x34xf32>, tensor<16x3x3x3xf32>)
         outs(%acc : tensor<8x16x16x16xf32>) -> tensor<8x16x16x16xf32>
  return %y : tensor<8x16x16x16xf32>
}

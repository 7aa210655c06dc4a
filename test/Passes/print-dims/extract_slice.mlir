// RUN: soap-opt %s --soap-print-dims="show-cost=true" -o /dev/null 2>&1 | FileCheck %s --implicit-check-not=remark:

// Slices read the part of the source they cover and write the result; the
// loops run over the result.

// The key part of a fused QKV projection (columns 768..1535 of 2304):
// bytes = read 8*768*4 (24576) + write 24576 = 49152
// CHECK: remark: dims d0:8:sample d1:768:attribute flops=0 bytes=49152{{$}}
// CHECK-NEXT: tensor.extract_slice
//
// Rank-reducing: the CLS token of each sequence, 8x128x768 -> 8x768. The
// dropped dimension is fixed at 0 and reads one row per sample:
// bytes = read 8*1*768*4 (24576) + write 24576 = 49152
// CHECK: remark: dims d0:8:sample d1:768:attribute flops=0 bytes=49152{{$}}
// CHECK-NEXT: tensor.extract_slice
//
// Strided: every other pixel (stride 2) of 8x3x32x32 -> 8x3x16x16. The slice
// touches 16 of the 32 rows and columns:
// bytes = read 8*3*16*16*4 (24576) + write 24576 = 49152
// CHECK: remark: dims d0:8:sample d1:3:attribute d2:16:attribute d3:16:attribute flops=0 bytes=49152{{$}}
// CHECK-NEXT: tensor.extract_slice
// CHECK-NOT: not partitionable
func.func @key(%qkv: tensor<8x2304xf32>) -> tensor<8x768xf32> {
  %k = tensor.extract_slice %qkv[0, 768] [8, 768] [1, 1]
         : tensor<8x2304xf32> to tensor<8x768xf32>
  return %k : tensor<8x768xf32>
}

func.func @cls_token(%h: tensor<8x128x768xf32>) -> tensor<8x768xf32> {
  %cls = tensor.extract_slice %h[0, 0, 0] [8, 1, 768] [1, 1, 1]
           : tensor<8x128x768xf32> to tensor<8x768xf32>
  return %cls : tensor<8x768xf32>
}

func.func @subsample(%x: tensor<8x3x32x32xf32>) -> tensor<8x3x16x16xf32> {
  %y = tensor.extract_slice %x[0, 0, 0, 0] [8, 3, 16, 16] [1, 1, 2, 2]
         : tensor<8x3x32x32xf32> to tensor<8x3x16x16xf32>
  return %y : tensor<8x3x16x16xf32>
}

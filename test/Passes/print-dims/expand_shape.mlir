// RUN: soap-opt %s --soap-print-dims="show-cost=true" -o /dev/null 2>&1 | FileCheck %s --implicit-check-not=remark:

// Splitting the hidden size into 12 heads of 64: the loops run over the
// expanded shape; a reshape is a view and moves no bytes.

// CHECK: remark: dims d0:8:sample d1:12:attribute d2:64:attribute flops=0 bytes=0{{$}}
// CHECK-NEXT: tensor.expand_shape
//
// Splitting the batch itself (8 -> 2x4 micro-batches): the source's batch
// index is d0 * 4 + d1, whose outermost loop d0 is the sample loop.
// CHECK: remark: dims d0:2:sample d1:4:attribute d2:768:attribute flops=0 bytes=0{{$}}
// CHECK-NEXT: tensor.expand_shape
// CHECK-NOT: not partitionable
func.func @heads(%x: tensor<8x768xf32>) -> tensor<8x12x64xf32> {
  %y = tensor.expand_shape %x [[0], [1, 2]] output_shape [8, 12, 64]
         : tensor<8x768xf32> into tensor<8x12x64xf32>
  return %y : tensor<8x12x64xf32>
}

func.func @micro_batches(%x: tensor<8x768xf32>) -> tensor<2x4x768xf32> {
  %y = tensor.expand_shape %x [[0, 1], [2]] output_shape [2, 4, 768]
         : tensor<8x768xf32> into tensor<2x4x768xf32>
  return %y : tensor<2x4x768xf32>
}

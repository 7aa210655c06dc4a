// RUN: soap-opt %s --soap-print-dims="show-cost=true" -o /dev/null 2>&1 | FileCheck %s --implicit-check-not=remark:

// Flattening feature maps before a classifier: the loops run over the source
// (the finer shape); a reshape is a view and moves no bytes.

// CHECK: remark: dims d0:8:sample d1:16:attribute d2:4:attribute d3:4:attribute flops=0 bytes=0{{$}}
// CHECK-NEXT: tensor.collapse_shape
//
// Merging the batch with the sequence (4x128 -> 512 tokens): the batch is
// still the source's dimension 0, so d0 is the sample loop.
// CHECK: remark: dims d0:4:sample d1:128:attribute d2:64:attribute flops=0 bytes=0{{$}}
// CHECK-NEXT: tensor.collapse_shape
// CHECK-NOT: not partitionable
func.func @flatten(%x: tensor<8x16x4x4xf32>) -> tensor<8x256xf32> {
  %y = tensor.collapse_shape %x [[0], [1, 2, 3]]
         : tensor<8x16x4x4xf32> into tensor<8x256xf32>
  return %y : tensor<8x256xf32>
}

func.func @tokens(%x: tensor<4x128x64xf32>) -> tensor<512x64xf32> {
  %y = tensor.collapse_shape %x [[0, 1], [2]]
         : tensor<4x128x64xf32> into tensor<512x64xf32>
  return %y : tensor<512x64xf32>
}

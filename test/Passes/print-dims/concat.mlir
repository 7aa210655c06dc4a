// RUN: soap-opt %s --soap-print-dims="show-cost=true" -o /dev/null 2>&1 | FileCheck %s --implicit-check-not=remark:

// Concatenation of feature vectors (DenseNet / Inception style): every result
// element comes from exactly one input element.
//
// along dim 1: 4x16 ++ 4x48 -> 4x64
// bytes = read 4*16*4 (256) + 4*48*4 (768) + write 4*64*4 (1024) = 2048
// CHECK: remark: dims d0:4:sample d1:64:attribute flops=0 bytes=2048{{$}}
// CHECK-NEXT: tensor.concat
//
// along the batch, dim 0: 4x16 ++ 2x16 -> 6x16; d0 is the sample loop.
// bytes = read 4*16*4 (256) + 2*16*4 (128) + write 6*16*4 (384) = 768
// CHECK: remark: dims d0:6:sample d1:16:attribute flops=0 bytes=768{{$}}
// CHECK-NEXT: tensor.concat
// CHECK-NOT: not partitionable
func.func @features(%a: tensor<4x16xf32>, %b: tensor<4x48xf32>) -> tensor<4x64xf32> {
  %y = tensor.concat dim(1) %a, %b : (tensor<4x16xf32>, tensor<4x48xf32>) -> tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}

func.func @batches(%a: tensor<4x16xf32>, %b: tensor<2x16xf32>) -> tensor<6x16xf32> {
  %y = tensor.concat dim(0) %a, %b : (tensor<4x16xf32>, tensor<2x16xf32>) -> tensor<6x16xf32>
  return %y : tensor<6x16xf32>
}

// RUN: soap-opt %s --soap-print-dims="show-cost=true" -o /dev/null 2>&1 | FileCheck %s --implicit-check-not=remark:

// Transposes of activations: a swap of the two inner dimensions keeps the
// batch in loop d0; moving the batch to dimension 1 makes d1 the sample loop.
// A transpose does no arithmetic and reads and writes every element once:
// bytes = 2 * 8*16*64*4 = 65536.

// CHECK: remark: dims d0:8:sample d1:64:attribute d2:16:attribute flops=0 bytes=0{{$}}
// CHECK-NEXT: %e1 = tensor.empty
// CHECK: remark: dims d0:8:sample d1:64:attribute d2:16:attribute flops=0 bytes=65536{{$}}
// CHECK-NEXT: %t1 = linalg.transpose
// CHECK: remark: dims d0:16:attribute d1:8:sample d2:64:attribute flops=0 bytes=0{{$}}
// CHECK-NEXT: %e2 = tensor.empty
// CHECK: remark: dims d0:16:attribute d1:8:sample d2:64:attribute flops=0 bytes=65536{{$}}
// CHECK-NEXT: %t2 = linalg.transpose
// CHECK-NOT: not partitionable
func.func @transposes(%x: tensor<8x16x64xf32>)
    -> (tensor<8x64x16xf32>, tensor<16x8x64xf32>) {
  %e1 = tensor.empty() : tensor<8x64x16xf32>
  %t1 = linalg.transpose ins(%x : tensor<8x16x64xf32>)
                         outs(%e1 : tensor<8x64x16xf32>) permutation = [0, 2, 1]
  %e2 = tensor.empty() : tensor<16x8x64xf32>
  %t2 = linalg.transpose ins(%x : tensor<8x16x64xf32>)
                         outs(%e2 : tensor<16x8x64xf32>) permutation = [1, 0, 2]
  return %t1, %t2 : tensor<8x64x16xf32>, tensor<16x8x64xf32>
}

// RUN: soap-opt %s --soap-print-dims="show-cost=true" -o /dev/null 2>&1 | FileCheck %s --implicit-check-not=remark:

// Attention scores Q * K^T per sample: both operands are activations, so the
// batch loop is the sample, m and n are attributes and k is contracted.
//
// flops = 2 (mul+add) * b*m*n*k = 2 * 4*128*128*64 = 8388608
// bytes = q 4*128*64*4 (131072) + kt 4*64*128*4 (131072)
//       + init read by the body 4*128*128*4 (262144) + result (262144)
//       = 786432
// CHECK: remark: dims b:4:sample m:128:attribute n:128:attribute k:64:reduction flops=8388608 bytes=786432{{$}}
// CHECK-NEXT: linalg.batch_matmul
// CHECK-NOT: not partitionable
func.func @scores(%q: tensor<4x128x64xf32>, %kt: tensor<4x64x128xf32>,
                  %acc: tensor<4x128x128xf32>) -> tensor<4x128x128xf32> {
  %0 = linalg.batch_matmul ins(%q, %kt : tensor<4x128x64xf32>, tensor<4x64x128xf32>)
                           outs(%acc : tensor<4x128x128xf32>) -> tensor<4x128x128xf32>
  return %0 : tensor<4x128x128xf32>
}

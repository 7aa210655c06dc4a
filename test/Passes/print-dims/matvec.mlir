// RUN: soap-opt %s --soap-print-dims="show-cost=true" -o /dev/null 2>&1 | FileCheck %s --implicit-check-not=remark:

// Linear regression prediction y = X w: the rows of X are the samples and the
// weight vector is a parameter indexed only by the contracted loop.
//
// flops = 2 (mul+add) * m*k = 2 * 64*512 = 65536
// bytes = X 64*512*4 (131072) + w 512*4 (2048)
//       + init read by the body 64*4 (256) + result 64*4 (256) = 133632
// CHECK: remark: dims m:64:sample k:512:reduction flops=65536 bytes=133632{{$}}
// CHECK-NEXT: linalg.matvec
// CHECK-NOT: not partitionable
func.func @predict(%x: tensor<64x512xf32>, %w: tensor<512xf32> {soap.param},
                   %acc: tensor<64xf32>) -> tensor<64xf32> {
  %0 = linalg.matvec ins(%x, %w : tensor<64x512xf32>, tensor<512xf32>)
                     outs(%acc : tensor<64xf32>) -> tensor<64xf32>
  return %0 : tensor<64xf32>
}

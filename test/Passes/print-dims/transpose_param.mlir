// RUN: soap-opt %s --soap-print-dims="show-cost=true" -o /dev/null 2>&1 | FileCheck %s --implicit-check-not=remark:

// A PyTorch-style linear layer: the 256x784 weight is transposed before the
// matmul. The transpose reads only a parameter, so both its loops are
// parameter loops and its result is a parameter too.

// CHECK: remark: dims d0:784:attribute d1:256:attribute flops=0 bytes=0{{$}}
// CHECK-NEXT: %wt_init = tensor.empty
//
// transpose: bytes = w 256*784*4 (802816) + result 802816 = 1605632
// CHECK: remark: dims d0:784:parameter d1:256:parameter flops=0 bytes=1605632{{$}}
// CHECK-NEXT: %wt = linalg.transpose
//
// matmul: flops = 2 * 64*256*784 = 25690112
// bytes = x 64*784*4 (200704) + wt 802816 + init read 64*256*4 (65536)
//       + result 65536 = 1134592
// CHECK: remark: dims m:64:sample n:256:parameter k:784:reduction flops=25690112 bytes=1134592{{$}}
// CHECK-NEXT: linalg.matmul
// CHECK-NOT: not partitionable
func.func @linear(%x: tensor<64x784xf32>, %w: tensor<256x784xf32> {soap.param},
                  %acc: tensor<64x256xf32>) -> tensor<64x256xf32> {
  %wt_init = tensor.empty() : tensor<784x256xf32>
  %wt = linalg.transpose ins(%w : tensor<256x784xf32>)
                         outs(%wt_init : tensor<784x256xf32>) permutation = [1, 0]
  %y = linalg.matmul ins(%x, %wt : tensor<64x784xf32>, tensor<784x256xf32>)
                     outs(%acc : tensor<64x256xf32>) -> tensor<64x256xf32>
  return %y : tensor<64x256xf32>
}

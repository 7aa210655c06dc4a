// RUN: soap-opt %s --soap-print-dims="show-cost=true" -o /dev/null 2>&1 | FileCheck %s

// CHECK: remark: dims m:64:sample n:256:parameter k:784:reduction flops=25690112 bytes=1134592
func.func @matmul(%x: tensor<64x784xf32>, %w: tensor<784x256xf32> {soap.param},
                  %init: tensor<64x256xf32>) -> tensor<64x256xf32> {
  %0 = linalg.matmul ins(%x, %w : tensor<64x784xf32>, tensor<784x256xf32>)
                     outs(%init : tensor<64x256xf32>) -> tensor<64x256xf32>
  return %0 : tensor<64x256xf32>
}

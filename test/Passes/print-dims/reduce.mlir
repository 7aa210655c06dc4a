// RUN: soap-opt %s --soap-print-dims="show-cost=true" -o /dev/null 2>&1 | FileCheck %s --implicit-check-not=remark:

// Row sums with linalg.reduce over dimension 1 into a zero-filled
// accumulator, which the reduction body reads.

// CHECK: remark: dims d0:16:sample flops=0 bytes=0{{$}}
// CHECK-NEXT: %e = tensor.empty
// CHECK: remark: dims d0:16:sample flops=0 bytes=64{{$}}
// CHECK-NEXT: %acc = linalg.fill
//
// flops = 1 (add) * 16*10 = 160
// bytes = x 16*10*4 (640) + init read 16*4 (64) + result 64 = 768
// CHECK: remark: dims d0:16:sample d1:10:reduction flops=160 bytes=768{{$}}
// CHECK-NEXT: %sum = linalg.reduce
// CHECK-NOT: not partitionable
func.func @row_sum(%x: tensor<16x10xf32>) -> tensor<16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<16xf32>) -> tensor<16xf32>
  %sum = linalg.reduce ins(%x : tensor<16x10xf32>) outs(%acc : tensor<16xf32>)
           dimensions = [1]
    (%in: f32, %init: f32) {
      %s = arith.addf %in, %init : f32
      linalg.yield %s : f32
    }
  return %sum : tensor<16xf32>
}

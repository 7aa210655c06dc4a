// RUN: soap-opt %s --soap-print-dims="show-cost=true" -o /dev/null 2>&1 | FileCheck %s --implicit-check-not=remark:

// A zero-filled matmul accumulator: the fill does no arithmetic and does not
// read its init; it gets the batch from the matmul that consumes it, but not
// the parameter (it reads no weight).

// CHECK: remark: dims d0:16:sample d1:10:attribute flops=0 bytes=0{{$}}
// CHECK-NEXT: %init = tensor.empty
//
// fill: bytes = result 16*10*4 = 640
// CHECK: remark: dims d0:16:sample d1:10:attribute flops=0 bytes=640{{$}}
// CHECK-NEXT: %acc = linalg.fill
//
// matmul: flops = 2 * 16*10*100 = 32000
// bytes = x 16*100*4 (6400) + w 100*10*4 (4000) + init 640 + result 640
//       = 11680
// CHECK: remark: dims m:16:sample n:10:parameter k:100:reduction flops=32000 bytes=11680{{$}}
// CHECK-NEXT: linalg.matmul
//
// A fill nobody consumes, on a tensor that is not an input: no batch.
// CHECK: remark: dims d0:3:attribute d1:5:attribute flops=0 bytes=0{{$}}
// CHECK-NEXT: %e = tensor.empty
// CHECK: remark: dims d0:3:attribute d1:5:attribute flops=0 bytes=60{{$}}
// CHECK-NEXT: %ones = linalg.fill
// CHECK-NOT: not partitionable
func.func @logits(%x: tensor<16x100xf32>,
                  %w: tensor<100x10xf32> {soap.param}) -> tensor<16x10xf32> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<16x10xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<16x10xf32>) -> tensor<16x10xf32>
  %y = linalg.matmul ins(%x, %w : tensor<16x100xf32>, tensor<100x10xf32>)
                     outs(%acc : tensor<16x10xf32>) -> tensor<16x10xf32>
  return %y : tensor<16x10xf32>
}

func.func @ones() -> tensor<3x5xf32> {
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<3x5xf32>
  %ones = linalg.fill ins(%one : f32) outs(%e : tensor<3x5xf32>) -> tensor<3x5xf32>
  return %ones : tensor<3x5xf32>
}

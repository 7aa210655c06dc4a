// RUN: soap-opt %s --soap-print-dims="show-cost=true" -o /dev/null 2>&1 | FileCheck %s --implicit-check-not=remark:

// Asymmetric "same" padding of an NHWC map (low 1, high 2 in H and W):
// 2x5x5x8 -> 2x8x8x8. The loops run over the result; the whole source is read
// and the whole result written.
//
// bytes = read 2*5*5*8*4 (1600) + write 2*8*8*8*4 (4096) = 5696
// CHECK: remark: dims d0:2:sample d1:8:attribute d2:8:attribute d3:8:attribute flops=0 bytes=5696{{$}}
// CHECK-NEXT: tensor.pad
// CHECK-NOT: not partitionable
func.func @pad(%x: tensor<2x5x5x8xf32>) -> tensor<2x8x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %y = tensor.pad %x low[0, 1, 1, 0] high[0, 2, 2, 0] {
  ^bb0(%n: index, %h: index, %w: index, %c: index):
    tensor.yield %zero : f32
  } : tensor<2x5x5x8xf32> to tensor<2x8x8x8xf32>
  return %y : tensor<2x8x8x8xf32>
}

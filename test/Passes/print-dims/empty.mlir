// RUN: soap-opt %s --soap-print-dims="show-cost=true" -o /dev/null 2>&1 | FileCheck %s --implicit-check-not=remark:

// tensor.empty is an allocation: it moves no bytes and does no arithmetic.
// Its loops take the batch of the op that fills it (here a copy of the input,
// through the generic's unread init).

// CHECK: remark: dims d0:4:sample d1:32:attribute flops=0 bytes=0{{$}}
// CHECK-NEXT: %e = tensor.empty
//
// copy: bytes = read 4*32*2 (256, f16) + write 256 = 512
// CHECK: remark: dims d0:4:sample d1:32:attribute flops=0 bytes=512{{$}}
// CHECK-NEXT: %y = linalg.generic
//
// An empty tensor that no input reaches has no sample loop.
// CHECK: remark: dims d0:3:attribute d1:7:attribute d2:5:attribute flops=0 bytes=0{{$}}
// CHECK-NEXT: %scratch = tensor.empty
// CHECK-NOT: not partitionable
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @copy(%x: tensor<4x32xf16>) -> tensor<4x32xf16> {
  %e = tensor.empty() : tensor<4x32xf16>
  %y = linalg.generic {indexing_maps = [#id, #id],
                       iterator_types = ["parallel", "parallel"]}
         ins(%x : tensor<4x32xf16>) outs(%e : tensor<4x32xf16>) {
  ^bb0(%in: f16, %out: f16):
    linalg.yield %in : f16
  } -> tensor<4x32xf16>
  return %y : tensor<4x32xf16>
}

func.func @scratch() -> tensor<3x7x5xf32> {
  %scratch = tensor.empty() : tensor<3x7x5xf32>
  return %scratch : tensor<3x7x5xf32>
}

// RUN: soap-opt %s --soap-print-dims="show-cost=true" -o /dev/null 2>&1 | FileCheck %s --implicit-check-not=remark:

// A sequence-first input (seq, batch, features), as in PyTorch's
// nn.Transformer without batch_first: {soap.batch_dim = 1} makes dimension 1
// the batch. The projection is a linalg.generic contraction; its two output
// loops that index x but not w are m0 (sequence) and m1 (batch).

// CHECK: remark: dims d0:128:attribute d1:8:sample d2:512:attribute flops=0 bytes=0{{$}}
// CHECK-NEXT: %e = tensor.empty
//
// fill: bytes = 128*8*512*4 = 2097152
// CHECK: remark: dims d0:128:attribute d1:8:sample d2:512:attribute flops=0 bytes=2097152{{$}}
// CHECK-NEXT: %acc = linalg.fill
//
// flops = 2 (mul+add) * 128*8*512*512 = 536870912
// bytes = x 128*8*512*4 (2097152) + w 512*512*4 (1048576)
//       + init read 2097152 + result 2097152 = 7340032
// CHECK: remark: dims m0:128:attribute m1:8:sample n:512:parameter k:512:reduction flops=536870912 bytes=7340032{{$}}
// CHECK-NEXT: %y = linalg.generic
//
// Moving to batch-first (batch, seq, features): the batch is loop d0.
// bytes = 2 * 128*8*512*4 = 4194304
// CHECK: remark: dims d0:8:sample d1:128:attribute d2:512:attribute flops=0 bytes=0{{$}}
// CHECK-NEXT: %e2 = tensor.empty
// CHECK: remark: dims d0:8:sample d1:128:attribute d2:512:attribute flops=0 bytes=4194304{{$}}
// CHECK-NEXT: %t = linalg.transpose
// CHECK-NOT: not partitionable
func.func @project(%x: tensor<128x8x512xf32> {soap.batch_dim = 1},
                   %w: tensor<512x512xf32> {soap.param}) -> tensor<8x128x512xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<128x8x512xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<128x8x512xf32>) -> tensor<128x8x512xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(s, b, o, i) -> (s, b, i)>,
                                        affine_map<(s, b, o, i) -> (i, o)>,
                                        affine_map<(s, b, o, i) -> (s, b, o)>],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
         ins(%x, %w : tensor<128x8x512xf32>, tensor<512x512xf32>)
         outs(%acc : tensor<128x8x512xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %out, %p : f32
    linalg.yield %s : f32
  } -> tensor<128x8x512xf32>
  %e2 = tensor.empty() : tensor<8x128x512xf32>
  %t = linalg.transpose ins(%y : tensor<128x8x512xf32>)
                        outs(%e2 : tensor<8x128x512xf32>) permutation = [1, 0, 2]
  return %t : tensor<8x128x512xf32>
}

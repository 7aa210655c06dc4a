// RUN: soap-opt %s --soap-print-dims="show-cost=true" -o /dev/null 2>&1 | FileCheck %s --implicit-check-not=remark:

// The max step of a softmax over 1000 classes: a linalg.generic reducing d1
// into a -inf-filled accumulator, which the body reads.

// CHECK: remark: dims d0:32:sample flops=0 bytes=0{{$}}
// CHECK-NEXT: %init = tensor.empty
//
// fill writes 32*4 = 128
// CHECK: remark: dims d0:32:sample flops=0 bytes=128{{$}}
// CHECK-NEXT: %acc = linalg.fill
//
// flops = 1 (max) * 32*1000 = 32000
// bytes = logits 32*1000*4 (128000) + init read 32*4 (128) + result 128
//       = 128256
// CHECK: remark: dims d0:32:sample d1:1000:reduction flops=32000 bytes=128256{{$}}
// CHECK-NEXT: %max = linalg.generic
//
// A row sum of exp(x - max) reads both the logits and the row maximum.
// CHECK: remark: dims d0:32:sample flops=0 bytes=128{{$}}
// CHECK-NEXT: %acc2 = linalg.fill
//
// flops = 3 (sub, exp, add) * 32*1000 = 96000
// bytes = logits 128000 + max 32*4 (128) + init read 128 + result 128
//       = 128384
// CHECK: remark: dims d0:32:sample d1:1000:reduction flops=96000 bytes=128384{{$}}
// CHECK-NEXT: %sum = linalg.generic
// CHECK-NOT: not partitionable
func.func @softmax_denominator(%logits: tensor<32x1000xf32>) -> tensor<32xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<32xf32>
  %acc = linalg.fill ins(%ninf : f32) outs(%init : tensor<32xf32>) -> tensor<32xf32>
  %max = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                          affine_map<(d0, d1) -> (d0)>],
                         iterator_types = ["parallel", "reduction"]}
           ins(%logits : tensor<32x1000xf32>) outs(%acc : tensor<32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %out : f32
    linalg.yield %m : f32
  } -> tensor<32xf32>
  %acc2 = linalg.fill ins(%zero : f32) outs(%init : tensor<32xf32>) -> tensor<32xf32>
  %sum = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                          affine_map<(d0, d1) -> (d0)>,
                                          affine_map<(d0, d1) -> (d0)>],
                         iterator_types = ["parallel", "reduction"]}
           ins(%logits, %max : tensor<32x1000xf32>, tensor<32xf32>)
           outs(%acc2 : tensor<32xf32>) {
  ^bb0(%in: f32, %m: f32, %out: f32):
    %d = arith.subf %in, %m : f32
    %e = math.exp %d : f32
    %s = arith.addf %e, %out : f32
    linalg.yield %s : f32
  } -> tensor<32xf32>
  return %sum : tensor<32xf32>
}

// RUN: soap-opt %s --soap-print-dims="show-cost=true" -o /dev/null 2>&1 | FileCheck %s --implicit-check-not=remark:

// A two-layer MLP on MNIST (784 -> 128 -> 10, batch 32) with a softmax
// cross-entropy loss averaged over the batch. Weights and biases are marked
// parameters; the images and one-hot labels carry the batch in dimension 0.
// Every op's remark is checked, in order.

// Layer 1: x * w1 into a zero-filled accumulator.
// CHECK: remark: dims d0:32:sample d1:128:attribute flops=0 bytes=0{{$}}
// CHECK-NEXT: %e1 = tensor.empty
// fill: 32*128*4 = 16384
// CHECK: remark: dims d0:32:sample d1:128:attribute flops=0 bytes=16384{{$}}
// CHECK-NEXT: %f1 = linalg.fill
// flops = 2 * 32*128*784 = 6422528
// bytes = x 32*784*4 (100352) + w1 784*128*4 (401408) + init 16384
//       + result 16384 = 534528
// CHECK: remark: dims m:32:sample n:128:parameter k:784:reduction flops=6422528 bytes=534528{{$}}
// CHECK-NEXT: %h = linalg.matmul
// bias + ReLU: flops = 2 (add, max) * 32*128 = 8192
// bytes = h 16384 + b1 128*4 (512) + result 16384 = 33280
// CHECK: remark: dims d0:32:sample d1:128:parameter flops=8192 bytes=33280{{$}}
// CHECK-NEXT: %a = linalg.generic
//
// Layer 2.
// CHECK: remark: dims d0:32:sample d1:10:attribute flops=0 bytes=0{{$}}
// CHECK-NEXT: %e2 = tensor.empty
// fill: 32*10*4 = 1280
// CHECK: remark: dims d0:32:sample d1:10:attribute flops=0 bytes=1280{{$}}
// CHECK-NEXT: %f2 = linalg.fill
// flops = 2 * 32*10*128 = 81920
// bytes = a 16384 + w2 128*10*4 (5120) + init 1280 + result 1280 = 24064
// CHECK: remark: dims m:32:sample n:10:parameter k:128:reduction flops=81920 bytes=24064{{$}}
// CHECK-NEXT: %o = linalg.matmul
// bias: flops = 32*10 = 320; bytes = o 1280 + b2 40 + result 1280 = 2600
// CHECK: remark: dims d0:32:sample d1:10:parameter flops=320 bytes=2600{{$}}
// CHECK-NEXT: %logits = linalg.generic
//
// Loss per sample: log(sum(exp(l - max))) + max - sum(labels * l).
// CHECK: remark: dims d0:32:sample flops=0 bytes=0{{$}}
// CHECK-NEXT: %e3 = tensor.empty
// CHECK: remark: dims d0:32:sample flops=0 bytes=128{{$}}
// CHECK-NEXT: %fm = linalg.fill
// row max: flops = 32*10 = 320; bytes = logits 1280 + init 128 + result 128
//          = 1536
// CHECK: remark: dims d0:32:sample d1:10:reduction flops=320 bytes=1536{{$}}
// CHECK-NEXT: %mx = linalg.generic
// CHECK: remark: dims d0:32:sample flops=0 bytes=128{{$}}
// CHECK-NEXT: %fs = linalg.fill
// sum of exp(l - max): flops = 3 (sub, exp, add) * 320 = 960
// bytes = logits 1280 + mx 128 + init 128 + result 128 = 1664
// CHECK: remark: dims d0:32:sample d1:10:reduction flops=960 bytes=1664{{$}}
// CHECK-NEXT: %se = linalg.generic
// CHECK: remark: dims d0:32:sample flops=0 bytes=128{{$}}
// CHECK-NEXT: %fd = linalg.fill
// sum(labels * logits) is a batched dot product (a contraction with batch
// loop b and contracted loop k): flops = 2 * 320 = 640
// bytes = labels 1280 + logits 1280 + init 128 + result 128 = 2816
// CHECK: remark: dims b:32:sample k:10:reduction flops=640 bytes=2816{{$}}
// CHECK-NEXT: %dot = linalg.generic
// flops = 3 (log, add, sub) * 32 = 96
// bytes = se 128 + mx 128 + dot 128 + result 128 = 512 (init not read)
// CHECK: remark: dims d0:32:sample flops=96 bytes=512{{$}}
// CHECK-NEXT: %loss = linalg.generic
//
// Mean over the batch into a 0-d tensor: the sample loop is reduced.
// CHECK: remark: dims (none: a scalar op) flops=0 bytes=0{{$}}
// CHECK-NEXT: %e4 = tensor.empty
// CHECK: remark: dims (none: a scalar op) flops=0 bytes=4{{$}}
// CHECK-NEXT: %f4 = linalg.fill
// flops = 2 (mul by 1/32, add) * 32 = 64; bytes = loss 128 + init 4 + result 4
//       = 136
// CHECK: remark: dims d0:32:reduction flops=64 bytes=136{{$}}
// CHECK-NEXT: %mean = linalg.generic
// CHECK-NOT: not partitionable
#map2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
#col = affine_map<(d0, d1) -> (d0)>
#vec = affine_map<(d0) -> (d0)>
#scalar = affine_map<(d0) -> ()>
func.func @mlp(%x: tensor<32x784xf32>,
               %w1: tensor<784x128xf32> {soap.param},
               %b1: tensor<128xf32> {soap.param},
               %w2: tensor<128x10xf32> {soap.param},
               %b2: tensor<10xf32> {soap.param},
               %labels: tensor<32x10xf32>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %inv_batch = arith.constant 0.03125 : f32

  %e1 = tensor.empty() : tensor<32x128xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<32x128xf32>) -> tensor<32x128xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<32x784xf32>, tensor<784x128xf32>)
                     outs(%f1 : tensor<32x128xf32>) -> tensor<32x128xf32>
  %a = linalg.generic {indexing_maps = [#map2, #row, #map2],
                       iterator_types = ["parallel", "parallel"]}
         ins(%h, %b1 : tensor<32x128xf32>, tensor<128xf32>)
         outs(%e1 : tensor<32x128xf32>) {
  ^bb0(%in: f32, %b: f32, %out: f32):
    %s = arith.addf %in, %b : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<32x128xf32>

  %e2 = tensor.empty() : tensor<32x10xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<32x10xf32>) -> tensor<32x10xf32>
  %o = linalg.matmul ins(%a, %w2 : tensor<32x128xf32>, tensor<128x10xf32>)
                     outs(%f2 : tensor<32x10xf32>) -> tensor<32x10xf32>
  %logits = linalg.generic {indexing_maps = [#map2, #row, #map2],
                            iterator_types = ["parallel", "parallel"]}
              ins(%o, %b2 : tensor<32x10xf32>, tensor<10xf32>)
              outs(%e2 : tensor<32x10xf32>) {
  ^bb0(%in: f32, %b: f32, %out: f32):
    %s = arith.addf %in, %b : f32
    linalg.yield %s : f32
  } -> tensor<32x10xf32>

  %e3 = tensor.empty() : tensor<32xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%e3 : tensor<32xf32>) -> tensor<32xf32>
  %mx = linalg.generic {indexing_maps = [#map2, #col],
                        iterator_types = ["parallel", "reduction"]}
          ins(%logits : tensor<32x10xf32>) outs(%fm : tensor<32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %out : f32
    linalg.yield %m : f32
  } -> tensor<32xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%e3 : tensor<32xf32>) -> tensor<32xf32>
  %se = linalg.generic {indexing_maps = [#map2, #col, #col],
                        iterator_types = ["parallel", "reduction"]}
          ins(%logits, %mx : tensor<32x10xf32>, tensor<32xf32>)
          outs(%fs : tensor<32xf32>) {
  ^bb0(%in: f32, %m: f32, %out: f32):
    %d = arith.subf %in, %m : f32
    %ex = math.exp %d : f32
    %s = arith.addf %ex, %out : f32
    linalg.yield %s : f32
  } -> tensor<32xf32>
  %fd = linalg.fill ins(%zero : f32) outs(%e3 : tensor<32xf32>) -> tensor<32xf32>
  %dot = linalg.generic {indexing_maps = [#map2, #map2, #col],
                         iterator_types = ["parallel", "reduction"]}
           ins(%labels, %logits : tensor<32x10xf32>, tensor<32x10xf32>)
           outs(%fd : tensor<32xf32>) {
  ^bb0(%y: f32, %l: f32, %out: f32):
    %p = arith.mulf %y, %l : f32
    %s = arith.addf %out, %p : f32
    linalg.yield %s : f32
  } -> tensor<32xf32>
  %loss = linalg.generic {indexing_maps = [#vec, #vec, #vec, #vec],
                          iterator_types = ["parallel"]}
            ins(%se, %mx, %dot : tensor<32xf32>, tensor<32xf32>, tensor<32xf32>)
            outs(%e3 : tensor<32xf32>) {
  ^bb0(%s: f32, %m: f32, %d: f32, %out: f32):
    %lg = math.log %s : f32
    %lse = arith.addf %lg, %m : f32
    %l = arith.subf %lse, %d : f32
    linalg.yield %l : f32
  } -> tensor<32xf32>

  %e4 = tensor.empty() : tensor<f32>
  %f4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<f32>) -> tensor<f32>
  %mean = linalg.generic {indexing_maps = [#vec, #scalar],
                          iterator_types = ["reduction"]}
            ins(%loss : tensor<32xf32>) outs(%f4 : tensor<f32>) {
  ^bb0(%in: f32, %out: f32):
    %sc = arith.mulf %in, %inv_batch : f32
    %s = arith.addf %out, %sc : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %mean : tensor<f32>
}

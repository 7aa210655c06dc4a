// RUN: soap-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(soap-tile-transposes))" | FileCheck %s

// An SGD update reading its gradient transposed (128x512 from 512x128, as
// a linear layer's weight gradient after an all-reduce): 16x16 tiles over
// the innermost loop and the loop the gradient reads contiguously.
#id = affine_map<(i, j) -> (i, j)>
#t = affine_map<(i, j) -> (j, i)>
// CHECK-LABEL: func.func @transposed_update
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : index
// CHECK: scf.for %[[I:[a-z0-9_]+]] = %{{.*}} to %{{.*}} step %[[C16]]
// CHECK: scf.for %[[J:[a-z0-9_]+]] = %{{.*}} to %{{.*}} step %[[C16]]
// CHECK-DAG: memref.subview %{{.*}}[%[[I]], %[[J]]] [16, 16] [1, 1] : memref<128x512xf32> to memref<16x16xf32, strided<[512, 1], offset: ?>>
// CHECK-DAG: memref.subview %{{.*}}[%[[J]], %[[I]]] [16, 16] [1, 1] : memref<512x128xf32> to memref<16x16xf32, strided<[128, 1], offset: ?>>
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.*}}, %{{.*}} : memref<16x16xf32, strided<[512, 1], offset: ?>>, memref<16x16xf32, strided<[128, 1], offset: ?>>)
func.func @transposed_update(%p: memref<128x512xf32>, %g: memref<512x128xf32>,
                             %out: memref<128x512xf32>) {
  %lr = arith.constant 0.01 : f32
  linalg.generic {indexing_maps = [#id, #t, #id],
                  iterator_types = ["parallel", "parallel"]}
      ins(%p, %g : memref<128x512xf32>, memref<512x128xf32>)
      outs(%out : memref<128x512xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %0 = arith.mulf %b, %lr : f32
    %1 = arith.subf %a, %0 : f32
    linalg.yield %1 : f32
  }
  return
}

// -----

// Three loops, the last two swapped for the input (a [batch, rows, cols]
// transposing copy): the batch loop in tiles of one, outermost.
#in3 = affine_map<(b, i, j) -> (b, j, i)>
#out3 = affine_map<(b, i, j) -> (b, i, j)>
// CHECK-LABEL: func.func @batched_transpose
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : index
// CHECK: scf.for %{{.*}} step %[[C1]]
// CHECK: scf.for %{{.*}} step %[[C16]]
// CHECK: scf.for %{{.*}} step %[[C16]]
// CHECK: linalg.generic
// CHECK-SAME: memref<1x16x16xf32
func.func @batched_transpose(%x: memref<4x64x96xf32>, %y: memref<4x96x64xf32>) {
  linalg.generic {indexing_maps = [#in3, #out3],
                  iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : memref<4x64x96xf32>) outs(%y : memref<4x96x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  return
}

// -----

// A sum over two batch shards that writes its result transposed (owt's
// weight gradient, foldTransposesIntoSums): the reduction loop runs
// around the tiles, so each element sums in the same order.
#parts = affine_map<(s, i, j) -> (s, i, j)>
#outT = affine_map<(s, i, j) -> (j, i)>
// CHECK-LABEL: func.func @sum_written_transposed
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : index
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %[[C1]]
// CHECK: scf.for %{{.*}} step %[[C16]]
// CHECK: scf.for %{{.*}} step %[[C16]]
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["reduction", "parallel", "parallel"]
// CHECK-SAME: memref<1x16x16xf32
func.func @sum_written_transposed(%p: memref<2x512x128xf32>, %g: memref<128x512xf32>) {
  linalg.generic {indexing_maps = [#parts, #outT],
                  iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%p : memref<2x512x128xf32>) outs(%g : memref<128x512xf32>) {
  ^bb0(%a: f32, %o: f32):
    %0 = arith.addf %o, %a : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// Left alone: every operand read along its rows; a transposed operand
// that fits in the L1 cache (16 KiB); a broadcast of a row (constant along
// the innermost loop); and a reduction.
#id = affine_map<(i, j) -> (i, j)>
#t = affine_map<(i, j) -> (j, i)>
#row = affine_map<(i, j) -> (i)>
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: scf.for
// CHECK-COUNT-4: linalg.generic
// CHECK-NOT: scf.for
func.func @left_alone(%a: memref<128x512xf32>, %b: memref<128x512xf32>,
                      %small: memref<64x64xf32>, %st: memref<64x64xf32>,
                      %bias: memref<128xf32>, %sum: memref<128xf32>) {
  linalg.generic {indexing_maps = [#id, #id],
                  iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<128x512xf32>) outs(%b : memref<128x512xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  }
  linalg.generic {indexing_maps = [#t, #id],
                  iterator_types = ["parallel", "parallel"]}
      ins(%small : memref<64x64xf32>) outs(%st : memref<64x64xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  }
  linalg.generic {indexing_maps = [#row, #id, #id],
                  iterator_types = ["parallel", "parallel"]}
      ins(%bias, %a : memref<128xf32>, memref<128x512xf32>)
      outs(%b : memref<128x512xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %0 = arith.addf %x, %y : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#id, #row],
                  iterator_types = ["parallel", "reduction"]}
      ins(%a : memref<128x512xf32>) outs(%sum : memref<128xf32>) {
  ^bb0(%x: f32, %o: f32):
    %0 = arith.addf %o, %x : f32
    linalg.yield %0 : f32
  }
  return
}

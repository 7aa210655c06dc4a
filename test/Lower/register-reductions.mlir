// RUN: soap-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(soap-register-reductions))" | FileCheck %s
// RUN: soap-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(soap-register-reductions{reassociate=true}))" | FileCheck %s --check-prefix=REASSOC

// With reassociate=true the sum into the carried value may be reordered;
// the argmax's select and the index arithmetic are not sums into it.
// REASSOC-LABEL: func.func @channel_sums
// REASSOC: arith.addf %{{.*}}, %{{.*}} fastmath<reassoc> : f32
// REASSOC-LABEL: func.func @row_argmax
// REASSOC-NOT: fastmath
// REASSOC-LABEL: func.func @left_alone
// REASSOC-NOT: fastmath

// Batch-norm statistics (loops n, c, hw; output [c]): the output's element
// is loaded once before the innermost reduction loop, carried through it as
// an iteration argument, and stored once after it.
#x = affine_map<(n, c, hw) -> (n, c, hw)>
#c = affine_map<(n, c, hw) -> (c)>
// CHECK-LABEL: func.func @channel_sums
// CHECK-SAME: (%[[X:[a-z0-9_]+]]: memref<2x3x5xf32>, %[[S:[a-z0-9_]+]]: memref<3xf32>)
// CHECK-NOT: linalg.generic
// CHECK: scf.for %[[N:[a-z0-9_]+]] =
// CHECK: scf.for %[[C:[a-z0-9_]+]] =
// CHECK: %[[INIT:[a-z0-9_]+]] = memref.load %[[S]][%[[C]]]
// CHECK: %[[SUM:[a-z0-9_]+]] = scf.for %[[HW:[a-z0-9_]+]] = {{.*}} iter_args(%[[ACC:[a-z0-9_]+]] = %[[INIT]]) -> (f32)
// CHECK: %[[V:[a-z0-9_]+]] = memref.load %[[X]][%[[N]], %[[C]], %[[HW]]]
// CHECK: %[[NEXT:[a-z0-9_]+]] = arith.addf %[[ACC]], %[[V]] : f32
// CHECK: scf.yield %[[NEXT]]
// CHECK: memref.store %[[SUM]], %[[S]][%[[C]]]
func.func @channel_sums(%x: memref<2x3x5xf32>, %s: memref<3xf32>) {
  linalg.generic {indexing_maps = [#x, #c],
                  iterator_types = ["reduction", "parallel", "reduction"]}
      ins(%x : memref<2x3x5xf32>) outs(%s : memref<3xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %out, %in : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// Two outputs (a softmax's row maximum and the index of its first
// occurrence, which reads linalg.index) over two innermost reduction
// loops; a scalar input; the outer parallel loop stays a plain loop.
#in = affine_map<(i, j, k) -> (i, j, k)>
#row = affine_map<(i, j, k) -> (i)>
#none = affine_map<(i, j, k) -> ()>
// CHECK-LABEL: func.func @row_argmax
// CHECK: scf.for %[[I:[a-z0-9_]+]] =
// CHECK-DAG: %[[M0:[a-z0-9_]+]] = memref.load %{{.*}}[%[[I]]] : memref<4xf32>
// CHECK-DAG: %[[A0:[a-z0-9_]+]] = memref.load %{{.*}}[%[[I]]] : memref<4xindex>
// CHECK: %[[R:[a-z0-9_]+]]:2 = scf.for %[[J:[a-z0-9_]+]] = {{.*}} iter_args(%{{.*}} = %[[M0]], %{{.*}} = %[[A0]]) -> (f32, index)
// CHECK: %[[INNER:[a-z0-9_]+]]:2 = scf.for %[[K:[a-z0-9_]+]] = {{.*}} -> (f32, index)
// CHECK: arith.addi %{{.*}}, %[[K]]
// CHECK: scf.yield %[[INNER]]#0, %[[INNER]]#1
// CHECK: memref.store %[[R]]#0, %{{.*}}[%[[I]]] : memref<4xf32>
// CHECK: memref.store %[[R]]#1, %{{.*}}[%[[I]]] : memref<4xindex>
func.func @row_argmax(%x: memref<4x2x3xf32>, %scale: f32, %m: memref<4xf32>,
                      %a: memref<4xindex>) {
  linalg.generic {indexing_maps = [#in, #none, #row, #row],
                  iterator_types = ["parallel", "reduction", "reduction"]}
      ins(%x, %scale : memref<4x2x3xf32>, f32)
      outs(%m, %a : memref<4xf32>, memref<4xindex>) {
  ^bb0(%in: f32, %s: f32, %max: f32, %arg: index):
    %j = linalg.index 1 : index
    %k = linalg.index 2 : index
    %c3 = arith.constant 3 : index
    %jk = arith.muli %j, %c3 : index
    %flat = arith.addi %jk, %k : index
    %v = arith.mulf %in, %s : f32
    %gt = arith.cmpf ogt, %v, %max : f32
    %newMax = arith.select %gt, %v, %max : f32
    %newArg = arith.select %gt, %flat, %arg : index
    linalg.yield %newMax, %newArg : f32, index
  }
  return
}

// -----

// Left to convert-linalg-to-loops: an elementwise nest (no reduction), and
// a reduction whose output reads its innermost loop (not a reduction over
// it: the loops' order puts the parallel loop last).
#id = affine_map<(i, j) -> (i, j)>
#col = affine_map<(i, j) -> (j)>
// CHECK-LABEL: func.func @left_alone
// CHECK-COUNT-2: linalg.generic
// CHECK-NOT: scf.for
func.func @left_alone(%x: memref<4x5xf32>, %y: memref<4x5xf32>,
                      %s: memref<5xf32>) {
  linalg.generic {indexing_maps = [#id, #id],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<4x5xf32>) outs(%y : memref<4x5xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.negf %in : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#id, #col],
                  iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<4x5xf32>) outs(%s : memref<5xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %out, %in : f32
    linalg.yield %0 : f32
  }
  return
}

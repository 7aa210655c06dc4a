// RUN: soap-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(soap-split-deallocs))" | FileCheck %s

// One bufferization.dealloc of buffers of three classes: two allocations
// and a select of two others. It becomes one dealloc per class; the
// retained view of %a goes with %a's class, the retained %b2 with the
// select's, and the retained argument (external: nothing freed is of its
// class) becomes false.
// CHECK-LABEL: func.func @three_classes
// CHECK-SAME: (%[[ARG:.*]]: memref<4xf32>, %[[C:.*]]: i1)
// CHECK-DAG: %[[A:.*]] = memref.alloc() : memref<4xf32>
// CHECK-DAG: %[[B1:.*]] = memref.alloc() : memref<4xf32>
// CHECK-DAG: %[[B2:.*]] = memref.alloc() : memref<4xf32>
// CHECK-DAG: %[[D:.*]] = memref.alloc() : memref<4xf32>
// CHECK: %[[S:.*]] = arith.select %[[C]], %[[B1]], %[[B2]]
// CHECK: %[[V:.*]] = memref.subview %[[A]]
// CHECK: %[[RA:.*]] = bufferization.dealloc (%[[A]] : memref<4xf32>) if (%[[C]]) retain (%[[V]] : memref<2xf32, strided<[1], offset: 1>>)
// CHECK: %[[RS:.*]] = bufferization.dealloc (%[[S]] : memref<4xf32>) if (%[[C]]) retain (%[[B2]] : memref<4xf32>)
// CHECK: bufferization.dealloc (%[[D]] : memref<4xf32>) if (%[[C]])
// CHECK-NOT: bufferization.dealloc
// CHECK: %[[F:.*]] = arith.constant false
// CHECK: return %[[RA]], %[[F]], %[[RS]]
func.func @three_classes(%arg: memref<4xf32>, %c: i1) -> (i1, i1, i1) {
  %a = memref.alloc() : memref<4xf32>
  %b1 = memref.alloc() : memref<4xf32>
  %b2 = memref.alloc() : memref<4xf32>
  %d = memref.alloc() : memref<4xf32>
  %s = arith.select %c, %b1, %b2 : memref<4xf32>
  %v = memref.subview %a[1] [2] [1] : memref<4xf32> to memref<2xf32, strided<[1], offset: 1>>
  %r:3 = bufferization.dealloc (%a, %s, %d : memref<4xf32>, memref<4xf32>, memref<4xf32>) if (%c, %c, %c) retain (%v, %arg, %b2 : memref<2xf32, strided<[1], offset: 1>>, memref<4xf32>, memref<4xf32>)
  return %r#0, %r#1, %r#2 : i1, i1, i1
}

// -----

// A buffer an scf.if may yield is of the class of what it yields: the
// allocation outside the guard and the result stay in one dealloc.
// CHECK-LABEL: func.func @guard_result
// CHECK: %[[OUT:.*]] = memref.alloc() : memref<4xf32>
// CHECK: %[[OTHER:.*]] = memref.alloc() : memref<4xf32>
// CHECK: %[[G:.*]] = scf.if
// CHECK: bufferization.dealloc (%[[OUT]], %[[G]] : memref<4xf32>, memref<4xf32>)
// CHECK: bufferization.dealloc (%[[OTHER]] : memref<4xf32>)
func.func @guard_result(%c: i1) {
  %out = memref.alloc() : memref<4xf32>
  %other = memref.alloc() : memref<4xf32>
  %g = scf.if %c -> memref<4xf32> {
    scf.yield %out : memref<4xf32>
  } else {
    %fresh = memref.alloc() : memref<4xf32>
    scf.yield %fresh : memref<4xf32>
  }
  bufferization.dealloc (%out, %other, %g : memref<4xf32>, memref<4xf32>, memref<4xf32>) if (%c, %c, %c)
  return
}

// -----

// Buffers of unknown origin (a call's result, an argument) share one class.
// CHECK-LABEL: func.func @external
// CHECK: %[[X:.*]] = call @make()
// CHECK: bufferization.dealloc (%arg0, %[[X]] : memref<4xf32>, memref<4xf32>)
func.func private @make() -> memref<4xf32>
func.func @external(%arg0: memref<4xf32>, %c: i1) {
  %x = call @make() : () -> memref<4xf32>
  bufferization.dealloc (%arg0, %x : memref<4xf32>, memref<4xf32>) if (%c, %c)
  return
}

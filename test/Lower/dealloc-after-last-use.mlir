// RUN: soap-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(soap-dealloc-after-last-use))" | FileCheck %s

// Deallocations at the end of the function move up to right after the
// last op that touches their buffer or a buffer that may alias it (a view,
// a select, a guard's result), and after the definitions of their
// operands (an ownership condition). An argument's buffer does not move.
// CHECK-LABEL: func.func @step
// CHECK: %[[A:.*]] = memref.alloc()
// CHECK: linalg.fill {{.*}} outs(%[[A]]
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK: %[[B:.*]] = memref.alloc()
// CHECK: %[[V:.*]] = memref.subview %[[B]]
// CHECK: %[[C:.*]] = memref.alloc()
// CHECK: linalg.copy ins(%[[V]] {{.*}} outs(%[[C]]
// CHECK-NEXT: memref.dealloc %[[B]]
// CHECK: %[[G:.*]] = scf.if
// CHECK: call @use(%[[G]])
// CHECK: %[[OWN:.*]] = arith.cmpi
// CHECK-NEXT: scf.if %[[OWN]] {
// CHECK-NEXT: memref.dealloc %[[G]]
// CHECK: call @use(%arg0)
// CHECK-NEXT: call @use(%[[C]])
// CHECK-NEXT: memref.dealloc %[[C]]
// CHECK-NEXT: memref.dealloc %arg0
// CHECK-NEXT: return
func.func private @use(memref<4xf32>)
func.func @step(%arg0: memref<4xf32>, %c: i1, %n: index) {
  %zero = arith.constant 0.0 : f32
  %a = memref.alloc() : memref<4xf32>
  linalg.fill ins(%zero : f32) outs(%a : memref<4xf32>)
  %b = memref.alloc() : memref<8xf32>
  %v = memref.subview %b[0] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1]>>
  %cbuf = memref.alloc() : memref<4xf32>
  linalg.copy ins(%v : memref<4xf32, strided<[1]>>) outs(%cbuf : memref<4xf32>)
  %g = scf.if %c -> memref<4xf32> {
    %fresh = memref.alloc() : memref<4xf32>
    scf.yield %fresh : memref<4xf32>
  } else {
    %other = memref.alloc() : memref<4xf32>
    scf.yield %other : memref<4xf32>
  }
  call @use(%g) : (memref<4xf32>) -> ()
  %own = arith.cmpi ne, %n, %n : index
  call @use(%arg0) : (memref<4xf32>) -> ()
  call @use(%cbuf) : (memref<4xf32>) -> ()
  memref.dealloc %a : memref<4xf32>
  memref.dealloc %b : memref<8xf32>
  scf.if %own {
    memref.dealloc %g : memref<4xf32>
  }
  memref.dealloc %cbuf : memref<4xf32>
  memref.dealloc %arg0 : memref<4xf32>
  return
}

// -----

// Inside a guard, a deallocation moves within the guard's block only.
// CHECK-LABEL: func.func @nested
// CHECK: scf.if
// CHECK-NEXT: %[[T:.*]] = memref.alloc()
// CHECK-NEXT: call @use(%[[T]])
// CHECK-NEXT: memref.dealloc %[[T]]
// CHECK-NEXT: call @other()
func.func private @use(memref<4xf32>)
func.func private @other()
func.func @nested(%c: i1) {
  scf.if %c {
    %t = memref.alloc() : memref<4xf32>
    func.call @use(%t) : (memref<4xf32>) -> ()
    func.call @other() : () -> ()
    memref.dealloc %t : memref<4xf32>
  }
  return
}

// -----

// A guard's result freed under its ownership condition, through the base
// buffer bufferization-lower-deallocations extracts right before: the
// extraction moves up with the deallocation. The guard yields a shared
// global elsewhere (a rank outside it), which does not make its buffer one
// of unknown origin.
// CHECK-LABEL: func.func @guard_result
// CHECK: %[[G:.*]]:2 = scf.if
// CHECK: call @use(%[[G]]#0)
// CHECK-NEXT: %[[BASE:.*]], %{{.*}}, %{{.*}}, %{{.*}} = memref.extract_strided_metadata %[[G]]#0
// CHECK-NEXT: scf.if %[[G]]#1 {
// CHECK-NEXT: memref.dealloc %[[BASE]]
// CHECK: call @other()
// CHECK-NEXT: return
memref.global "private" @soap_absent_0 : memref<4xf32> = uninitialized
func.func private @use(memref<4xf32>)
func.func private @other()
func.func @guard_result(%c: i1) {
  %g:2 = scf.if %c -> (memref<4xf32>, i1) {
    %fresh = memref.alloc() : memref<4xf32>
    %true = arith.constant true
    scf.yield %fresh, %true : memref<4xf32>, i1
  } else {
    %absent = memref.get_global @soap_absent_0 : memref<4xf32>
    %false = arith.constant false
    scf.yield %absent, %false : memref<4xf32>, i1
  }
  func.call @use(%g#0) : (memref<4xf32>) -> ()
  func.call @other() : () -> ()
  %base, %offset, %size, %stride = memref.extract_strided_metadata %g#0 : memref<4xf32> -> memref<f32>, index, index, index
  scf.if %g#1 {
    memref.dealloc %base : memref<f32>
  }
  return
}

// RUN: soap-opt %s --soap-inline-single-block-calls | FileCheck %s

// Calls of a private single-block function without calls (the helper that
// bufferization-lower-deallocations makes) are replaced by its body, in
// place and in order, with the callee's arguments and results mapped; the
// callee stays until symbol-dce. Calls of a public function, of a callee of
// several blocks, of one that calls others and of a declaration stay.

// CHECK-LABEL: func.func @caller
// CHECK-SAME: (%[[X:.*]]: memref<?xindex>, %[[I:.*]]: index)
// CHECK-NEXT: %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[D:.*]] = memref.dim %[[X]], %[[C0]]
// CHECK-NEXT: %[[S:.*]] = arith.addi %[[D]], %[[I]]
// CHECK-NEXT: %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT: scf.for %{{.*}} = %[[C0]] to %[[S]] step %[[C1]]
// CHECK-NEXT: memref.store %[[I]], %[[X]]
// CHECK-NEXT: }
// CHECK-NEXT: %[[M:.*]] = arith.muli %[[S]], %[[S]]
// CHECK-NEXT: %[[C0B:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[D2:.*]] = memref.dim %[[X]], %[[C0B]]
// CHECK-NEXT: %[[S2:.*]] = arith.addi %[[D2]], %[[M]]
// CHECK: call @public_helper
// CHECK: call @two_blocks
// CHECK: call @calls_another
// CHECK: call @declared
// CHECK: return %[[S2]]
func.func @caller(%x: memref<?xindex>, %i: index) -> index {
  %a = call @helper(%x, %i) : (memref<?xindex>, index) -> index
  %m = arith.muli %a, %a : index
  %b = call @helper(%x, %m) : (memref<?xindex>, index) -> index
  %p = call @public_helper(%b) : (index) -> index
  %t = call @two_blocks(%p) : (index) -> index
  %c = call @calls_another(%t) : (index) -> index
  %e = call @declared(%c) : (index) -> index
  return %b : index
}

// CHECK-LABEL: func.func private @helper
func.func private @helper(%x: memref<?xindex>, %i: index) -> index {
  %c0 = arith.constant 0 : index
  %d = memref.dim %x, %c0 : memref<?xindex>
  %s = arith.addi %d, %i : index
  %c1 = arith.constant 1 : index
  scf.for %k = %c0 to %s step %c1 {
    memref.store %i, %x[%k] : memref<?xindex>
  }
  return %s : index
}

func.func @public_helper(%i: index) -> index {
  return %i : index
}

func.func private @two_blocks(%i: index) -> index {
  cf.br ^bb1(%i : index)
^bb1(%j: index):
  return %j : index
}

func.func private @calls_another(%i: index) -> index {
  %r = call @declared(%i) : (index) -> index
  return %r : index
}

func.func private @declared(index) -> index

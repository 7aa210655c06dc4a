// RUN: soap-opt --soap-merge-guards --split-input-file %s | FileCheck %s

// The inits of the guarded ops (constant, tensor.empty, linalg.fill) move into the
// guard that uses them; the three guards on [0, 1] merge into one that
// yields only what is used after it (%c), and the guard on [2, 3] stays.
// CHECK-LABEL: func.func @run
// CHECK-NEXT:    %[[M:.*]] = soap.on_devices [0, 1] -> tensor<4xf32> {
// CHECK-NEXT:      arith.constant
// CHECK-NEXT:      tensor.empty
// CHECK-NEXT:      %[[F:.*]] = linalg.fill
// CHECK-NEXT:      %[[A:.*]] = linalg.add ins(%arg0, %arg0 : {{.*}}) outs(%[[F]]
// CHECK-NEXT:      %[[B:.*]] = linalg.mul ins(%[[A]], %arg0 : {{.*}})
// CHECK-NEXT:      %[[C:.*]] = linalg.add ins(%[[B]], %[[A]] : {{.*}})
// CHECK-NEXT:      soap.yield %[[C]] : tensor<4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    tensor.empty
// CHECK-NEXT:    %[[D:.*]] = soap.on_devices [2, 3] -> tensor<4xf32> {
// CHECK-NEXT:      linalg.add ins(%[[M]], %[[M]]
// CHECK-NEXT:      soap.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    soap.on_devices [0, 1]
// CHECK:         return %[[M]], %[[D]]
func.func @run(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %a = soap.on_devices [0, 1] -> tensor<4xf32> {
    %r = linalg.add ins(%x, %x : tensor<4xf32>, tensor<4xf32>) outs(%f : tensor<4xf32>) -> tensor<4xf32>
    soap.yield %r : tensor<4xf32>
  }
  %b = soap.on_devices [0, 1] -> tensor<4xf32> {
    %r = linalg.mul ins(%a, %x : tensor<4xf32>, tensor<4xf32>) outs(%x : tensor<4xf32>) -> tensor<4xf32>
    soap.yield %r : tensor<4xf32>
  }
  %c = soap.on_devices [0, 1] -> tensor<4xf32> {
    %r = linalg.add ins(%b, %a : tensor<4xf32>, tensor<4xf32>) outs(%x : tensor<4xf32>) -> tensor<4xf32>
    soap.yield %r : tensor<4xf32>
  }
  // Used by two guards: it stays where every rank runs it.
  %e2 = tensor.empty() : tensor<4xf32>
  %d = soap.on_devices [2, 3] -> tensor<4xf32> {
    %r = linalg.add ins(%c, %c : tensor<4xf32>, tensor<4xf32>) outs(%e2 : tensor<4xf32>) -> tensor<4xf32>
    soap.yield %r : tensor<4xf32>
  }
  %g = soap.on_devices [0, 1] -> tensor<4xf32> {
    %r = linalg.add ins(%x, %x : tensor<4xf32>, tensor<4xf32>) outs(%e2 : tensor<4xf32>) -> tensor<4xf32>
    soap.yield %r : tensor<4xf32>
  }
  return %c, %d : tensor<4xf32>, tensor<4xf32>
}

// -----

// Guards with effects (a send) merge in order; an op between two guards
// keeps them apart; ops used outside any guard are not moved.
// CHECK-LABEL: func.func @effects
// CHECK-NEXT:    soap.on_devices [0] {
// CHECK-NEXT:      soap.send %arg0 from [0] to [1]
// CHECK-NEXT:      soap.send %arg1 from [0] to [1]
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[S:.*]] = arith.addf
// CHECK-NEXT:    soap.on_devices [0] {
// CHECK-NEXT:      soap.send %arg0 from [0] to [1]
// CHECK-NEXT:    }
// CHECK-NEXT:    return %[[S]]
func.func @effects(%x: tensor<4xf32>, %y: tensor<4xf32>, %s: f32) -> f32 {
  soap.on_devices [0] {
    soap.send %x from [0] to [1] : tensor<4xf32>
  }
  soap.on_devices [0] {
    soap.send %y from [0] to [1] : tensor<4xf32>
  }
  %t = arith.addf %s, %s : f32
  soap.on_devices [0] {
    soap.send %x from [0] to [1] : tensor<4xf32>
  }
  return %t : f32
}

// -----

// A rank-table lookup inside a guard: where the table's entries agree on
// the guard's devices, the entry itself (device 1's pad offset, 2), and
// the pad it places becomes one at a static offset; on devices [0, 1],
// where they differ, the lookup stays.
// CHECK-LABEL: func.func @rank_tables
// CHECK:         soap.on_devices [1]
// CHECK-NOT:       tensor.extract
// CHECK:           tensor.insert_slice %{{.*}} into %{{.*}}[2] [2] [1] : tensor<2xf32> into tensor<6xf32>
// CHECK:         soap.on_devices [0, 1]
// CHECK:           tensor.extract %{{.*}}[%{{.*}}] : tensor<2xi64>
func.func @rank_tables(%x: tensor<2xf32>, %pad: tensor<6xf32>) -> (tensor<6xf32>, i64) {
  %rank = soap.rank : index
  %table = arith.constant dense<[0, 2]> : tensor<2xi64>
  %a = soap.on_devices [1] -> tensor<6xf32> {
    %o = tensor.extract %table[%rank] : tensor<2xi64>
    %i = arith.index_cast %o : i64 to index
    %p = tensor.insert_slice %x into %pad[%i] [2] [1] : tensor<2xf32> into tensor<6xf32>
    soap.yield %p : tensor<6xf32>
  }
  %b = soap.on_devices [0, 1] -> i64 {
    %o = tensor.extract %table[%rank] : tensor<2xi64>
    soap.yield %o : i64
  }
  return %a, %b : tensor<6xf32>, i64
}

// -----

// A weight gradient that device 1 makes in its backward guard and
// transposes in a later update guard, with device 0's guard between them:
// the transpose (and the empty tensor it writes) moves into the guard that
// makes the gradient, which yields the transpose instead. The transpose of
// a result that something else reads too, and the one in a guard on other
// devices, stay.
// CHECK-LABEL: func.func @copies
// CHECK:         %[[G:.*]]:3 = soap.on_devices [1] -> tensor<2x3xf32>, tensor<2x3xf32>, tensor<3x2xf32> {
// CHECK:           %[[P:.*]] = linalg.matmul
// CHECK-NEXT:      %[[Q:.*]] = linalg.matmul
// CHECK-NEXT:      %[[R:.*]] = linalg.matmul
// CHECK-NEXT:      %[[E:.*]] = tensor.empty() : tensor<3x2xf32>
// CHECK-NEXT:      %[[T:.*]] = linalg.transpose ins(%[[P]] : tensor<2x3xf32>) outs(%[[E]] : tensor<3x2xf32>)
// CHECK-NEXT:      soap.yield %[[Q]], %[[R]], %[[T]]
// CHECK:         soap.on_devices [0]
// CHECK:         soap.on_devices [1] -> tensor<3x2xf32>, tensor<3x2xf32> {
// CHECK-NEXT:      tensor.empty
// CHECK-NEXT:      %[[T2:.*]] = linalg.transpose ins(%[[G]]#0
// CHECK-NEXT:      soap.yield %[[G]]#2, %[[T2]]
// CHECK:         soap.on_devices [2] -> tensor<3x2xf32> {
// CHECK-NEXT:      tensor.empty
// CHECK-NEXT:      linalg.transpose ins(%[[G]]#1
func.func @copies(%a: tensor<2x4xf32>, %b: tensor<4x3xf32>, %s: tensor<4xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>, tensor<2x3xf32>, tensor<3x2xf32>, tensor<4xf32>) {
  %zero = arith.constant 0.0 : f32
  %g:3 = soap.on_devices [1] -> tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32> {
    %e = tensor.empty() : tensor<2x3xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x3xf32>) -> tensor<2x3xf32>
    %p = linalg.matmul ins(%a, %b : tensor<2x4xf32>, tensor<4x3xf32>) outs(%f : tensor<2x3xf32>) -> tensor<2x3xf32>
    %q = linalg.matmul ins(%a, %b : tensor<2x4xf32>, tensor<4x3xf32>) outs(%f : tensor<2x3xf32>) -> tensor<2x3xf32>
    %r = linalg.matmul ins(%a, %b : tensor<2x4xf32>, tensor<4x3xf32>) outs(%f : tensor<2x3xf32>) -> tensor<2x3xf32>
    soap.yield %p, %q, %r : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
  }
  %o = soap.on_devices [0] -> tensor<4xf32> {
    %e = tensor.empty() : tensor<4xf32>
    %r = linalg.add ins(%s, %s : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    soap.yield %r : tensor<4xf32>
  }
  %u:2 = soap.on_devices [1] -> tensor<3x2xf32>, tensor<3x2xf32> {
    %e = tensor.empty() : tensor<3x2xf32>
    %t = linalg.transpose ins(%g#0 : tensor<2x3xf32>) outs(%e : tensor<3x2xf32>) permutation = [1, 0]
    %e2 = tensor.empty() : tensor<3x2xf32>
    %t2 = linalg.transpose ins(%g#1 : tensor<2x3xf32>) outs(%e2 : tensor<3x2xf32>) permutation = [1, 0]
    soap.yield %t, %t2 : tensor<3x2xf32>, tensor<3x2xf32>
  }
  %w = soap.on_devices [2] -> tensor<3x2xf32> {
    %e = tensor.empty() : tensor<3x2xf32>
    %t = linalg.transpose ins(%g#2 : tensor<2x3xf32>) outs(%e : tensor<3x2xf32>) permutation = [1, 0]
    soap.yield %t : tensor<3x2xf32>
  }
  return %u#0, %u#1, %g#1, %w, %o : tensor<3x2xf32>, tensor<3x2xf32>, tensor<2x3xf32>, tensor<3x2xf32>, tensor<4xf32>
}

// -----

// A copy of a value its guard also reads (a forward activation that a later
// product reads transposed) stays with its reader, which reads through it.
// CHECK-LABEL: func.func @readCopies
// CHECK:         %[[G:.*]]:2 = soap.on_devices [1] -> tensor<2x3xf32>, tensor<2x3xf32> {
// CHECK-NOT:       linalg.transpose
// CHECK:           soap.yield
// CHECK:         soap.on_devices [0]
// CHECK:         soap.on_devices [1] -> tensor<3x2xf32> {
// CHECK-NEXT:      tensor.empty
// CHECK-NEXT:      linalg.transpose ins(%[[G]]#0
func.func @readCopies(%a: tensor<2x4xf32>, %b: tensor<4x3xf32>, %s: tensor<4xf32>) -> (tensor<3x2xf32>, tensor<2x3xf32>, tensor<4xf32>) {
  %zero = arith.constant 0.0 : f32
  %g:2 = soap.on_devices [1] -> tensor<2x3xf32>, tensor<2x3xf32> {
    %e = tensor.empty() : tensor<2x3xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x3xf32>) -> tensor<2x3xf32>
    %p = linalg.matmul ins(%a, %b : tensor<2x4xf32>, tensor<4x3xf32>) outs(%f : tensor<2x3xf32>) -> tensor<2x3xf32>
    %q = linalg.add ins(%p, %p : tensor<2x3xf32>, tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) -> tensor<2x3xf32>
    soap.yield %p, %q : tensor<2x3xf32>, tensor<2x3xf32>
  }
  %o = soap.on_devices [0] -> tensor<4xf32> {
    %e = tensor.empty() : tensor<4xf32>
    %r = linalg.add ins(%s, %s : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    soap.yield %r : tensor<4xf32>
  }
  %u = soap.on_devices [1] -> tensor<3x2xf32> {
    %e = tensor.empty() : tensor<3x2xf32>
    %t = linalg.transpose ins(%g#0 : tensor<2x3xf32>) outs(%e : tensor<3x2xf32>) permutation = [1, 0]
    soap.yield %t : tensor<3x2xf32>
  }
  return %u, %g#1, %o : tensor<3x2xf32>, tensor<2x3xf32>, tensor<4xf32>
}

// -----

// A pad that two guards on device 0 read, with a guard on device 1 between
// them (a convolution's padded image, read forwards and by its weight
// gradient): it moves into the first, which yields it to the second, so
// device 1 does not pad. The pad that guards on two device sets read
// stays where every rank runs it, as does anything several guards write
// into (an init).
// CHECK-LABEL: func.func @shared
// CHECK:         %[[Q:.*]] = tensor.pad %arg1
// CHECK:         %[[G:.*]]:2 = soap.on_devices [0] -> tensor<6xf32>, tensor<6xf32> {
// CHECK-NEXT:      %[[P:.*]] = tensor.pad %arg0
// CHECK:           %[[A:.*]] = linalg.add ins(%[[P]], %[[P]]
// CHECK-NEXT:      soap.yield %[[A]], %[[P]]
// CHECK:         soap.on_devices [1]
// CHECK:         soap.on_devices [0]
// CHECK-NEXT:      linalg.add ins(%[[G]]#1, %[[Q]]
func.func @shared(%x: tensor<4xf32>, %y: tensor<4xf32>, %o: tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>) {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[1] high[1] {
  ^bb0(%i: index):
    tensor.yield %zero : f32
  } : tensor<4xf32> to tensor<6xf32>
  %q = tensor.pad %y low[1] high[1] {
  ^bb0(%i: index):
    tensor.yield %zero : f32
  } : tensor<4xf32> to tensor<6xf32>
  %a = soap.on_devices [0] -> tensor<6xf32> {
    %r = linalg.add ins(%p, %p : tensor<6xf32>, tensor<6xf32>) outs(%o : tensor<6xf32>) -> tensor<6xf32>
    soap.yield %r : tensor<6xf32>
  }
  %b = soap.on_devices [1] -> tensor<6xf32> {
    %r = linalg.add ins(%q, %q : tensor<6xf32>, tensor<6xf32>) outs(%o : tensor<6xf32>) -> tensor<6xf32>
    soap.yield %r : tensor<6xf32>
  }
  %c = soap.on_devices [0] -> tensor<6xf32> {
    %r = linalg.add ins(%p, %q : tensor<6xf32>, tensor<6xf32>) outs(%o : tensor<6xf32>) -> tensor<6xf32>
    soap.yield %r : tensor<6xf32>
  }
  return %a, %b, %c : tensor<6xf32>, tensor<6xf32>, tensor<6xf32>
}

// -----

// Device 1 makes two gradients in one guard and sends them to device 0,
// each before the guard on device 0 that reads it (as the partitioner
// places a model-parallel stage's backward transfers). The second transfer
// moves up, with the slice it sends, to right after the first: device 1
// runs nothing between them. The guards on device 0 then merge. A transfer
// of what a later guard on device 1 makes stays after that guard, and so
// does the guard on device 0 after it.
// CHECK-LABEL: func.func @transfers
// CHECK-NEXT:    %[[G:.*]]:2 = soap.on_devices [1]
// CHECK:         soap.send %[[G]]#0 from [1] to [0] tag 1
// CHECK-NEXT:    %[[R1:.*]] = soap.recv from [1] to [0] tag 1
// CHECK-NEXT:    %[[S:.*]] = tensor.extract_slice %[[G]]#1
// CHECK-NEXT:    soap.send %[[S]] from [1] to [0] tag 2
// CHECK-NEXT:    %[[R2:.*]] = soap.recv from [1] to [0] tag 2
// CHECK-NEXT:    %[[A:.*]] = soap.on_devices [0] -> tensor<4xf32> {
// CHECK:           linalg.add ins(%[[R1]], %[[R1]]
// CHECK:           linalg.add ins(%{{.*}}, %[[R2]]
// CHECK:         }
// CHECK-NEXT:    %[[H:.*]] = soap.on_devices [1]
// CHECK:         soap.send %[[H]] from [1] to [0] tag 3
// CHECK-NEXT:    %[[R3:.*]] = soap.recv from [1] to [0] tag 3
// CHECK-NEXT:    soap.on_devices [0]
// CHECK-NEXT:      linalg.add ins(%[[A]], %[[R3]]
func.func @transfers(%x: tensor<4xf32>, %y: tensor<8xf32>, %o: tensor<4xf32>, %o8: tensor<8xf32>) -> (tensor<4xf32>, tensor<8xf32>) {
  %g:2 = soap.on_devices [1] -> tensor<4xf32>, tensor<8xf32> {
    %r = linalg.add ins(%x, %x : tensor<4xf32>, tensor<4xf32>) outs(%o : tensor<4xf32>) -> tensor<4xf32>
    %s = linalg.add ins(%y, %y : tensor<8xf32>, tensor<8xf32>) outs(%o8 : tensor<8xf32>) -> tensor<8xf32>
    soap.yield %r, %s : tensor<4xf32>, tensor<8xf32>
  }
  soap.send %g#0 from [1] to [0] tag 1 : tensor<4xf32>
  %r1 = soap.recv from [1] to [0] tag 1 : tensor<4xf32>
  %a = soap.on_devices [0] -> tensor<4xf32> {
    %r = linalg.add ins(%r1, %r1 : tensor<4xf32>, tensor<4xf32>) outs(%o : tensor<4xf32>) -> tensor<4xf32>
    soap.yield %r : tensor<4xf32>
  }
  %slice = tensor.extract_slice %g#1[4] [4] [1] : tensor<8xf32> to tensor<4xf32>
  soap.send %slice from [1] to [0] tag 2 : tensor<4xf32>
  %r2 = soap.recv from [1] to [0] tag 2 : tensor<4xf32>
  %b = soap.on_devices [0] -> tensor<4xf32> {
    %r = linalg.add ins(%a, %r2 : tensor<4xf32>, tensor<4xf32>) outs(%o : tensor<4xf32>) -> tensor<4xf32>
    soap.yield %r : tensor<4xf32>
  }
  %h = soap.on_devices [1] -> tensor<4xf32> {
    %r = linalg.add ins(%x, %x : tensor<4xf32>, tensor<4xf32>) outs(%o : tensor<4xf32>) -> tensor<4xf32>
    soap.yield %r : tensor<4xf32>
  }
  soap.send %h from [1] to [0] tag 3 : tensor<4xf32>
  %r3 = soap.recv from [1] to [0] tag 3 : tensor<4xf32>
  %c = soap.on_devices [0] -> tensor<4xf32> {
    %r = linalg.add ins(%b, %r3 : tensor<4xf32>, tensor<4xf32>) outs(%o : tensor<4xf32>) -> tensor<4xf32>
    soap.yield %r : tensor<4xf32>
  }
  return %c, %g#1 : tensor<4xf32>, tensor<8xf32>
}

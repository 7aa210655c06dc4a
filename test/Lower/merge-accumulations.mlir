// RUN: soap-opt %s --soap-merge-accumulations | FileCheck %s
// RUN: soap-opt %s --soap-merge-accumulations --soap-merge-accumulations | FileCheck %s

// soap-merge-accumulations (--soap-lower-cpu's merge-accumulations): a
// chain of products each accumulating into the previous one's result (the
// autodiff's gradient of a weight used at every time step) becomes one
// product over the concatenated reduction dimension. The transposed
// operands are concatenated before the transposition, so that the
// transpose still folds into the GEMM call; the zeros the chain began
// from are made right before the merged product (its buffer is allocated
// there, not where the chain began).

// CHECK-LABEL: func.func @time_steps(
// CHECK-SAME: %[[X0:[^:]*]]: tensor<4x6xf32>, %[[X1:[^:]*]]: tensor<4x6xf32>, %[[X2:[^:]*]]: tensor<4x6xf32>, %[[D0:[^:]*]]: tensor<4x8xf32>, %[[D1:[^:]*]]: tensor<4x8xf32>, %[[D2:[^:]*]]: tensor<4x8xf32>
// CHECK-NOT: linalg.fill
// CHECK: %[[XS:.*]] = tensor.concat dim(0) %[[X2]], %[[X1]], %[[X0]] : {{.*}} -> tensor<12x6xf32>
// CHECK: %[[XT:.*]] = linalg.transpose ins(%[[XS]] : tensor<12x6xf32>) {{.*}} permutation = [1, 0]
// CHECK: %[[DS:.*]] = tensor.concat dim(0) %[[D2]], %[[D1]], %[[D0]] : {{.*}} -> tensor<12x8xf32>
// CHECK: %[[E:.*]] = tensor.empty() : tensor<6x8xf32>
// CHECK-NEXT: %[[ZERO:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E]] : tensor<6x8xf32>)
// CHECK-NEXT: %[[G:.*]] = linalg.matmul ins(%[[XT]], %[[DS]] : tensor<6x12xf32>, tensor<12x8xf32>) outs(%[[ZERO]] : tensor<6x8xf32>)
// CHECK-NOT: linalg.matmul
// CHECK: return %[[G]]
func.func @time_steps(%x0: tensor<4x6xf32>, %x1: tensor<4x6xf32>, %x2: tensor<4x6xf32>,
                      %d0: tensor<4x8xf32>, %d1: tensor<4x8xf32>, %d2: tensor<4x8xf32>) -> tensor<6x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<6x8xf32>) -> tensor<6x8xf32>
  %t = tensor.empty() : tensor<6x4xf32>
  %x2t = linalg.transpose ins(%x2 : tensor<4x6xf32>) outs(%t : tensor<6x4xf32>) permutation = [1, 0]
  %g2 = linalg.matmul ins(%x2t, %d2 : tensor<6x4xf32>, tensor<4x8xf32>) outs(%z : tensor<6x8xf32>) -> tensor<6x8xf32>
  %x1t = linalg.transpose ins(%x1 : tensor<4x6xf32>) outs(%t : tensor<6x4xf32>) permutation = [1, 0]
  %g1 = linalg.matmul ins(%x1t, %d1 : tensor<6x4xf32>, tensor<4x8xf32>) outs(%g2 : tensor<6x8xf32>) -> tensor<6x8xf32>
  %x0t = linalg.transpose ins(%x0 : tensor<4x6xf32>) outs(%t : tensor<6x4xf32>) permutation = [1, 0]
  %g0 = linalg.matmul ins(%x0t, %d0 : tensor<6x4xf32>, tensor<4x8xf32>) outs(%g1 : tensor<6x8xf32>) -> tensor<6x8xf32>
  return %g0 : tensor<6x8xf32>
}

// Operands that are not transposes are concatenated as they are; the
// chain's first addend stays the addend (here a bias, not zeros).
// CHECK-LABEL: func.func @plain(
// CHECK-SAME: %[[A0:[^:]*]]: tensor<6x2xf32>, %[[A1:[^:]*]]: tensor<6x3xf32>, %[[B0:[^:]*]]: tensor<2x8xf32>, %[[B1:[^:]*]]: tensor<3x8xf32>, %[[C:[^:]*]]: tensor<6x8xf32>
// CHECK: %[[A:.*]] = tensor.concat dim(1) %[[A0]], %[[A1]] : {{.*}} -> tensor<6x5xf32>
// CHECK: %[[B:.*]] = tensor.concat dim(0) %[[B0]], %[[B1]] : {{.*}} -> tensor<5x8xf32>
// CHECK: linalg.matmul ins(%[[A]], %[[B]] : tensor<6x5xf32>, tensor<5x8xf32>) outs(%[[C]] : tensor<6x8xf32>)
// CHECK-NOT: linalg.matmul
func.func @plain(%a0: tensor<6x2xf32>, %a1: tensor<6x3xf32>, %b0: tensor<2x8xf32>,
                 %b1: tensor<3x8xf32>, %c: tensor<6x8xf32>) -> tensor<6x8xf32> {
  %0 = linalg.matmul ins(%a0, %b0 : tensor<6x2xf32>, tensor<2x8xf32>) outs(%c : tensor<6x8xf32>) -> tensor<6x8xf32>
  %1 = linalg.matmul ins(%a1, %b1 : tensor<6x3xf32>, tensor<3x8xf32>) outs(%0 : tensor<6x8xf32>) -> tensor<6x8xf32>
  return %1 : tensor<6x8xf32>
}

// Left alone: an intermediate sum that something else reads, and products
// whose reductions are long against the accumulator (copying the operands
// would move more bytes than the accumulator's traffic saves).
// CHECK-LABEL: func.func @kept(
// CHECK-COUNT-4: linalg.matmul
// CHECK-NOT: tensor.concat
func.func @kept(%a: tensor<6x4xf32>, %b: tensor<4x8xf32>, %c: tensor<6x8xf32>,
                %p: tensor<2x64xf32>, %q: tensor<64x2xf32>, %r: tensor<2x2xf32>)
    -> (tensor<6x8xf32>, tensor<6x8xf32>, tensor<2x2xf32>) {
  %0 = linalg.matmul ins(%a, %b : tensor<6x4xf32>, tensor<4x8xf32>) outs(%c : tensor<6x8xf32>) -> tensor<6x8xf32>
  %1 = linalg.matmul ins(%a, %b : tensor<6x4xf32>, tensor<4x8xf32>) outs(%0 : tensor<6x8xf32>) -> tensor<6x8xf32>
  %2 = linalg.matmul ins(%p, %q : tensor<2x64xf32>, tensor<64x2xf32>) outs(%r : tensor<2x2xf32>) -> tensor<2x2xf32>
  %3 = linalg.matmul ins(%p, %q : tensor<2x64xf32>, tensor<64x2xf32>) outs(%2 : tensor<2x2xf32>) -> tensor<2x2xf32>
  return %0, %1, %3 : tensor<6x8xf32>, tensor<6x8xf32>, tensor<2x2xf32>
}

// A chain through guards on the same devices (a layer pipeline's weight
// gradient, one product per time step in each time step's guard) moves
// into a new guard right before the first op that reads its sum, and
// merges there: the earlier guards yield the products' operands instead of
// the sum (the transposes are made again beside the merged product, so
// that they still fold into it), and the guard of the last time step does
// not wait for the merged product.
// CHECK-LABEL: func.func @through_guards(
// CHECK-SAME: %[[X0:[^:]*]]: tensor<4x6xf32>, %[[X1:[^:]*]]: tensor<4x6xf32>, %[[D0:[^:]*]]: tensor<4x8xf32>, %[[D1:[^:]*]]: tensor<4x8xf32>
// CHECK: %[[G0:.*]] = soap.on_devices [1] -> tensor<4x8xf32> {
// CHECK:   %[[S0:.*]] = math.exp %[[D0]]
// CHECK:   soap.yield %[[S0]]
// CHECK-NOT: linalg.matmul
// CHECK: %[[G1:.*]]:2 = soap.on_devices [1] -> tensor<4x8xf32>, tensor<4x8xf32> {
// CHECK:   %[[S1:.*]] = math.exp %[[D1]]
// CHECK:   soap.yield %[[S1]], %[[S1]]
// CHECK: soap.send %[[G1]]#0 from [1] to [0]
// CHECK: %[[SUM:.*]] = soap.on_devices [1] -> tensor<6x8xf32> {
// CHECK:   %[[XS:.*]] = tensor.concat dim(0) %[[X0]], %[[X1]] : {{.*}} -> tensor<8x6xf32>
// CHECK:   %[[XT:.*]] = linalg.transpose ins(%[[XS]] : tensor<8x6xf32>)
// CHECK:   %[[DS:.*]] = tensor.concat dim(0) %[[G0]], %[[G1]]#1 : {{.*}} -> tensor<8x8xf32>
// CHECK:   %[[ZERO:.*]] = linalg.fill
// CHECK:   %[[P:.*]] = linalg.matmul ins(%[[XT]], %[[DS]] : tensor<6x8xf32>, tensor<8x8xf32>) outs(%[[ZERO]] : tensor<6x8xf32>)
// CHECK:   soap.yield %[[P]]
// CHECK-NOT: linalg.matmul
// CHECK: soap.on_devices [1] -> tensor<6x8xf32> {
// CHECK:   math.sqrt %[[SUM]]
func.func @through_guards(%x0: tensor<4x6xf32>, %x1: tensor<4x6xf32>,
                          %d0: tensor<4x8xf32>, %d1: tensor<4x8xf32>)
    -> tensor<6x8xf32> {
  %g0 = soap.on_devices [1] -> tensor<6x8xf32> {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<6x8xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<6x8xf32>) -> tensor<6x8xf32>
    %t = tensor.empty() : tensor<6x4xf32>
    %x0t = linalg.transpose ins(%x0 : tensor<4x6xf32>) outs(%t : tensor<6x4xf32>) permutation = [1, 0]
    %s0 = math.exp %d0 : tensor<4x8xf32>
    %p0 = linalg.matmul ins(%x0t, %s0 : tensor<6x4xf32>, tensor<4x8xf32>) outs(%z : tensor<6x8xf32>) -> tensor<6x8xf32>
    soap.yield %p0 : tensor<6x8xf32>
  }
  %g1:2 = soap.on_devices [1] -> tensor<6x8xf32>, tensor<4x8xf32> {
    %t = tensor.empty() : tensor<6x4xf32>
    %x1t = linalg.transpose ins(%x1 : tensor<4x6xf32>) outs(%t : tensor<6x4xf32>) permutation = [1, 0]
    %s1 = math.exp %d1 : tensor<4x8xf32>
    %p1 = linalg.matmul ins(%x1t, %s1 : tensor<6x4xf32>, tensor<4x8xf32>) outs(%g0 : tensor<6x8xf32>) -> tensor<6x8xf32>
    soap.yield %p1, %s1 : tensor<6x8xf32>, tensor<4x8xf32>
  }
  soap.send %g1#1 from [1] to [0] tag 0 : tensor<4x8xf32>
  %r = soap.recv from [1] to [0] tag 0 : tensor<4x8xf32>
  %u = soap.on_devices [1] -> tensor<6x8xf32> {
    %v = math.sqrt %g1#0 : tensor<6x8xf32>
    soap.yield %v : tensor<6x8xf32>
  }
  return %u : tensor<6x8xf32>
}

// Left alone: a chain through guards on other devices, and one whose sum
// so far another op of its guard also reads.
// CHECK-LABEL: func.func @guards_kept(
// CHECK-COUNT-4: linalg.matmul
// CHECK-NOT: tensor.concat
func.func @guards_kept(%a: tensor<6x4xf32>, %b: tensor<4x8xf32>, %c: tensor<6x8xf32>)
    -> (tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>) {
  %g0 = soap.on_devices [0] -> tensor<6x8xf32> {
    %p = linalg.matmul ins(%a, %b : tensor<6x4xf32>, tensor<4x8xf32>) outs(%c : tensor<6x8xf32>) -> tensor<6x8xf32>
    soap.yield %p : tensor<6x8xf32>
  }
  %g1 = soap.on_devices [1] -> tensor<6x8xf32> {
    %p = linalg.matmul ins(%a, %b : tensor<6x4xf32>, tensor<4x8xf32>) outs(%g0 : tensor<6x8xf32>) -> tensor<6x8xf32>
    soap.yield %p : tensor<6x8xf32>
  }
  %g2:2 = soap.on_devices [1] -> tensor<6x8xf32>, tensor<6x8xf32> {
    %p = linalg.matmul ins(%a, %b : tensor<6x4xf32>, tensor<4x8xf32>) outs(%c : tensor<6x8xf32>) -> tensor<6x8xf32>
    %n = math.exp %p : tensor<6x8xf32>
    soap.yield %p, %n : tensor<6x8xf32>, tensor<6x8xf32>
  }
  %g3 = soap.on_devices [1] -> tensor<6x8xf32> {
    %p = linalg.matmul ins(%a, %b : tensor<6x4xf32>, tensor<4x8xf32>) outs(%g2#0 : tensor<6x8xf32>) -> tensor<6x8xf32>
    soap.yield %p : tensor<6x8xf32>
  }
  return %g1, %g2#1, %g3 : tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>
}

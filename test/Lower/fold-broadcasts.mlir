// RUN: soap-opt %s --soap-fold-broadcasts | FileCheck %s

// soap-fold-broadcasts (steps of --soap-lower-cpu's kernels=blas): a
// linear layer on a 3-D input as torch-mlir writes it (the weight
// transposed, given a unit batch dimension, broadcast along the batch,
// into a batch_matmul) reads the weight itself; the weight's gradient (the
// per-batch products summed over the batch) adds into the sum's output.
// Both keep a second m (k) loop, the runtime's batch.

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#t = affine_map<(d0, d1) -> (d1, d0)>
#unit = affine_map<(d0, d1, d2) -> (d1, d2)>
#bcast = affine_map<(d0, d1, d2) -> (0, d1, d2)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// CHECK-DAG: #[[X:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[W:.*]] = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
// CHECK-DAG: #[[Y:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-DAG: #[[WT:.*]] = affine_map<(d0, d1, d2, d3) -> (d3, d2)>
// CHECK-DAG: #[[D:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
// CHECK-DAG: #[[G:.*]] = affine_map<(d0, d1, d2, d3) -> (d1, d2)>

// CHECK-LABEL: func.func @linear(
// CHECK-SAME: %[[XA:[^:]*]]: tensor<4x12x32xf32>, %[[WA:[^:]*]]: tensor<16x32xf32>
// CHECK: %[[P:.*]] = linalg.generic {indexing_maps = [#[[X]], #[[W]], #[[Y]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[XA]], %[[WA]] : tensor<4x12x32xf32>, tensor<16x32xf32>)
// CHECK-NOT: linalg.batch_matmul
// CHECK: return %[[P]]
func.func @linear(%x: tensor<4x12x32xf32>, %w: tensor<16x32xf32>) -> tensor<4x12x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<32x16xf32>
  %wt = linalg.generic {indexing_maps = [#id2, #t], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<16x32xf32>) outs(%e0 : tensor<32x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<32x16xf32>
  %e1 = tensor.empty() : tensor<1x32x16xf32>
  %w1 = linalg.generic {indexing_maps = [#unit, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%wt : tensor<32x16xf32>) outs(%e1 : tensor<1x32x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x32x16xf32>
  %e2 = tensor.empty() : tensor<4x32x16xf32>
  %wb = linalg.generic {indexing_maps = [#bcast, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%w1 : tensor<1x32x16xf32>) outs(%e2 : tensor<4x32x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<4x32x16xf32>
  %e3 = tensor.empty() : tensor<4x12x16xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<4x12x16xf32>) -> tensor<4x12x16xf32>
  %y = linalg.batch_matmul ins(%x, %wb : tensor<4x12x32xf32>, tensor<4x32x16xf32>) outs(%f3 : tensor<4x12x16xf32>) -> tensor<4x12x16xf32>
  return %y : tensor<4x12x16xf32>
}

// A broadcast of a tensor with a unit batch dimension: that dimension is
// collapsed away (a view once bufferized).
// CHECK-LABEL: func.func @unit_source(
// CHECK-SAME: %[[X2:[^:]*]]: tensor<4x12x32xf32>, %[[W2:[^:]*]]: tensor<1x32x16xf32>
// CHECK: %[[C:.*]] = tensor.collapse_shape %[[W2]] {{\[}}[0, 1], [2]] : tensor<1x32x16xf32> into tensor<32x16xf32>
// CHECK: linalg.generic {indexing_maps = [#[[X]], #[[WT]], #[[Y]]], {{.*}} ins(%[[X2]], %[[C]] :
// CHECK-NOT: linalg.batch_matmul
func.func @unit_source(%x: tensor<4x12x32xf32>, %w: tensor<1x32x16xf32>) -> tensor<4x12x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e2 = tensor.empty() : tensor<4x32x16xf32>
  %wb = linalg.generic {indexing_maps = [#bcast, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%w : tensor<1x32x16xf32>) outs(%e2 : tensor<4x32x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<4x32x16xf32>
  %e3 = tensor.empty() : tensor<4x12x16xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<4x12x16xf32>) -> tensor<4x12x16xf32>
  %y = linalg.batch_matmul ins(%x, %wb : tensor<4x12x32xf32>, tensor<4x32x16xf32>) outs(%f3 : tensor<4x12x16xf32>) -> tensor<4x12x16xf32>
  return %y : tensor<4x12x16xf32>
}

// The input gradient reads the broadcast transposed (a linalg.broadcast
// here): the transposes and the broadcast compose.
// CHECK-LABEL: func.func @input_gradient(
// CHECK-SAME: %[[D3:[^:]*]]: tensor<4x12x16xf32>, %[[W3:[^:]*]]: tensor<16x32xf32>
// CHECK: linalg.generic {indexing_maps = [#[[X]], #[[WT]], #[[Y]]], {{.*}} ins(%[[D3]], %[[W3]] :
// CHECK-NOT: linalg.broadcast
// CHECK-NOT: linalg.transpose
func.func @input_gradient(%dy: tensor<4x12x16xf32>, %w: tensor<16x32xf32>) -> tensor<4x12x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<32x16xf32>
  %wt = linalg.transpose ins(%w : tensor<16x32xf32>) outs(%e0 : tensor<32x16xf32>) permutation = [1, 0]
  %e2 = tensor.empty() : tensor<4x32x16xf32>
  %wb = linalg.broadcast ins(%wt : tensor<32x16xf32>) outs(%e2 : tensor<4x32x16xf32>) dimensions = [0]
  %e4 = tensor.empty() : tensor<4x16x32xf32>
  %wbt = linalg.transpose ins(%wb : tensor<4x32x16xf32>) outs(%e4 : tensor<4x16x32xf32>) permutation = [0, 2, 1]
  %e3 = tensor.empty() : tensor<4x12x32xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<4x12x32xf32>) -> tensor<4x12x32xf32>
  %dx = linalg.batch_matmul ins(%dy, %wbt : tensor<4x12x16xf32>, tensor<4x16x32xf32>) outs(%f3 : tensor<4x12x32xf32>) -> tensor<4x12x32xf32>
  return %dx : tensor<4x12x32xf32>
}

// The weight's gradient: per-batch products from zeros, summed over the
// batch into the gradient so far (another input carried unread, as the
// autodiff writes it). The product adds into the gradient so far, the
// batch a reduction loop.
#red = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-LABEL: func.func @weight_gradient(
// CHECK-SAME: %[[XT4:[^:]*]]: tensor<4x32x12xf32>, %[[D4:[^:]*]]: tensor<4x12x16xf32>, %[[SO:[^:]*]]: tensor<32x16xf32>
// CHECK: %[[S:.*]] = linalg.generic {indexing_maps = [#[[X]], #[[D]], #[[G]]], iterator_types = ["reduction", "parallel", "parallel", "reduction"]} ins(%[[XT4]], %[[D4]] : tensor<4x32x12xf32>, tensor<4x12x16xf32>) outs(%[[SO]] : tensor<32x16xf32>)
// CHECK-NOT: linalg.batch_matmul
// CHECK: return %[[S]]
func.func @weight_gradient(%xt: tensor<4x32x12xf32>, %dy: tensor<4x12x16xf32>, %so: tensor<32x16xf32>, %u: tensor<1x32x16xf32>) -> tensor<32x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e2 = tensor.empty() : tensor<4x32x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4x32x16xf32>) -> tensor<4x32x16xf32>
  %p = linalg.batch_matmul ins(%xt, %dy : tensor<4x32x12xf32>, tensor<4x12x16xf32>) outs(%f : tensor<4x32x16xf32>) -> tensor<4x32x16xf32>
  %s = linalg.generic {indexing_maps = [#bcast, #id3, #red], iterator_types = ["reduction", "parallel", "parallel"]} ins(%u, %p : tensor<1x32x16xf32>, tensor<4x32x16xf32>) outs(%so : tensor<32x16xf32>) {
  ^bb0(%unread: f32, %in: f32, %out: f32):
    %a = arith.addf %out, %in : f32
    linalg.yield %a : f32
  } -> tensor<32x16xf32>
  return %s : tensor<32x16xf32>
}

// Not folded: a product that does not start from zeros (its own init would
// be added once per batch), and a reduction that is not a sum.
// CHECK-LABEL: func.func @not_sums(
// CHECK: linalg.batch_matmul
// CHECK: linalg.generic
// CHECK: linalg.batch_matmul
// CHECK: linalg.generic
// CHECK: arith.maximumf
func.func @not_sums(%xt: tensor<4x32x12xf32>, %dy: tensor<4x12x16xf32>, %so: tensor<32x16xf32>, %init: tensor<4x32x16xf32>) -> (tensor<32x16xf32>, tensor<32x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %p = linalg.batch_matmul ins(%xt, %dy : tensor<4x32x12xf32>, tensor<4x12x16xf32>) outs(%init : tensor<4x32x16xf32>) -> tensor<4x32x16xf32>
  %s = linalg.generic {indexing_maps = [#id3, #red], iterator_types = ["reduction", "parallel", "parallel"]} ins(%p : tensor<4x32x16xf32>) outs(%so : tensor<32x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %out, %in : f32
    linalg.yield %a : f32
  } -> tensor<32x16xf32>
  %e2 = tensor.empty() : tensor<4x32x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4x32x16xf32>) -> tensor<4x32x16xf32>
  %q = linalg.batch_matmul ins(%xt, %dy : tensor<4x32x12xf32>, tensor<4x12x16xf32>) outs(%f : tensor<4x32x16xf32>) -> tensor<4x32x16xf32>
  %m = linalg.generic {indexing_maps = [#id3, #red], iterator_types = ["reduction", "parallel", "parallel"]} ins(%q : tensor<4x32x16xf32>) outs(%so : tensor<32x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.maximumf %out, %in : f32
    linalg.yield %a : f32
  } -> tensor<32x16xf32>
  return %s, %m : tensor<32x16xf32>, tensor<32x16xf32>
}

// RUN: soap-opt %s --soap-drop-zero-accumulations | FileCheck %s

// --soap-lower-cpu's first sums into zeros (soap-drop-zero-accumulations):
// the autodiff accumulates each adjoint's first contribution into a zero
// fill. An elementwise generic yielding `out + x` into such a fill yields x
// into the empty tensor; one that then only copies an input is that input.

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#row = affine_map<(d0, d1) -> (d0)>

// CHECK-LABEL: func.func @first_contribution(
// CHECK-SAME: %[[X:[^:]*]]: tensor<4x8xf32>, %[[B:[^:]*]]: tensor<8xf32>
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK-NOT: linalg.fill
// CHECK: %[[G:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<4x8xf32>) outs(%[[E]] : tensor<4x8xf32>)
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[T:.*]] = math.tanh %[[IN]]
// CHECK-NEXT: linalg.yield %[[T]]
// The copy of %G into a second fill of zeros is gone: the sum reads %G.
// CHECK: %[[S:.*]] = linalg.generic {{.*}} ins(%[[G]], %[[B]] : tensor<4x8xf32>, tensor<8xf32>)
// CHECK: return %[[S]]
func.func @first_contribution(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%z : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %t = math.tanh %in : f32
    %s = arith.addf %out, %t : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %c = linalg.generic {indexing_maps = [#id, #col, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b, %g : tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) outs(%z : tensor<4x8xf32>) {
  ^bb0(%in: f32, %bias: f32, %grad: f32, %out: f32):
    %s = arith.addf %out, %grad : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c, %b : tensor<4x8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %bias: f32, %out: f32):
    %s = arith.addf %in, %bias : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// Left alone: a reduction's accumulation (its output is summed over a
// loop), a sum into a nonzero fill, and a returned copy (results keep
// buffers of their own).
// CHECK-LABEL: func.func @kept(
// CHECK: linalg.fill
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK: arith.addf
// CHECK: linalg.fill
// CHECK: %[[ONES:.*]] = linalg.generic
// CHECK: arith.addf
// CHECK: %[[COPY:.*]] = linalg.generic
// CHECK: return %[[SUM]], %[[ONES]], %[[COPY]]
func.func @kept(%x: tensor<4x8xf32>) -> (tensor<4xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %e4 = tensor.empty() : tensor<4xf32>
  %z4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%z4 : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %out, %in : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %o = linalg.fill ins(%one : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %ones = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%o : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %out, %in : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %copy = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<4x8xf32>
  return %sum, %ones, %copy : tensor<4xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// A sum into zeros over loops of size one (the gradient of a broadcast that
// only adds a unit dimension: torch-mlir's linear layer on a 3-D input
// broadcasts its transposed weight [K, N] to [1, K, N]) is its input without
// that dimension: the tensor the expand_shape added it to, whose transpose
// then reads the weight gradient's product directly. The first input is
// read for its shape only, as the autodiff writes it. A sum over a unit
// dimension of a tensor no expand_shape made is a collapse_shape of it.
#in3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#out3 = affine_map<(d0, d1, d2) -> (d1, d2)>
#shape3 = affine_map<(d0, d1, d2) -> (d1, d2)>
#t = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-LABEL: func.func @unit_sum(
// CHECK-SAME: %[[A:[^:]*]]: tensor<6x4xf32>, %[[B:[^:]*]]: tensor<6x8xf32>, %[[W:[^:]*]]: tensor<4x8xf32>, %[[Y:[^:]*]]: tensor<8x1x4xf32>
// CHECK: %[[P:.*]] = linalg.matmul
// CHECK-NOT: tensor.expand_shape
// CHECK: %[[T:.*]] = linalg.generic {{.*}} ins(%[[P]] : tensor<4x8xf32>) outs(%{{.*}} : tensor<8x4xf32>)
// CHECK: %[[C:.*]] = tensor.collapse_shape %[[Y]] {{\[}}[0], [1, 2]] : tensor<8x1x4xf32> into tensor<8x4xf32>
// CHECK: %[[E:.*]] = math.exp %[[C]]
// CHECK: return %[[T]], %[[E]]
func.func @unit_sum(%a: tensor<6x4xf32>, %b: tensor<6x8xf32>, %w: tensor<4x8xf32>,
                    %y: tensor<8x1x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %e2 = tensor.empty() : tensor<4x6xf32>
  %at = linalg.transpose ins(%a : tensor<6x4xf32>) outs(%e2 : tensor<4x6xf32>) permutation = [1, 0]
  %p = linalg.matmul ins(%at, %b : tensor<4x6xf32>, tensor<6x8xf32>) outs(%z : tensor<4x8xf32>) -> tensor<4x8xf32>
  %x = tensor.expand_shape %p [[0, 1], [2]] output_shape [1, 4, 8] : tensor<4x8xf32> into tensor<1x4x8xf32>
  %s = linalg.generic {indexing_maps = [#shape3, #in3, #out3], iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%w, %x : tensor<4x8xf32>, tensor<1x4x8xf32>) outs(%z : tensor<4x8xf32>) {
  ^bb0(%shape: f32, %in: f32, %out: f32):
    %sum = arith.addf %out, %in : f32
    linalg.yield %sum : f32
  } -> tensor<4x8xf32>
  %et = tensor.empty() : tensor<8x4xf32>
  %tr = linalg.generic {indexing_maps = [#t, #id], iterator_types = ["parallel", "parallel"]}
      ins(%s : tensor<4x8xf32>) outs(%et : tensor<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<8x4xf32>
  %zt = linalg.fill ins(%zero : f32) outs(%et : tensor<8x4xf32>) -> tensor<8x4xf32>
  %c = linalg.generic {indexing_maps = [#in3, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%y : tensor<8x1x4xf32>) outs(%zt : tensor<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %sum = arith.addf %in, %out : f32
    linalg.yield %sum : f32
  } -> tensor<8x4xf32>
  %ce = math.exp %c : tensor<8x4xf32>
  return %tr, %ce : tensor<8x4xf32>, tensor<8x4xf32>
}

// Kept: a sum over a loop longer than one, and a sum into a nonzero init.
// CHECK-LABEL: func.func @not_unit_sum(
// CHECK-COUNT-2: linalg.generic
// CHECK-NOT: tensor.collapse_shape
func.func @not_unit_sum(%y: tensor<8x2x4xf32>, %u: tensor<8x1x4xf32>, %init: tensor<8x4xf32>)
    -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<8x4xf32>
  %zt = linalg.fill ins(%zero : f32) outs(%et : tensor<8x4xf32>) -> tensor<8x4xf32>
  %c = linalg.generic {indexing_maps = [#in3, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%y : tensor<8x2x4xf32>) outs(%zt : tensor<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %sum = arith.addf %in, %out : f32
    linalg.yield %sum : f32
  } -> tensor<8x4xf32>
  %d = linalg.generic {indexing_maps = [#in3, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%u : tensor<8x1x4xf32>) outs(%init : tensor<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %sum = arith.addf %in, %out : f32
    linalg.yield %sum : f32
  } -> tensor<8x4xf32>
  return %c, %d : tensor<8x4xf32>, tensor<8x4xf32>
}

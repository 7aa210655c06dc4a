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

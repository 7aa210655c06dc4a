// RUN: soap-opt %s --soap-fold-transposes | FileCheck %s

// soap-fold-transposes (steps of --soap-lower-cpu's kernels=blas): a
// linear layer's weight gradient as the autodiff writes it, (x^T dy)^T: the
// product, then its first contribution to the adjoint, a sum into zeros
// read through the transposed map (carrying the weight unread). The product
// writes the adjoint's layout itself, so the update that reads it reads in
// order; a linalg.transpose of a product folds alike.

#id = affine_map<(d0, d1) -> (d0, d1)>
#t = affine_map<(d0, d1) -> (d1, d0)>

// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// CHECK-DAG: #[[CT:.*]] = affine_map<(d0, d1, d2) -> (d1, d0)>
// CHECK-LABEL: func.func @weight_gradient(
// CHECK-SAME: %[[W:[^:]*]]: tensor<3x6xf32>, %[[XT:[^:]*]]: tensor<6x4xf32>, %[[DY:[^:]*]]: tensor<4x3xf32>
// CHECK: %[[E:.*]] = tensor.empty() : tensor<3x6xf32>
// CHECK: %[[Z:.*]] = linalg.fill {{.*}} outs(%[[E]] : tensor<3x6xf32>)
// CHECK: %[[G:.*]] = linalg.generic {indexing_maps = [#[[A]], #[[B]], #[[CT]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[XT]], %[[DY]] : tensor<6x4xf32>, tensor<4x3xf32>) outs(%[[Z]] : tensor<3x6xf32>)
// CHECK-NOT: linalg.generic
// CHECK-NOT: linalg.matmul
// CHECK: return %[[G]]
func.func @weight_gradient(%w: tensor<3x6xf32>, %xt: tensor<6x4xf32>,
                           %dy: tensor<4x3xf32>) -> tensor<3x6xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6x3xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<6x3xf32>) -> tensor<6x3xf32>
  %g = linalg.matmul ins(%xt, %dy : tensor<6x4xf32>, tensor<4x3xf32>)
      outs(%z : tensor<6x3xf32>) -> tensor<6x3xf32>
  %e2 = tensor.empty() : tensor<3x6xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<3x6xf32>) -> tensor<3x6xf32>
  %adj = linalg.generic {indexing_maps = [#id, #t, #id],
                         iterator_types = ["parallel", "parallel"]}
      ins(%w, %g : tensor<3x6xf32>, tensor<6x3xf32>)
      outs(%z2 : tensor<3x6xf32>) {
  ^bb0(%unread: f32, %in: f32, %out: f32):
    %s = arith.addf %out, %in : f32
    linalg.yield %s : f32
  } -> tensor<3x6xf32>
  return %adj : tensor<3x6xf32>
}

// CHECK-LABEL: func.func @transposed_product(
// CHECK: linalg.generic {indexing_maps = [#[[A]], #[[B]], #[[CT]]]
// CHECK-NOT: linalg.transpose
// CHECK: return
func.func @transposed_product(%a: tensor<6x4xf32>, %b: tensor<4x3xf32>)
    -> tensor<3x6xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6x3xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<6x3xf32>) -> tensor<6x3xf32>
  %g = linalg.matmul ins(%a, %b : tensor<6x4xf32>, tensor<4x3xf32>)
      outs(%z : tensor<6x3xf32>) -> tensor<6x3xf32>
  %e2 = tensor.empty() : tensor<3x6xf32>
  %t = linalg.transpose ins(%g : tensor<6x3xf32>) outs(%e2 : tensor<3x6xf32>)
      permutation = [1, 0]
  return %t : tensor<3x6xf32>
}

// A product read elsewhere too, or copied with more than the copy (a
// scaled copy), stays as it is.
// CHECK-LABEL: func.func @stays(
// CHECK: linalg.matmul
// CHECK: linalg.generic
// CHECK: return
func.func @stays(%a: tensor<6x4xf32>, %b: tensor<4x3xf32>) -> tensor<3x6xf32> {
  %zero = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f32
  %e = tensor.empty() : tensor<6x3xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<6x3xf32>) -> tensor<6x3xf32>
  %g = linalg.matmul ins(%a, %b : tensor<6x4xf32>, tensor<4x3xf32>)
      outs(%z : tensor<6x3xf32>) -> tensor<6x3xf32>
  %e2 = tensor.empty() : tensor<3x6xf32>
  %s = linalg.generic {indexing_maps = [#t, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%g : tensor<6x3xf32>) outs(%e2 : tensor<3x6xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %two : f32
    linalg.yield %m : f32
  } -> tensor<3x6xf32>
  return %s : tensor<3x6xf32>
}

// A sum into zeros that only a transposing copy reads (owt's sum of a
// weight gradient's parts over the batch shards after an all_to_all, the
// all-reduce moved ahead of the copy) writes the copy's layout itself; its
// unread broadcast input (a constant index in its map) comes along.
#parts = affine_map<(s, i, j) -> (s, i, j)>
#shape = affine_map<(s, i, j) -> (0, i, j)>
#whole = affine_map<(s, i, j) -> (i, j)>
// CHECK-LABEL: func.func @sum_written_transposed(
// CHECK: %[[FILL:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<3x6xf32>)
// CHECK: %[[SUM:.*]] = linalg.generic {indexing_maps = [#{{[a-z0-9]+}}, #{{[a-z0-9]+}}, #[[B]]], iterator_types = ["reduction", "parallel", "parallel"]}
// CHECK-SAME: outs(%[[FILL]] : tensor<3x6xf32>)
// CHECK-NOT: linalg.transpose
// CHECK: return %[[SUM]]
func.func @sum_written_transposed(%p: tensor<2x6x3xf32>, %ref: tensor<1x6x3xf32>) -> tensor<3x6xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6x3xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<6x3xf32>) -> tensor<6x3xf32>
  %g = linalg.generic {indexing_maps = [#shape, #parts, #whole],
                       iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%ref, %p : tensor<1x6x3xf32>, tensor<2x6x3xf32>) outs(%z : tensor<6x3xf32>) {
  ^bb0(%r: f32, %in: f32, %out: f32):
    %s = arith.addf %out, %in : f32
    linalg.yield %s : f32
  } -> tensor<6x3xf32>
  %e2 = tensor.empty() : tensor<3x6xf32>
  %t = linalg.transpose ins(%g : tensor<6x3xf32>) outs(%e2 : tensor<3x6xf32>)
      permutation = [1, 0]
  return %t : tensor<3x6xf32>
}

// RUN: soap-opt %s --soap-sparse-updates | FileCheck %s
// RUN: soap-opt %s --soap-sparse-updates --soap-sparse-updates | FileCheck %s

// soap-sparse-updates (--soap-lower-cpu's sparse-updates): an SGD update
// p - lr * g of a table whose gradient g is a gather's scatter-add nest
// from zeros (its only use) becomes the nest started from p, applying
// each contribution as p[i] - lr * x.

#id = affine_map<(d0, d1) -> (d0, d1)>

// The nest GatherGradient.cpp emits for table[ids[b], h], and SGD's update.
// CHECK-LABEL: func.func @sgd
// CHECK-SAME: (%[[TABLE:.*]]: tensor<10x4xf32>, %[[IDS:.*]]: tensor<6xi64>, %[[DY:.*]]: tensor<6x4xf32>)
// CHECK-NOT: linalg.fill
// CHECK: %[[NEW:.*]] = scf.for %[[B:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[T0:.*]] = %[[TABLE]])
// CHECK: scf.for %[[H:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[T1:.*]] = %[[T0]])
// CHECK: %[[X:.*]] = tensor.extract %[[DY]][%[[B]], %[[H]]]
// CHECK: %[[OLD:.*]] = tensor.extract %[[T1]]
// CHECK: %[[LR:.*]] = arith.constant 1.000000e-01 : f32
// CHECK: %[[STEP:.*]] = arith.mulf %[[X]], %[[LR]] : f32
// CHECK: %[[SUM:.*]] = arith.subf %[[OLD]], %[[STEP]] : f32
// CHECK: tensor.insert %[[SUM]] into %[[T1]]
// CHECK-NOT: linalg.generic
// CHECK: return %[[NEW]]
func.func @sgd(%table: tensor<10x4xf32>, %ids: tensor<6xi64>, %dy: tensor<6x4xf32>) -> tensor<10x4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c6 = arith.constant 6 : index
  %zero = arith.constant 0.0 : f32
  %lr = arith.constant 0.1 : f32
  %e = tensor.empty() : tensor<10x4xf32>
  %zeros = linalg.fill ins(%zero : f32) outs(%e : tensor<10x4xf32>) -> tensor<10x4xf32>
  %grad = scf.for %b = %c0 to %c6 step %c1 iter_args(%acc = %zeros) -> (tensor<10x4xf32>) {
    %inner = scf.for %h = %c0 to %c4 step %c1 iter_args(%acc2 = %acc) -> (tensor<10x4xf32>) {
      %x = tensor.extract %dy[%b, %h] : tensor<6x4xf32>
      %id = tensor.extract %ids[%b] : tensor<6xi64>
      %row = arith.index_cast %id : i64 to index
      %old = tensor.extract %acc2[%row, %h] : tensor<10x4xf32>
      %sum = arith.addf %old, %x : f32
      %ins = tensor.insert %sum into %acc2[%row, %h] : tensor<10x4xf32>
      scf.yield %ins : tensor<10x4xf32>
    }
    scf.yield %inner : tensor<10x4xf32>
  }
  %new = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%table, %grad : tensor<10x4xf32>, tensor<10x4xf32>) outs(%e : tensor<10x4xf32>) {
  ^bb0(%p: f32, %g: f32, %out: f32):
    %step = arith.mulf %g, %lr : f32
    %r = arith.subf %p, %step : f32
    linalg.yield %r : f32
  } -> tensor<10x4xf32>
  return %new : tensor<10x4xf32>
}

// p + c * g with the contribution added on the left of the old value:
// the form and the operand order are kept.
// CHECK-LABEL: func.func @add_scaled_left
// CHECK: iter_args(%{{.*}} = %arg0)
// CHECK: %[[C:.*]] = arith.constant -5.000000e-01 : f32
// CHECK: %[[S:.*]] = arith.mulf %[[C]], %{{.*}} : f32
// CHECK: arith.addf %{{.*}}, %[[S]] : f32
// CHECK-NOT: linalg.generic
func.func @add_scaled_left(%table: tensor<10xf32>, %ids: tensor<6xi64>, %dy: tensor<6xf32>) -> tensor<10xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %zero = arith.constant 0.0 : f32
  %scale = arith.constant -0.5 : f32
  %e = tensor.empty() : tensor<10xf32>
  %zeros = linalg.fill ins(%zero : f32) outs(%e : tensor<10xf32>) -> tensor<10xf32>
  %grad = scf.for %b = %c0 to %c6 step %c1 iter_args(%acc = %zeros) -> (tensor<10xf32>) {
    %x = tensor.extract %dy[%b] : tensor<6xf32>
    %id = tensor.extract %ids[%b] : tensor<6xi64>
    %row = arith.index_cast %id : i64 to index
    %old = tensor.extract %acc[%row] : tensor<10xf32>
    %sum = arith.addf %x, %old : f32
    %ins = tensor.insert %sum into %acc[%row] : tensor<10xf32>
    scf.yield %ins : tensor<10xf32>
  }
  %new = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%grad, %table : tensor<10xf32>, tensor<10xf32>) outs(%e : tensor<10xf32>) {
  ^bb0(%g: f32, %p: f32, %out: f32):
    %step = arith.mulf %scale, %g : f32
    %r = arith.addf %p, %step : f32
    linalg.yield %r : f32
  } -> tensor<10xf32>
  return %new : tensor<10xf32>
}

// Left alone: weight decay (p - lr * (g + d * p) is not p - f(g)), g - p,
// a gradient read twice, and a nest that does not start from zeros.
// CHECK-LABEL: func.func @left_alone
// CHECK: %[[Z:.*]] = linalg.fill
// CHECK: iter_args(%{{.*}} = %[[Z]])
// CHECK: linalg.generic
// CHECK: iter_args(%{{.*}} = %[[Z]])
// CHECK: linalg.generic
// CHECK: iter_args(%{{.*}} = %[[Z]])
// CHECK: linalg.generic
// CHECK: iter_args(%{{.*}} = %arg3)
// CHECK: linalg.generic
func.func @left_alone(%table: tensor<10xf32>, %ids: tensor<6xi64>, %dy: tensor<6xf32>, %start: tensor<10xf32>)
    -> (tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<10xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %zero = arith.constant 0.0 : f32
  %lr = arith.constant 0.1 : f32
  %decay = arith.constant 0.01 : f32
  %e = tensor.empty() : tensor<10xf32>
  %zeros = linalg.fill ins(%zero : f32) outs(%e : tensor<10xf32>) -> tensor<10xf32>
  %g0 = scf.for %b = %c0 to %c6 step %c1 iter_args(%acc = %zeros) -> (tensor<10xf32>) {
    %x = tensor.extract %dy[%b] : tensor<6xf32>
    %id = tensor.extract %ids[%b] : tensor<6xi64>
    %row = arith.index_cast %id : i64 to index
    %old = tensor.extract %acc[%row] : tensor<10xf32>
    %sum = arith.addf %old, %x : f32
    %ins = tensor.insert %sum into %acc[%row] : tensor<10xf32>
    scf.yield %ins : tensor<10xf32>
  }
  %decayed = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%table, %g0 : tensor<10xf32>, tensor<10xf32>) outs(%e : tensor<10xf32>) {
  ^bb0(%p: f32, %g: f32, %out: f32):
    %d = arith.mulf %p, %decay : f32
    %gd = arith.addf %g, %d : f32
    %step = arith.mulf %gd, %lr : f32
    %r = arith.subf %p, %step : f32
    linalg.yield %r : f32
  } -> tensor<10xf32>
  %g1 = scf.for %b = %c0 to %c6 step %c1 iter_args(%acc = %zeros) -> (tensor<10xf32>) {
    %x = tensor.extract %dy[%b] : tensor<6xf32>
    %id = tensor.extract %ids[%b] : tensor<6xi64>
    %row = arith.index_cast %id : i64 to index
    %old = tensor.extract %acc[%row] : tensor<10xf32>
    %sum = arith.addf %old, %x : f32
    %ins = tensor.insert %sum into %acc[%row] : tensor<10xf32>
    scf.yield %ins : tensor<10xf32>
  }
  %reversed = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%table, %g1 : tensor<10xf32>, tensor<10xf32>) outs(%e : tensor<10xf32>) {
  ^bb0(%p: f32, %g: f32, %out: f32):
    %r = arith.subf %g, %p : f32
    linalg.yield %r : f32
  } -> tensor<10xf32>
  // The nest's result has a second use (the return).
  %g2 = scf.for %b = %c0 to %c6 step %c1 iter_args(%acc = %zeros) -> (tensor<10xf32>) {
    %x = tensor.extract %dy[%b] : tensor<6xf32>
    %id = tensor.extract %ids[%b] : tensor<6xi64>
    %row = arith.index_cast %id : i64 to index
    %old = tensor.extract %acc[%row] : tensor<10xf32>
    %sum = arith.addf %old, %x : f32
    %ins = tensor.insert %sum into %acc[%row] : tensor<10xf32>
    scf.yield %ins : tensor<10xf32>
  }
  %twice = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%table, %g2 : tensor<10xf32>, tensor<10xf32>) outs(%e : tensor<10xf32>) {
  ^bb0(%p: f32, %g: f32, %out: f32):
    %r = arith.subf %p, %g : f32
    linalg.yield %r : f32
  } -> tensor<10xf32>
  // A nest that adds into %start, not zeros.
  %g3 = scf.for %b = %c0 to %c6 step %c1 iter_args(%acc = %start) -> (tensor<10xf32>) {
    %x = tensor.extract %dy[%b] : tensor<6xf32>
    %id = tensor.extract %ids[%b] : tensor<6xi64>
    %row = arith.index_cast %id : i64 to index
    %old = tensor.extract %acc[%row] : tensor<10xf32>
    %sum = arith.addf %old, %x : f32
    %ins = tensor.insert %sum into %acc[%row] : tensor<10xf32>
    scf.yield %ins : tensor<10xf32>
  }
  %offset = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%table, %g3 : tensor<10xf32>, tensor<10xf32>) outs(%e : tensor<10xf32>) {
  ^bb0(%p: f32, %g: f32, %out: f32):
    %r = arith.subf %p, %g : f32
    linalg.yield %r : f32
  } -> tensor<10xf32>
  return %decayed, %reversed, %twice, %offset, %g2 : tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<10xf32>
}

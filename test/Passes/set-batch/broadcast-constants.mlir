// RUN: soap-opt %s -split-input-file --soap-set-batch=4 | FileCheck %s

// Position ids (torch-mlir's BERT): a tensor<1x8xi64> constant sliced to
// the sequence and gathered, then added to the tokens' embeddings. No input
// reaches them, so they stay size 1 and are read at index 0 by the batch
// loop, here through the broadcasting map torch-mlir already wrote.
#ids = affine_map<(d0, d1, d2) -> (d0, d1)>
#all = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#first = affine_map<(d0, d1, d2) -> (0, d1, d2)>
// CHECK-LABEL: func.func @position_ids(
// CHECK-SAME: %{{.*}}: tensor<4x3xi64>) -> tensor<4x3x2xf32>
// CHECK: arith.constant dense<{{.*}}> : tensor<1x8xi64>
// CHECK: tensor.extract_slice {{.*}} : tensor<1x8xi64> to tensor<1x3xi64>
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<4x3xi64>) outs(%{{.*}} : tensor<4x3x2xf32>)
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<1x3xi64>) outs(%{{.*}} : tensor<1x3x2xf32>)
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<4x3x2xf32>, tensor<1x3x2xf32>) outs(%{{.*}} : tensor<4x3x2xf32>)
func.func @position_ids(%table: tensor<16x2xf32> {soap.param}, %tokens: tensor<1x3xi64>) -> tensor<1x3x2xf32> {
  %all_positions = arith.constant dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>
  %positions = tensor.extract_slice %all_positions[0, 0] [1, 3] [1, 1] : tensor<1x8xi64> to tensor<1x3xi64>
  %e = tensor.empty() : tensor<1x3x2xf32>
  %tok = linalg.generic {indexing_maps = [#ids, #all], iterator_types = ["parallel", "parallel", "parallel"]} ins(%tokens : tensor<1x3xi64>) outs(%e : tensor<1x3x2xf32>) {
  ^bb0(%id: i64, %out: f32):
    %i = arith.index_cast %id : i64 to index
    %j = linalg.index 2 : index
    %v = tensor.extract %table[%i, %j] : tensor<16x2xf32>
    linalg.yield %v : f32
  } -> tensor<1x3x2xf32>
  %e2 = tensor.empty() : tensor<1x3x2xf32>
  %pos = linalg.generic {indexing_maps = [#ids, #all], iterator_types = ["parallel", "parallel", "parallel"]} ins(%positions : tensor<1x3xi64>) outs(%e2 : tensor<1x3x2xf32>) {
  ^bb0(%id: i64, %out: f32):
    %i = arith.index_cast %id : i64 to index
    %j = linalg.index 2 : index
    %v = tensor.extract %table[%i, %j] : tensor<16x2xf32>
    linalg.yield %v : f32
  } -> tensor<1x3x2xf32>
  %e3 = tensor.empty() : tensor<1x3x2xf32>
  %sum = linalg.generic {indexing_maps = [#first, #first, #all], iterator_types = ["parallel", "parallel", "parallel"]} ins(%tok, %pos : tensor<1x3x2xf32>, tensor<1x3x2xf32>) outs(%e3 : tensor<1x3x2xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<1x3x2xf32>
  return %sum : tensor<1x3x2xf32>
}

// -----

// The same values read through the batch loop itself: the generic's map
// becomes a read at index 0.
#all2 = affine_map<(d0, d1) -> (d0, d1)>
// CHECK: #[[ALL:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK: #[[FIRST:.*]] = affine_map<(d0, d1) -> (0, d1)>
// CHECK-LABEL: func.func @batch_loop_read(
// CHECK-SAME: -> tensor<4x3xf32>
// CHECK: linalg.generic {indexing_maps = [#[[ALL]], #[[FIRST]], #[[ALL]]]{{.*}} ins(%{{.*}}, %{{.*}} : tensor<4x3xf32>, tensor<1x3xf32>) outs(%{{.*}} : tensor<4x3xf32>)
func.func @batch_loop_read(%bias: tensor<1x3xf32> {soap.param}, %x: tensor<1x3xf32>) -> tensor<1x3xf32> {
  %e = tensor.empty() : tensor<1x3xf32>
  %y = linalg.generic {indexing_maps = [#all2, #all2, #all2], iterator_types = ["parallel", "parallel"]} ins(%x, %bias : tensor<1x3xf32>, tensor<1x3xf32>) outs(%e : tensor<1x3xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<1x3xf32>
  return %y : tensor<1x3xf32>
}

// -----

// A named op cannot read at index 0: it reads a broadcast copy.
// CHECK-LABEL: func.func @named_op_read(
// CHECK: %[[COPY:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<1x3xf32>) outs(%{{.*}} : tensor<4x3xf32>)
// CHECK: linalg.add ins(%arg1, %[[COPY]] : tensor<4x3xf32>, tensor<4x3xf32>)
func.func @named_op_read(%bias: tensor<1x3xf32> {soap.param}, %x: tensor<1x3xf32>) -> tensor<1x3xf32> {
  %e = tensor.empty() : tensor<1x3xf32>
  %y = linalg.add ins(%x, %bias : tensor<1x3xf32>, tensor<1x3xf32>) outs(%e : tensor<1x3xf32>) -> tensor<1x3xf32>
  return %y : tensor<1x3xf32>
}

// -----

// Splat constants of the batch's shape (JAX's SELU scales) are rebuilt at
// the new shape with their value.
// CHECK-LABEL: func.func @splat(
// CHECK: arith.constant dense<1.050000e+00> : tensor<4x3xf32>
// CHECK: linalg.mul ins(%{{.*}}, %{{.*}} : tensor<4x3xf32>, tensor<4x3xf32>)
func.func @splat(%x: tensor<20x3xf32>) -> tensor<20x3xf32> {
  %scale = arith.constant dense<1.05> : tensor<20x3xf32>
  %e = tensor.empty() : tensor<20x3xf32>
  %y = linalg.mul ins(%x, %scale : tensor<20x3xf32>, tensor<20x3xf32>) outs(%e : tensor<20x3xf32>) -> tensor<20x3xf32>
  return %y : tensor<20x3xf32>
}

// -----

// A class token (a weight of batch 1) joined to the samples along the
// sequence is repeated over the batch.
// CHECK-LABEL: func.func @class_token(
// CHECK-SAME: %[[TOKEN:.*]]: tensor<1x1x2xf32> {soap.param}, %[[X:.*]]: tensor<4x3x2xf32>) -> tensor<4x4x2xf32>
// CHECK: %[[REPEATED:.*]] = linalg.generic {{.*}} ins(%[[TOKEN]] : tensor<1x1x2xf32>) outs(%{{.*}} : tensor<4x1x2xf32>)
// CHECK: tensor.concat dim(1) %[[REPEATED]], %[[X]] : (tensor<4x1x2xf32>, tensor<4x3x2xf32>) -> tensor<4x4x2xf32>
func.func @class_token(%token: tensor<1x1x2xf32> {soap.param}, %x: tensor<1x3x2xf32>) -> tensor<1x4x2xf32> {
  %y = tensor.concat dim(1) %token, %x : (tensor<1x1x2xf32>, tensor<1x3x2xf32>) -> tensor<1x4x2xf32>
  return %y : tensor<1x4x2xf32>
}

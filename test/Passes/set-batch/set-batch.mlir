// RUN: soap-opt %s -split-input-file --soap-set-batch=6 | FileCheck %s

// A collapsed batch (batch * seq rows) becomes 6 * seq; the expand back
// gives the batch to the first dimension of its group.
// CHECK-LABEL: func.func @tokens(
// CHECK-SAME: %{{.*}}: tensor<8x4xf32> {soap.param}, %{{.*}}: tensor<6x3x8xf32>) -> tensor<6x3x4xf32>
// CHECK: tensor.collapse_shape {{.*}} into tensor<18x8xf32>
// CHECK: tensor.empty() : tensor<18x4xf32>
// CHECK: linalg.matmul {{.*}} -> tensor<18x4xf32>
// CHECK: tensor.expand_shape {{.*}} output_shape [6, 3, 4] : tensor<18x4xf32> into tensor<6x3x4xf32>
func.func @tokens(%w: tensor<8x4xf32> {soap.param}, %x: tensor<2x3x8xf32>) -> tensor<2x3x4xf32> {
  %flat = tensor.collapse_shape %x [[0, 1], [2]] : tensor<2x3x8xf32> into tensor<6x8xf32>
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<6x4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<6x4xf32>) -> tensor<6x4xf32>
  %y = linalg.matmul ins(%flat, %w : tensor<6x8xf32>, tensor<8x4xf32>) outs(%init : tensor<6x4xf32>) -> tensor<6x4xf32>
  %out = tensor.expand_shape %y [[0, 1], [2]] output_shape [2, 3, 4] : tensor<6x4xf32> into tensor<2x3x4xf32>
  return %out : tensor<2x3x4xf32>
}

// -----

// soap.batch_dim picks the batch; slices that keep it whole follow it.
// CHECK-LABEL: func.func @sequence_major(
// CHECK-SAME: %{{.*}}: tensor<5x6xf32> {soap.batch_dim = 1 : i64}) -> tensor<2x6xf32>
// CHECK: tensor.extract_slice {{.*}}[0, 0] [2, 6] [1, 1] : tensor<5x6xf32> to tensor<2x6xf32>
func.func @sequence_major(%x: tensor<5x3xf32> {soap.batch_dim = 1}) -> tensor<2x3xf32> {
  %s = tensor.extract_slice %x[0, 0] [2, 3] [1, 1] : tensor<5x3xf32> to tensor<2x3xf32>
  return %s : tensor<2x3xf32>
}

// A pad's gradient (a slice of the padded adjoint) carries the pad's
// config where each pad task's part of the source is the slice's even
// block: splits of dimensions it does not pad, and 2 blocks of a dimension
// padded alike on both sides. Otherwise (4 blocks of a padded dimension,
// whose first and last cover padding; uneven padding) it has none and
// follows its operands.
// RUN: soap-opt %s --split-input-file --soap-training-step="loss=mse" | FileCheck %s

// CHECK-LABEL: func.func @train_step
// CHECK: tensor.extract_slice %{{.*}}[0, 0, 1, 1] [4, 2, 8, 8] [1, 1, 1, 1] {soap.config = #soap.config<degrees = [2, 1, 2, 1], devices = [0, 1, 2, 3]>}
module attributes {soap.num_devices = 4 : i64} {
func.func @f(%x: tensor<4x2x8x8xf32> {soap.param}) -> tensor<4x2x10x10xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %zero : f32
  } {soap.config = #soap.config<degrees = [2, 1, 2, 1], devices = [0, 1, 2, 3]>} : tensor<4x2x8x8xf32> to tensor<4x2x10x10xf32>
  return %p : tensor<4x2x10x10xf32>
}
}

// -----

// CHECK-LABEL: func.func @train_step
// CHECK: tensor.extract_slice %{{.*}}[0, 0, 2, 2] [4, 2, 8, 8] [1, 1, 1, 1] :
module attributes {soap.num_devices = 4 : i64} {
func.func @f(%x: tensor<4x2x8x8xf32> {soap.param}) -> tensor<4x2x12x12xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 0, 2, 2] high[0, 0, 2, 2] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %zero : f32
  } {soap.config = #soap.config<degrees = [1, 1, 4, 1], devices = [0, 1, 2, 3]>} : tensor<4x2x8x8xf32> to tensor<4x2x12x12xf32>
  return %p : tensor<4x2x12x12xf32>
}
}

// -----

// CHECK-LABEL: func.func @train_step
// CHECK: tensor.extract_slice %{{.*}}[0, 0, 2, 0] [4, 2, 8, 8] [1, 1, 1, 1] :
module attributes {soap.num_devices = 2 : i64} {
func.func @f(%x: tensor<4x2x8x8xf32> {soap.param}) -> tensor<4x2x10x8xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 0, 2, 0] high[0, 0, 0, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %zero : f32
  } {soap.config = #soap.config<degrees = [1, 1, 2, 1], devices = [0, 1]>} : tensor<4x2x8x8xf32> to tensor<4x2x10x8xf32>
  return %p : tensor<4x2x10x8xf32>
}
}

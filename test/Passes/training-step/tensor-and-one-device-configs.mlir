// Gradients of tensor data-movement ops and of ops that run whole on one
// device carry the forward op's #soap.config, so that the partitioned
// backward pass runs where the simulator prices it: a slice's gradient (an
// insert_slice into zeros) and a reshape's inverse over the same loops with
// the same config; every op of a gradient rule (a convolution's filter
// gradient: a slice and a convolution; not the transposes, which stay
// lazy) whole on the device of a forward op that runs whole on one device.
// RUN: soap-opt %s --soap-training-step="loss=mse" | FileCheck %s

// CHECK-LABEL: func.func @train_step
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, 4] [2, 32] [1, 1] {soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>}
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0], [1, 2, 3]] output_shape [2, 4, 3, 3] {soap.config = #soap.config<degrees = [2, 1, 1, 1], devices = [0, 1]>}
// CHECK: tensor.extract_slice %{{.*}}[0, 0, 0, 0] [2, 3, 7, 7] [1, 1, 1, 1] {soap.config = #soap.config<degrees = [1, 1, 1, 1], devices = [1]>}
// Transposes stay without one: each reader transposes what it reads.
// CHECK-NOT: linalg.transpose {{.*}} soap.config
// CHECK: linalg.conv_2d_nchw_fchw {dilations = dense<2> : tensor<2xi64>, soap.config = #soap.config<degrees = [1, 1, 1, 1, 1, 1, 1], devices = [1]>
module attributes {soap.num_devices = 2 : i64} {
func.func @f(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32> {soap.param},
             %v: tensor<32x4xf32> {soap.param}) -> tensor<2x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4x3x3xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4x3x3xf32>) -> tensor<2x4x3x3xf32>
  %y = linalg.conv_2d_nchw_fchw {soap.config = #soap.config<degrees = [1, 1, 1, 1, 1, 1, 1], devices = [1]>, dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
         ins(%x, %w : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>)
         outs(%z : tensor<2x4x3x3xf32>) -> tensor<2x4x3x3xf32>
  %c = tensor.collapse_shape %y [[0], [1, 2, 3]] {soap.config = #soap.config<degrees = [2, 1, 1, 1], devices = [0, 1]>} : tensor<2x4x3x3xf32> into tensor<2x36xf32>
  %s = tensor.extract_slice %c[0, 4] [2, 32] [1, 1] {soap.config = #soap.config<degrees = [2, 1], devices = [0, 1]>} : tensor<2x36xf32> to tensor<2x32xf32>
  %e2 = tensor.empty() : tensor<2x4xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x4xf32>) -> tensor<2x4xf32>
  %o = linalg.matmul ins(%s, %v : tensor<2x32xf32>, tensor<32x4xf32>) outs(%z2 : tensor<2x4xf32>) -> tensor<2x4xf32>
  return %o : tensor<2x4xf32>
}
}

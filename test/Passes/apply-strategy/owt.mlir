// RUN: soap-opt %s --soap-apply-strategy="strategy=owt devices=2" | FileCheck %s

// OWT: the convolution is data parallel, the fully connected layer is
// split along its output features (the parameter loop n).

// CHECK: linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, soap.config = #soap.config<degrees = [2, 1, 1, 1, 1, 1, 1], devices = [0, 1]>
// CHECK: linalg.matmul {soap.config = #soap.config<degrees = [1, 2, 1], devices = [0, 1]>}
func.func @cnn(%x: tensor<4x3x8x8xf32>, %k: tensor<6x3x3x3xf32> {soap.param},
               %w: tensor<216x10xf32> {soap.param}) -> tensor<4x10xf32> {
  %zero = arith.constant 0.0 : f32
  %o = tensor.empty() : tensor<4x6x6x6xf32>
  %f = linalg.fill ins(%zero : f32) outs(%o : tensor<4x6x6x6xf32>) -> tensor<4x6x6x6xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
         ins(%x, %k : tensor<4x3x8x8xf32>, tensor<6x3x3x3xf32>) outs(%f : tensor<4x6x6x6xf32>) -> tensor<4x6x6x6xf32>
  %flat = tensor.collapse_shape %c [[0], [1, 2, 3]] : tensor<4x6x6x6xf32> into tensor<4x216xf32>
  %yo = tensor.empty() : tensor<4x10xf32>
  %yf = linalg.fill ins(%zero : f32) outs(%yo : tensor<4x10xf32>) -> tensor<4x10xf32>
  %y = linalg.matmul ins(%flat, %w : tensor<4x216xf32>, tensor<216x10xf32>) outs(%yf : tensor<4x10xf32>) -> tensor<4x10xf32>
  return %y : tensor<4x10xf32>
}

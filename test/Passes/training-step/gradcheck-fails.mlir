// The gradient check can fail: a gradient off by 0.1% is reported.
// RUN: not soap-gradcheck %s --loss=mse --corrupt=0.001 | FileCheck %s

// CHECK: param w {{.*}} FAIL
// CHECK: FAIL: not all 1 parameters agree

func.func @model(%w: tensor<3x2xf32> {soap.param, soap.name = "w"},
                 %x: tensor<4x3xf32>) -> tensor<4x2xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x2xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x2xf32>) -> tensor<4x2xf32>
  %r = linalg.matmul ins(%x, %w : tensor<4x3xf32>, tensor<3x2xf32>) outs(%f : tensor<4x2xf32>) -> tensor<4x2xf32>
  return %r : tensor<4x2xf32>
}

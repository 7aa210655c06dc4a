// RUN: soap-opt %s --soap-apply-strategy="strategy=data-parallel devices=4" | FileCheck %s

// Every op with a batch loop is split along it over the 4 devices; the
// weight-only transpose has no batch and stays replicated.

// CHECK: module attributes {soap.num_devices = 4 : i64}
// CHECK-LABEL: func.func @linear
// CHECK: linalg.transpose
// CHECK-NOT: soap.config
// CHECK-SAME: permutation
// CHECK: linalg.fill {soap.config = #soap.config<degrees = [4, 1], devices = [0, 1, 2, 3]>}
// CHECK: linalg.matmul {soap.config = #soap.config<degrees = [4, 1, 1], devices = [0, 1, 2, 3]>}
func.func @linear(%x: tensor<16x32xf32>, %w: tensor<8x32xf32> {soap.param}) -> tensor<16x8xf32> {
  %e = tensor.empty() : tensor<32x8xf32>
  %wt = linalg.transpose ins(%w : tensor<8x32xf32>) outs(%e : tensor<32x8xf32>) permutation = [1, 0]
  %zero = arith.constant 0.0 : f32
  %o = tensor.empty() : tensor<16x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%o : tensor<16x8xf32>) -> tensor<16x8xf32>
  %y = linalg.matmul ins(%x, %wt : tensor<16x32xf32>, tensor<32x8xf32>) outs(%f : tensor<16x8xf32>) -> tensor<16x8xf32>
  return %y : tensor<16x8xf32>
}

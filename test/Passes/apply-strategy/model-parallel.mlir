// RUN: soap-opt %s --soap-apply-strategy="strategy=model-parallel devices=2" | FileCheck %s

// Two equal layers: the first whole on device 0, the second on device 1.

// CHECK: linalg.matmul {soap.config = #soap.config<degrees = [1, 1, 1], devices = [0]>}
// CHECK: linalg.matmul {soap.config = #soap.config<degrees = [1, 1, 1], devices = [1]>}
func.func @two_layers(%x: tensor<8x16xf32>, %w1: tensor<16x16xf32> {soap.param},
                      %w2: tensor<16x16xf32> {soap.param}, %o: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %h = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x16xf32>) outs(%o : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = linalg.matmul ins(%h, %w2 : tensor<8x16xf32>, tensor<16x16xf32>) outs(%o : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// A strategy exported to JSON and applied again gives the same configs.
// RUN: soap-opt %s --soap-apply-strategy="strategy=owt devices=4" --soap-export-strategy="file=%t.json" | FileCheck %s
// RUN: FileCheck %s --check-prefix=JSON < %t.json
// RUN: soap-opt %s --soap-apply-strategy="strategy=%t.json" | FileCheck %s

// CHECK: module attributes {soap.num_devices = 4 : i64}
// CHECK: linalg.fill {soap.config = #soap.config<degrees = [4, 1], devices = [0, 1, 2, 3]>}
// CHECK: linalg.matmul {soap.config = #soap.config<degrees = [1, 4, 1], devices = [0, 1, 2, 3]>}

// JSON: "devices": 4
// JSON: "node": 0
// JSON: "op": "linalg.fill"
// JSON: "node": 1
// JSON: "op": "linalg.matmul"
func.func @linear(%x: tensor<16x32xf32>, %w: tensor<32x8xf32> {soap.param}, %o: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %zero = arith.constant 0.0 : f32
  %f = linalg.fill ins(%zero : f32) outs(%o : tensor<16x8xf32>) -> tensor<16x8xf32>
  %y = linalg.matmul ins(%x, %w : tensor<16x32xf32>, tensor<32x8xf32>) outs(%f : tensor<16x8xf32>) -> tensor<16x8xf32>
  return %y : tensor<16x8xf32>
}

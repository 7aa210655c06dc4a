// RUN: soap-opt %s --soap-export-graph="file=%t.json" | FileCheck %s --check-prefix=IR
// RUN: FileCheck %s < %t.json
// RUN: not soap-opt %s --soap-export-graph -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERR

// The IR is unchanged.
// IR: linalg.matmul ins

// ERR: error: --soap-export-graph needs file=PATH.json

// CHECK: "nodes": [
// CHECK: "class": "data_movement"
// CHECK: "loop_kinds": [
// CHECK: "op": "linalg.fill"
// CHECK: "class": "matmul"
// CHECK: "loop_names": [
// CHECK-NEXT: "m",
// CHECK-NEXT: "n",
// CHECK-NEXT: "k"
// CHECK: "loop_sizes": [
// CHECK-NEXT: 16,
// CHECK-NEXT: 8,
// CHECK-NEXT: 32
// CHECK: "needs_backward": true,
// CHECK: "op": "linalg.matmul"
// CHECK: "tensors": [
// CHECK: "input": true
// CHECK: "parameter": true
func.func @linear(%x: tensor<16x32xf32>, %w: tensor<32x8xf32> {soap.param}, %o: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %zero = arith.constant 0.0 : f32
  %f = linalg.fill ins(%zero : f32) outs(%o : tensor<16x8xf32>) -> tensor<16x8xf32>
  %y = linalg.matmul ins(%x, %w : tensor<16x32xf32>, tensor<32x8xf32>) outs(%f : tensor<16x8xf32>) -> tensor<16x8xf32>
  return %y : tensor<16x8xf32>
}

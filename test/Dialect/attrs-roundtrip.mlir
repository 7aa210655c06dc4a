// RUN: soap-opt %s | FileCheck %s
// RUN: soap-opt %s | soap-opt | FileCheck %s
// RUN: soap-opt %s --mlir-print-op-generic | soap-opt | FileCheck %s

// CHECK: module attributes {soap.num_devices = 8 : i64}
module attributes {soap.num_devices = 8 : i64} {

// CHECK-LABEL: func.func @config
// CHECK-SAME: %{{.*}}: tensor<64x32xf32>, %{{.*}}: tensor<32x16xf32> {soap.param}
func.func @config(%a: tensor<64x32xf32>, %b: tensor<32x16xf32> {soap.param},
                  %c: tensor<64x16xf32>) -> tensor<64x16xf32> {
  // CHECK: linalg.matmul {soap.config = #soap.config<degrees = [2, 4, 1], devices = [0, 1, 2, 3, 4, 5, 6, 7]>}
  %0 = linalg.matmul {soap.config = #soap.config<degrees = [2, 4, 1], devices = [0, 1, 2, 3, 4, 5, 6, 7]>}
         ins(%a, %b : tensor<64x32xf32>, tensor<32x16xf32>)
         outs(%c : tensor<64x16xf32>) -> tensor<64x16xf32>
  // Several tasks may share a device; degree 1 everywhere is one task.
  // CHECK: linalg.matmul {soap.config = #soap.config<degrees = [1, 1, 2], devices = [3, 3]>}
  %1 = linalg.matmul {soap.config = #soap.config<degrees = [1, 1, 2], devices = [3, 3]>}
         ins(%a, %b : tensor<64x32xf32>, tensor<32x16xf32>)
         outs(%0 : tensor<64x16xf32>) -> tensor<64x16xf32>
  return %1 : tensor<64x16xf32>
}

// CHECK-LABEL: func.func @batch_dim
// CHECK-SAME: {soap.batch_dim = 1 : i64}
func.func @batch_dim(%x: tensor<10x4xf32> {soap.batch_dim = 1 : i64}) -> tensor<10x4xf32> {
  return %x : tensor<10x4xf32>
}

// CHECK-LABEL: func.func @layouts
func.func @layouts(%x: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) {
  // CHECK: soap.layout = #soap.layout<split = [2, 1], devices = [0, 1]>
  %0 = tensor.empty() {soap.layout = #soap.layout<split = [2, 1], devices = [0, 1]>} : tensor<8x4xf32>
  // CHECK: soap.layout = #soap.layout<split = [2, 2], replicas = 2, devices = [0, 1, 2, 3, 4, 5, 6, 7]>
  %1 = tensor.empty() {soap.layout = #soap.layout<split = [2, 2], replicas = 2, devices = [0, 1, 2, 3, 4, 5, 6, 7]>} : tensor<8x4xf32>
  // CHECK: soap.layout = #soap.layout<split = [1, 1], replicas = 4, partial = sum, devices = [4, 5, 6, 7]>
  %2 = tensor.empty() {soap.layout = #soap.layout<split = [1, 1], replicas = 4, partial = sum, devices = [4, 5, 6, 7]>} : tensor<8x4xf32>
  return %0, %1, %2 : tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>
}

// CHECK-LABEL: func.func @partial_kinds
func.func @partial_kinds() -> (tensor<4xf32>, tensor<4xf32>) {
  // CHECK: partial = max
  %0 = tensor.empty() {soap.layout = #soap.layout<split = [1], replicas = 2, partial = max, devices = [0, 1]>} : tensor<4xf32>
  // CHECK: partial = min
  %1 = tensor.empty() {soap.layout = #soap.layout<split = [1], replicas = 2, partial = min, devices = [0, 1]>} : tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// Attributes also stand alone (in a dictionary) without an op to check
// them against.
// CHECK-LABEL: func.func @standalone
// CHECK-SAME: attributes {c = #soap.config<degrees = [4], devices = [0, 1, 2, 3]>, l = #soap.layout<split = [2], devices = [6, 7]>}
func.func @standalone() attributes {c = #soap.config<degrees = [4], devices = [0, 1, 2, 3]>, l = #soap.layout<split = [2], devices = [6, 7]>} {
  return
}
}

// Training-step attributes (docs/train-step.md) on arguments and results.
// CHECK-LABEL: func.func @step_attrs
// CHECK-SAME: {soap.init = "fan-in:8", soap.name = "fc.weight", soap.param, soap.role = "param"}
// CHECK-SAME: {soap.init = dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>, soap.name = "fc.bias", soap.role = "param"}
// CHECK-SAME: {soap.name = "labels", soap.range = 10 : i64, soap.role = "label"}
// CHECK-SAME: -> (tensor<f32> {soap.name = "loss", soap.role = "loss"})
func.func @step_attrs(
    %w: tensor<8x4xf32> {soap.param, soap.role = "param", soap.name = "fc.weight", soap.init = "fan-in:8"},
    %b: tensor<2xf32> {soap.role = "param", soap.name = "fc.bias", soap.init = dense<[1.0, 2.0]> : tensor<2xf32>},
    %y: tensor<4xi64> {soap.role = "label", soap.name = "labels", soap.range = 10})
    -> (tensor<f32> {soap.role = "loss", soap.name = "loss"}) {
  %0 = tensor.empty() : tensor<f32>
  return %0 : tensor<f32>
}

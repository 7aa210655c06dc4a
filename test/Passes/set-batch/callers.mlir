// RUN: soap-opt %s --soap-set-batch=8 | FileCheck %s

// A driver that calls the model with 2 samples cannot follow batch 8: it
// calls a copy of the model at batch 2, which is not a model to train (its
// arguments lose {soap.param}), so the module still verifies and computes
// what it computed.
// CHECK-LABEL: func.func @model(
// CHECK-SAME: %{{.*}}: tensor<3x3xf32> {soap.param}, %{{.*}}: tensor<8x3xf32>) -> tensor<8x3xf32>
// CHECK-LABEL: func.func private @model_batch2(
// CHECK-SAME: %{{.*}}: tensor<3x3xf32>, %{{.*}}: tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK: linalg.matmul {{.*}} -> tensor<2x3xf32>
// CHECK-LABEL: func.func @main(
// CHECK: call @model_batch2(%{{.*}}, %{{.*}}) : (tensor<3x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>

func.func @model(%w: tensor<3x3xf32> {soap.param}, %x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x3xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x3xf32>) -> tensor<2x3xf32>
  %y = linalg.matmul ins(%x, %w : tensor<2x3xf32>, tensor<3x3xf32>) outs(%f : tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

func.func private @printMemrefF32(tensor<*xf32>)

func.func @main() {
  %w = arith.constant dense<0.5> : tensor<3x3xf32>
  %x = arith.constant dense<1.0> : tensor<2x3xf32>
  %y = func.call @model(%w, %x) : (tensor<3x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %u = tensor.cast %y : tensor<2x3xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}

// A model function with callers (an exporter's driver that runs it and
// prints its output, as IREE-style exports have): --soap-append-loss
// points them at a private copy that still returns the output, without
// the soap.* marks, so the module stays valid and has one model to train.
// RUN: soap-opt %s --soap-append-loss="loss=softmax-xent" | FileCheck %s
// RUN: soap-opt %s --soap-append-loss="loss=softmax-xent" --soap-training-step | FileCheck %s --check-prefix=STEP
// RUN: not soap-opt %S/Inputs/appended-loss-name-taken.mlir --soap-append-loss="loss=softmax-xent" 2>&1 | FileCheck %s --check-prefix=TAKEN

// CHECK-LABEL: func.func @main(
// CHECK: call @forward.output(%{{.*}}, %{{.*}}) : (tensor<4x3xf32>, tensor<2x4xf32>) -> tensor<2x3xf32>
// CHECK: func.func private @forward.output(%{{.*}}: tensor<4x3xf32>, %{{.*}}: tensor<2x4xf32>) -> tensor<2x3xf32> {
// CHECK-NOT: soap.
// CHECK: linalg.matmul
// CHECK: func.func @forward(%{{.*}}: tensor<4x3xf32> {soap.name = "w", soap.param}, %{{.*}}: tensor<2x4xf32>, %{{.*}}: tensor<2xi64> {soap.name = "labels", soap.range = 3 : i64, soap.role = "label"}) -> (tensor<f32> {soap.name = "loss"})
// STEP: func.func @train_step(
// STEP-SAME: soap.name = "w"
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = arith.constant dense<0.5> : tensor<4x3xf32>
  %y = call @forward(%w, %x) : (tensor<4x3xf32>, tensor<2x4xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}
func.func @forward(%w: tensor<4x3xf32> {soap.param, soap.name = "w"}, %x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x3xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x3xf32>) -> tensor<2x3xf32>
  %y = linalg.matmul ins(%x, %w : tensor<2x4xf32>, tensor<4x3xf32>) outs(%f : tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}
// The copy's name is taken:
// TAKEN: error: soap-append-loss: @forward has callers, and the name for the copy they would call, @forward.output, is taken

// loss=softmax-xent and loss=mse append a loss and a labels argument to a
// function that returns its output (a real model's logits).
// RUN: soap-opt %s --soap-training-step="loss=softmax-xent" | FileCheck %s --check-prefix=XENT
// RUN: soap-opt %s --soap-training-step="loss=mse" | FileCheck %s --check-prefix=MSE
// Names come from soap.name, else the argument's location, else argN.

// XENT-LABEL: func.func @train_step(
// XENT-SAME: %{{.*}}: tensor<4x3xf32> {soap.init = "fan-in", soap.name = "arg0", soap.role = "param"},
// XENT-SAME: %{{.*}}: tensor<2x4xf32> {soap.name = "pixels", soap.role = "input"},
// XENT-SAME: %{{.*}}: tensor<2xi64> {soap.name = "labels", soap.range = 3 : i64, soap.role = "label"})
// XENT: math.exp
// XENT: math.log

// MSE-LABEL: func.func @train_step(
// MSE-SAME: %{{.*}}: tensor<2x3xf32> {soap.name = "labels", soap.role = "label"})

func.func @forward(%w: tensor<4x3xf32> {soap.param},
                   %x: tensor<2x4xf32> loc("pixels")) -> tensor<2x3xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x3xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x3xf32>) -> tensor<2x3xf32>
  %r = linalg.matmul ins(%x, %w : tensor<2x4xf32>, tensor<4x3xf32>) outs(%f : tensor<2x3xf32>) -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}

// loss=softmax-xent and loss=mse append a loss and a labels argument to a
// function that returns its output (a real model's logits).
// RUN: soap-opt %s --soap-training-step="loss=softmax-xent" | FileCheck %s --check-prefix=XENT
// RUN: soap-opt %s --soap-training-step="loss=mse" | FileCheck %s --check-prefix=MSE
// --soap-append-loss makes the function return that loss (before a strategy
// search, so that it prices the loss); the training step then builds the
// same @train_step with loss=none.
// RUN: soap-opt %s --soap-append-loss="loss=softmax-xent" | FileCheck %s --check-prefix=APPEND
// RUN: soap-opt %s --soap-append-loss="loss=softmax-xent" --soap-training-step | FileCheck %s --check-prefix=XENT
// RUN: soap-opt %s --soap-append-loss="loss=mse" --soap-training-step | FileCheck %s --check-prefix=MSE
// RUN: not soap-opt %s --soap-append-loss 2>&1 | FileCheck %s --check-prefix=NOLOSS
// RUN: not soap-opt %s --soap-append-loss=loss=none 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: not soap-opt %s --soap-append-loss=loss=hinge 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not soap-opt %s --soap-training-step=loss=mse --soap-append-loss=loss=mse 2>&1 | FileCheck %s --check-prefix=AFTER
// Names come from soap.name, else the argument's location, else argN.

// APPEND-LABEL: func.func @forward(
// APPEND-SAME: %{{.*}}: tensor<4x3xf32> {soap.param},
// APPEND-SAME: %{{.*}}: tensor<2x4xf32>,
// APPEND-SAME: %{{.*}}: tensor<2xi64> {soap.name = "labels", soap.range = 3 : i64, soap.role = "label"})
// APPEND-SAME: -> (tensor<f32> {soap.name = "loss"})
// APPEND: math.exp
// APPEND: return %{{.*}} : tensor<f32>
// NOLOSS: soap-append-loss needs loss=softmax-xent or loss=mse
// NONE: no loss to append: choose softmax-xent or mse
// UNKNOWN: unknown loss 'hinge' (expected none, softmax-xent or mse)
// AFTER: --soap-append-loss changes the model, but the module already has the @train_step

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

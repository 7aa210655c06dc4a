// RUN: not soap-opt %s --soap-training-step="optimizer=rmsprop" 2>&1 | FileCheck %s --check-prefix=OPTIMIZER
// RUN: not soap-opt %s --soap-training-step="loss=hinge" 2>&1 | FileCheck %s --check-prefix=LOSS
// RUN: not soap-opt %s --soap-training-step="lr=-1" 2>&1 | FileCheck %s --check-prefix=LR
// NaN passes no check, infinity none that needs a finite value.
// RUN: not soap-opt %s --soap-training-step="lr=nan" 2>&1 | FileCheck %s --check-prefix=LR
// RUN: not soap-opt %s --soap-training-step="momentum=nan" 2>&1 | FileCheck %s --check-prefix=LR
// RUN: not soap-opt %s --soap-training-step="weight-decay=inf" 2>&1 | FileCheck %s --check-prefix=LR
// RUN: not soap-opt %s --soap-training-step="func=missing" 2>&1 | FileCheck %s --check-prefix=FUNC
// RUN: not soap-opt %s --soap-training-step="loss=softmax-xent" 2>&1 | FileCheck %s --check-prefix=RANK

// OPTIMIZER: error: unknown optimizer 'rmsprop' (expected sgd, momentum or adam)
// LOSS: error: unknown loss 'hinge' (expected none, softmax-xent or mse)
// LR: error: bad optimizer hyperparameters
// FUNC: error: no function with a body named 'missing'
// RANK: error: loss=softmax-xent needs logits [batch, classes], but the function returns 'tensor<f32>'

func.func @loss(%w: tensor<f32> {soap.param}) -> tensor<f32> {
  return %w : tensor<f32>
}

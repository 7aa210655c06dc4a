// A function that returns several values (MobileBERT's start and end
// logits): result=K applies the loss to result K, result=all sums the loss
// over every result, each with its own labels argument.
// RUN: soap-opt %s --soap-training-step="loss=softmax-xent result=1" | FileCheck %s --check-prefix=ONE
// RUN: soap-opt %s --soap-training-step="loss=softmax-xent result=all" | FileCheck %s --check-prefix=ALL
// RUN: soap-gradcheck %s --loss=softmax-xent --result=all | FileCheck %s --check-prefix=GRAD
// RUN: soap-gradcheck %s --loss=mse --result=0 | FileCheck %s --check-prefix=GRAD
// RUN: not soap-opt %s --soap-training-step="loss=softmax-xent" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: not soap-opt %s --soap-training-step="loss=mse result=2" -o /dev/null 2>&1 | FileCheck %s --check-prefix=RANGE
// RUN: not soap-opt %s --soap-training-step="loss=mse result=first" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD

// ONE-LABEL: func.func @train_step(
// ONE-SAME: %{{.*}}: tensor<2x4xf32> {soap.name = "x", soap.role = "input"},
// ONE-SAME: %{{.*}}: tensor<2xi64> {soap.name = "labels", soap.range = 5 : i64, soap.role = "label"})
// ONE-COUNT-1: math.log
// ONE-NOT: math.log

// ALL-LABEL: func.func @train_step(
// ALL-SAME: %{{.*}}: tensor<2xi64> {soap.name = "labels.0", soap.range = 3 : i64, soap.role = "label"},
// ALL-SAME: %{{.*}}: tensor<2xi64> {soap.name = "labels.1", soap.range = 5 : i64, soap.role = "label"})
// ALL-COUNT-2: math.log

// GRAD-NOT: FAIL
// GRAD: ok

// NONE: error: the function returns 2 values; choose the one the loss applies to with result=K (0 to 1), or sum the loss over all of them with result=all
// RANGE: error: result=2 is out of range: the function returns 2 values
// BAD: error: bad result='first' (expected a result number or all)

func.func @two_heads(%start: tensor<4x3xf32> {soap.param}, %end: tensor<4x5xf32> {soap.param},
                     %x: tensor<2x4xf32> loc("x")) -> (tensor<2x3xf32>, tensor<2x5xf32>) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<2x3xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<2x3xf32>) -> tensor<2x3xf32>
  %a = linalg.matmul ins(%x, %start : tensor<2x4xf32>, tensor<4x3xf32>) outs(%f0 : tensor<2x3xf32>) -> tensor<2x3xf32>
  %e1 = tensor.empty() : tensor<2x5xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x5xf32>) -> tensor<2x5xf32>
  %b = linalg.matmul ins(%x, %end : tensor<2x4xf32>, tensor<4x5xf32>) outs(%f1 : tensor<2x5xf32>) -> tensor<2x5xf32>
  return %a, %b : tensor<2x3xf32>, tensor<2x5xf32>
}

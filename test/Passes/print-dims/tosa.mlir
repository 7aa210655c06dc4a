// TOSA input: --soap-print-dims says how to lower it before calling each
// op not partitionable; the training passes refuse it with the same
// pipeline; after that pipeline every op has its dimensions.
// RUN: soap-opt %s --soap-print-dims -o /dev/null 2>&1 | FileCheck %s --check-prefix=HINT
// RUN: not soap-opt %s --soap-set-batch=4 -o /dev/null 2>&1 | FileCheck %s --check-prefix=REFUSE
// RUN: not soap-opt %s --soap-training-step="loss=mse" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REFUSE-STEP
// RUN: soap-opt %s --pass-pipeline="builtin.module(tosa-to-linalg-pipeline,func.func(tosa-to-tensor,tosa-to-arith,convert-elementwise-to-linalg),canonicalize)" \
// RUN:   | soap-opt --soap-print-dims -o /dev/null 2>&1 | FileCheck %s --check-prefix=LOWERED

// HINT: warning: soap-print-dims: the module is TOSA, which SOAP partitions after lowering it to linalg: soap-opt --pass-pipeline="builtin.module(tosa-to-linalg-pipeline,func.func(tosa-to-tensor,tosa-to-arith,convert-elementwise-to-linalg),canonicalize)"
// HINT: remark: 'tosa.add' is not partitionable

// REFUSE: error: soap-set-batch: 'tosa.add' is TOSA; lower the model to linalg first: soap-opt --pass-pipeline="builtin.module(tosa-to-linalg-pipeline,func.func(tosa-to-tensor,tosa-to-arith,convert-elementwise-to-linalg),canonicalize)" (docs/real-models.md)
// REFUSE-STEP: error: soap-training-step: 'tosa.add' is TOSA; lower the model to linalg first

// LOWERED-NOT: not partitionable
// LOWERED: remark: dims d0:1:sample d1:4:attribute d2:8:attribute
// LOWERED: remark: dims d0:1:sample d1:4:attribute d2:8:reduction
// LOWERED-NOT: not partitionable

func.func @softmax_sum(%x: tensor<1x4x8xf32>, %b: tensor<1x4x8xf32>) -> tensor<1x4x1xf32> {
  %0 = tosa.add %x, %b : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %1 = tosa.exp %0 : (tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %2 = tosa.reduce_sum %1 {axis = 2 : i32} : (tensor<1x4x8xf32>) -> tensor<1x4x1xf32>
  return %2 : tensor<1x4x1xf32>
}

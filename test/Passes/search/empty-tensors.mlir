// Zero-size dimensions are refused by name, never a crash: the search, a
// random strategy, the training step, batch resizing and the partitioner
// (a training step whose batch is 0).
// RUN: not soap-opt %s --soap-search="machine=p100-4x4 devices=4 budget=100" -o /dev/null 2>&1 | FileCheck %s --check-prefix=GRAPH
// RUN: not soap-opt %s --soap-apply-strategy="strategy=random:3 devices=4" -o /dev/null 2>&1 | FileCheck %s --check-prefix=GRAPH
// RUN: not soap-opt %s --soap-training-step="loss=mse" -o /dev/null 2>&1 | FileCheck %s --check-prefix=LOSS
// RUN: not soap-opt %s --soap-set-batch=4 -o /dev/null 2>&1 | FileCheck %s --check-prefix=BATCH
// RUN: sed -e 's/4x3xf32/0x3xf32/g' -e 's/4x2xf32/0x2xf32/g' %S/../../Lower/Inputs/linear-sgd.mlir > %t.step.mlir
// RUN: not soap-opt %t.step.mlir --soap-partition=devices=2 -o /dev/null 2>&1 | FileCheck %s --check-prefix=PARTITION

// GRAPH: error: argument 0 has a zero-size dimension; SOAP partitions no empty tensors
// LOSS: error: the loss applies to the function, of type 'tensor<0x8xf32>', which has no elements
// BATCH: error: soap-set-batch: the batch dimension 0 of argument 0 is empty (size 0)
// PARTITION: error: soap-partition: the batch dimension 0 of argument 2 is empty (size 0)
func.func @linear(%x: tensor<0x32xf32>, %w: tensor<32x8xf32> {soap.param}, %o: tensor<0x8xf32>) -> tensor<0x8xf32> {
  %zero = arith.constant 0.0 : f32
  %f = linalg.fill ins(%zero : f32) outs(%o : tensor<0x8xf32>) -> tensor<0x8xf32>
  %y = linalg.matmul ins(%x, %w : tensor<0x32xf32>, tensor<32x8xf32>) outs(%f : tensor<0x8xf32>) -> tensor<0x8xf32>
  return %y : tensor<0x8xf32>
}

// RUN: not soap-opt %s --soap-apply-strategy="strategy=pipeline devices=4" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NAME
// RUN: not soap-opt %s --soap-apply-strategy="strategy=data-parallel" -o /dev/null 2>&1 | FileCheck %s --check-prefix=DEVICES
// RUN: not soap-opt %s --soap-apply-strategy="strategy=%S/Inputs/missing.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not soap-opt %s --soap-apply-strategy="strategy=%S/Inputs/wrong-op.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=WRONGOP
// RUN: not soap-opt %s --soap-apply-strategy="strategy=%S/Inputs/not-dividing.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=DIVIDE
// RUN: not soap-opt %s --soap-apply-strategy="strategy=%S/Inputs/bad.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=JSON
// RUN: not soap-opt %s --soap-apply-strategy="strategy=%S/Inputs/valid4.json devices=8" -o /dev/null 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: not soap-opt %s --soap-apply-strategy="strategy=%S/Inputs/replicated-string.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPLICATED
// RUN: not soap-opt %s --soap-apply-strategy="strategy=random:99999999999999999999 devices=4" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SEED
// RUN: not soap-opt %s --soap-apply-strategy="strategy=%S/Inputs/fractional-device.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=FRACTION

// NAME: error: unknown strategy 'pipeline'; expected data-parallel, model-parallel, layer-pipeline, owt, megatron, random:SEED (SEED a decimal below 2^64), or a strategy .json file
// DEVICES: error: --soap-apply-strategy needs devices=N (or a module with soap.num_devices)
// MISSING: error: cannot read strategy file '{{.*}}missing.json'
// WRONGOP: error: {{.*}}wrong-op.json: strategy: 'ops[0].op' is 'linalg.matmul' but op 0 of the model is 'linalg.fill'
// DIVIDE: error: {{.*}}not-dividing.json: strategy: node 1 (linalg.matmul at {{.*}}errors.mlir:{{[0-9]+}}:8): degree 3 does not divide dimension 0 ('m') of size 16
// JSON: error: {{.*}}bad.json: strategy: not valid JSON
// COUNT: error: {{.*}}valid4.json is a strategy for 4 devices, not 8
// REPLICATED: error: {{.*}}replicated-string.json: strategy: 'ops[0].replicated' must be true or false
// FRACTION: error: {{.*}}fractional-device.json: strategy: 'ops[1]' needs integer lists 'degrees' and 'devices' (or "replicated": true)
// SEED: error: unknown strategy 'random:99999999999999999999'; expected {{.*}}random:SEED (SEED a decimal below 2^64)
func.func @linear(%x: tensor<16x32xf32>, %w: tensor<32x8xf32> {soap.param}, %o: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %zero = arith.constant 0.0 : f32
  %f = linalg.fill ins(%zero : f32) outs(%o : tensor<16x8xf32>) -> tensor<16x8xf32>
  %y = linalg.matmul ins(%x, %w : tensor<16x32xf32>, tensor<32x8xf32>) outs(%f : tensor<16x8xf32>) -> tensor<16x8xf32>
  return %y : tensor<16x8xf32>
}

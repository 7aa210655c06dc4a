// RUN: not soap-opt %s --soap-search -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOMACHINE
// RUN: not soap-opt %s --soap-search="machine=p100-4x4 chains=0" -o /dev/null 2>&1 | FileCheck %s --check-prefix=CHAINS
// RUN: not soap-opt %s --soap-search="machine=p100-4x4 layer-moves=1.5" -o /dev/null 2>&1 | FileCheck %s --check-prefix=CHAINS
// RUN: not soap-opt %s --soap-search="machine=p100-4x4 local-moves=-0.1" -o /dev/null 2>&1 | FileCheck %s --check-prefix=CHAINS
// RUN: not soap-opt %s --soap-search="machine=p100-4x4 temperature=nan" -o /dev/null 2>&1 | FileCheck %s --check-prefix=CHAINS
// RUN: not soap-opt %s --soap-search="machine=p100-4x4 time=inf" -o /dev/null 2>&1 | FileCheck %s --check-prefix=CHAINS
// RUN: not soap-opt %s --soap-search="machine=p100-4x4 layer-moves=nan" -o /dev/null 2>&1 | FileCheck %s --check-prefix=CHAINS
// RUN: not soap-opt %s --soap-search="machine=p100-4x4 devices=4 budget=200 memory-limit=1000" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MEMORY

// NOMACHINE: error: no machine given: use machine=FILE.json or a name from machines/ such as p100-4x4
// An error about the whole module names its location, without the module
// printed after it (soap-opt's default), unless asked for.
// NOMACHINE-NOT: see current operation
// RUN: not soap-opt %s --soap-search --mlir-print-op-on-diagnostic=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=DUMP
// DUMP: note: see current operation
// CHAINS: error: --soap-search: budget, time and memory-limit must be >= 0, chains and threads >= 1, temperature > 0, layer-moves and local-moves in [0, 1] (and all finite)
// MEMORY: error: no strategy found fits in 0.000 GB per device: the best needs {{[0-9.]+}} GB on its fullest device
func.func @linear(%x: tensor<16x32xf32>, %w: tensor<32x8xf32> {soap.param}, %o: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %zero = arith.constant 0.0 : f32
  %f = linalg.fill ins(%zero : f32) outs(%o : tensor<16x8xf32>) -> tensor<16x8xf32>
  %y = linalg.matmul ins(%x, %w : tensor<16x32xf32>, tensor<32x8xf32>) outs(%f : tensor<16x8xf32>) -> tensor<16x8xf32>
  return %y : tensor<16x8xf32>
}

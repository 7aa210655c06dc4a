// RUN: not soap-opt %s --soap-simulate -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOMACHINE
// RUN: not soap-opt %s --soap-simulate="machine=v100-99" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOTFOUND
// RUN: not soap-opt %s --soap-simulate="machine=p100-4x4 devices=32" -o /dev/null 2>&1 | FileCheck %s --check-prefix=TOOMANY
// RUN: not soap-opt %s --soap-simulate="machine=%S/Inputs/broken.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BROKEN
// RUN: not soap-opt %s --soap-simulate="machine=p100-4x4 devices=2" -o /dev/null 2>&1 | FileCheck %s --check-prefix=FIT
// RUN: not soap-opt %s --soap-simulate="machine=p100-4x4 optimizer=lamb" -o /dev/null 2>&1 | FileCheck %s --check-prefix=OPT

// NOMACHINE: error: no machine given: use machine=FILE.json or a name from machines/ such as p100-4x4
// NOTFOUND: error: machine 'v100-99' not found
// TOOMANY: error: {{.*}}32
// BROKEN: error: {{.*}}broken.json: 'inter_node.bandwidth' must be a positive number (bytes/s), got -3
// FIT: error: the program's configs do not fit 2 devices of 'p100-4x4'{{.*}}: node 1 (linalg.matmul at {{.*}}): device 2 of task 2 is out of range: the module declares 2 devices
// OPT: error: unknown optimizer 'lamb'; expected sgd, momentum or adam
module attributes {soap.num_devices = 4} {
func.func @linear(%x: tensor<16x32xf32>, %w: tensor<32x8xf32> {soap.param}, %o: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %zero = arith.constant 0.0 : f32
  %f = linalg.fill ins(%zero : f32) outs(%o : tensor<16x8xf32>) -> tensor<16x8xf32>
  %y = linalg.matmul {soap.config = #soap.config<degrees = [4, 1, 1], devices = [0, 1, 2, 3]>} ins(%x, %w : tensor<16x32xf32>, tensor<32x8xf32>) outs(%f : tensor<16x8xf32>) -> tensor<16x8xf32>
  return %y : tensor<16x8xf32>
}
}

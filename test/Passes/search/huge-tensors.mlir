// A tensor too large for any machine (2^62 f32 elements: its byte count
// overflows int64) is refused by name: by the search and the simulator
// (the graph builder), and by the executable before it allocates.
// RUN: not soap-opt %s --soap-search="machine=p100-4x4 devices=4 budget=10" -o /dev/null 2>&1 | FileCheck %s --check-prefix=GRAPH
// RUN: not soap-opt %s --soap-simulate="machine=p100-4x4" -o /dev/null 2>&1 | FileCheck %s --check-prefix=GRAPH
// RUN: soap-opt %s --soap-training-step="loss=mse" --soap-lower-cpu | soap-translate --soap-to-executable -o %t.exe
// RUN: not %t.exe --steps 1 2>&1 | FileCheck %s --check-prefix=RUNTIME

// GRAPH: error: argument 0 has type tensor<4611686018427387904xf32>, more than 2^50 bytes (1 PiB); no machine holds it
// RUNTIME: error: 'arg0' (f32[4611686018427387904]) has more than 2^50 bytes; it cannot be allocated
func.func @forward(%w: tensor<4611686018427387904xf32> {soap.param}, %x: tensor<4xf32>) -> tensor<4xf32> {
  %s = tensor.extract_slice %w[0] [4] [1] : tensor<4611686018427387904xf32> to tensor<4xf32>
  %e = tensor.empty() : tensor<4xf32>
  %0 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x, %s : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

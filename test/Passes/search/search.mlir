// RUN: soap-opt %soap_src/docs/examples/mlp.mlir --soap-search="machine=p100-4x4 devices=4 budget=800 seed=3 summary=%t.json" 2> %t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=SUMMARY < %t.err
// RUN: FileCheck %s --check-prefix=JSON < %t.json
// The same seed and budget give the same strategy, whatever the threads.
// RUN: soap-opt %soap_src/docs/examples/mlp.mlir --soap-search="machine=p100-4x4 devices=4 budget=800 seed=3 chains=4 threads=1" --soap-export-strategy="file=%t.one.json" -o /dev/null 2>/dev/null
// RUN: soap-opt %soap_src/docs/examples/mlp.mlir --soap-search="machine=p100-4x4 devices=4 budget=800 seed=3 chains=4 threads=2" --soap-export-strategy="file=%t.two.json" -o /dev/null 2>/dev/null
// RUN: diff %t.one.json %t.two.json

// Every op of the result carries a config for the 4 devices.
// CHECK: module attributes {soap.num_devices = 4 : i64}
// CHECK: linalg.matmul {soap.config = #soap.config<degrees = [{{[0-9, ]+}}], devices = [{{[0-9, ]+}}]>}

// SUMMARY: soap-search: p100-4x4, 4 devices: best {{[0-9.]+}} ms, {{[0-9.]+}}x data parallel ({{[0-9.]+}} ms), {{[0-9.]+}}x the best expert strategy, {{[a-z-]+}} ({{[0-9.]+}} ms); {{[0-9]+}} proposals in {{[0-9.]+}} s ({{[0-9]+}}/s), {{[0-9]+}}% accepted
// SUMMARY: soap-search: the strategy fits: {{[0-9.]+}} GB on the fullest device, limit 17.180 GB

// JSON-DAG: "baselines_ms": {
// JSON-DAG: "data-parallel":
// JSON-DAG: "owt":
// JSON-DAG: "best_step_time_ms":
// JSON-DAG: "convergence": [
// JSON-DAG: "iterations": {{[0-9]+}}
// JSON-DAG: "speedup_over_data_parallel":
// JSON-DAG: "speedup_over_best_expert":
// JSON-DAG: "fits_memory": true

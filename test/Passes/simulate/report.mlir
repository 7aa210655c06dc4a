// RUN: soap-opt %soap_src/docs/examples/mlp.mlir --soap-apply-strategy="strategy=data-parallel devices=4" \
// RUN:   --soap-simulate="machine=p100-4x4 report=%t.json trace=%t.trace.json" -o /dev/null 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=REPORT < %t.json
// RUN: FileCheck %s --check-prefix=TRACE < %t.trace.json

// CHECK: soap-simulate: p100-4x4, 4 devices, training step: {{[0-9.]+}} ms, {{[0-9.]+}}% busy, 4.88 MB moved, peak memory {{[0-9.]+}} MB/device

// The data-parallel traffic is the ring all-reduce of the parameters,
// (784*256 + 256 + 256*10 + 10) * 4 = 814120 bytes, times 2 * (4 - 1):
// 4884720, plus the all-reduce that completes the loss (the mean over the
// batch leaves a partial sum of 4 bytes on each device): 2 * 4 * 3 / 4 = 6
// bytes per device, 24 in all.
// REPORT: "devices": [
// REPORT: "busy_ms":
// REPORT: "peak_memory_bytes":
// REPORT: "machine": "p100-4x4"
// REPORT: "step_time_ms":
// REPORT: "total_comm_bytes": 4884744

// TRACE: "traceEvents"
// TRACE-DAG: "name":"device 3"
// TRACE-DAG: "cat":"all-reduce"
// TRACE-DAG: "cat":"forward"
// TRACE-DAG: "cat":"backward"
// TRACE-DAG: "cat":"update"

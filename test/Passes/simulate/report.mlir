// RUN: soap-opt %soap_src/docs/examples/mlp.mlir --soap-apply-strategy="strategy=data-parallel devices=4" \
// RUN:   --soap-simulate="machine=p100-4x4 report=%t.json trace=%t.trace.json" -o /dev/null 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=REPORT < %t.json
// RUN: FileCheck %s --check-prefix=TRACE < %t.trace.json

// CHECK: soap-simulate: p100-4x4, 4 devices, training step: {{[0-9.]+}} ms, {{[0-9.]+}}% busy, 4.89 MB moved, peak memory {{[0-9.]+}} MB/device

// The data-parallel traffic is the ring all-reduce of the parameters,
// (784*256 + 256 + 256*10 + 10) * 4 = 814120 bytes, times 2 * (4 - 1):
// 4884720, plus the final mean over the batch, which has no batch loop and
// runs replicated: each of its 4 copies fetches the 3 remote quarters of
// the per-sample losses (16 floats, 64 bytes each) and sends their
// gradients back: 2 * 12 * 64 = 1536.
// REPORT: "devices": [
// REPORT: "busy_ms":
// REPORT: "peak_memory_bytes":
// REPORT: "machine": "p100-4x4"
// REPORT: "step_time_ms":
// REPORT: "total_comm_bytes": 4886256

// TRACE: "traceEvents"
// TRACE-DAG: "name":"device 3"
// TRACE-DAG: "cat":"all-reduce"
// TRACE-DAG: "cat":"forward"
// TRACE-DAG: "cat":"backward"
// TRACE-DAG: "cat":"update"

// The model the demo runs on: every op is partitionable and classified.
// RUN: soap-opt %soap_src/docs/examples/mlp.mlir --soap-print-dims -o /dev/null 2>&1 | FileCheck %s --implicit-check-not="not partitionable"

// CHECK: mlp.mlir:28:{{.*}} remark: dims m:64:sample n:256:parameter k:784:reduction
// CHECK: mlp.mlir:30:{{.*}} remark: dims d0:64:sample d1:256:parameter
// CHECK: mlp.mlir:41:{{.*}} remark: dims d0:64:sample d1:10:parameter
// CHECK: mlp.mlir:42:{{.*}} remark: dims m:64:sample n:10:parameter k:256:reduction
// CHECK: mlp.mlir:48:{{.*}} remark: dims d0:64:sample d1:10:reduction
// CHECK: mlp.mlir:90:{{.*}} remark: dims d0:64:reduction

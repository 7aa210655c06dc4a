// A gather in the form torch-mlir and IREE emit (a generic whose body reads
// a table captured from above with tensor.extract): the OpGraph gives the
// lookup a loop v over the table's 1000 rows (a lookup loop: it adds no
// work) and records the table as read at [v, d1], so the simulator sees the
// parameter, its memory, its gradient and its splits along the width and
// the rows.
// RUN: soap-opt %s --soap-export-graph="file=%t.json" -o %t.mlir
// RUN: FileCheck %s < %t.json

// CHECK: "nodes": [
// CHECK: "role": "unread",
// CHECK-NEXT: "tensor": 2
// CHECK: "terms": [
// CHECK-NEXT: [
// CHECK-NEXT: 2,
// CHECK-NEXT: 1
// CHECK: "terms": [
// CHECK-NEXT: [
// CHECK-NEXT: 1,
// CHECK-NEXT: 1
// CHECK: "role": "read",
// CHECK-NEXT: "tensor": 0
// CHECK: "role": "write",
// CHECK-NEXT: "tensor": 3
// CHECK: "flops_per_iteration": 0.0,
// CHECK: "lookup_loops": [
// CHECK-NEXT: false,
// CHECK-NEXT: false,
// CHECK-NEXT: true
// CHECK: "loop_kinds": [
// CHECK-NEXT: "sample",
// CHECK-NEXT: "parameter",
// CHECK-NEXT: "reduction"
// CHECK: "loop_names": [
// CHECK-NEXT: "d0",
// CHECK-NEXT: "d1",
// CHECK-NEXT: "v"
// CHECK: "loop_sizes": [
// CHECK-NEXT: 8,
// CHECK-NEXT: 16,
// CHECK-NEXT: 1000
// CHECK: "op": "linalg.generic"
// CHECK: "tensors": [
// CHECK-NEXT: {
// CHECK-NEXT: "dtype": "f32",
// CHECK-NEXT: "element_bytes": 4,
// CHECK-NEXT: "name": "arg0",
// CHECK-NEXT: "parameter": true,
#ids = affine_map<(d0, d1) -> (d0)>
#out = affine_map<(d0, d1) -> (d0, d1)>
func.func @embed(%table: tensor<1000x16xf32> {soap.param}, %ids: tensor<8xi64>) -> tensor<8x16xf32> {
  %empty = tensor.empty() : tensor<8x16xf32>
  %rows = linalg.generic {indexing_maps = [#ids, #out], iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<8xi64>) outs(%empty : tensor<8x16xf32>) {
  ^bb0(%id: i64, %o: f32):
    %row = arith.index_cast %id : i64 to index
    %col = linalg.index 1 : index
    %v = tensor.extract %table[%row, %col] : tensor<1000x16xf32>
    linalg.yield %v : f32
  } -> tensor<8x16xf32>
  return %rows : tensor<8x16xf32>
}

// A gather in the form torch-mlir and IREE emit (a generic whose body reads
// a table captured from above with tensor.extract): the OpGraph records the
// table as a whole-tensor read of the lookup, so the simulator sees the
// parameter, its memory and its gradient (the partitioner materializes the
// table whole for every task).
// RUN: soap-opt %s --soap-export-graph="file=%t.json" -o %t.mlir
// RUN: FileCheck %s < %t.json

// CHECK: "nodes": [
// CHECK: "role": "write",
// CHECK-NEXT: "tensor": 3
// CHECK: "linear": false,
// CHECK: "linear": false,
// CHECK: "role": "read",
// CHECK-NEXT: "tensor": 0
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

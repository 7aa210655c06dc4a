// An integer input that an embedding lookup reads as row ids (a generic
// that casts its element to an index of a tensor.extract, here through a
// reshape) gets soap.range = the table's rows, so that the executable's
// synthetic ids cover the vocabulary instead of being all 0. An integer
// input read otherwise (a mask converted to float) gets none, and a range
// the input already has stays.
// RUN: soap-opt %s --soap-training-step="loss=mse" | FileCheck %s

// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %{{[^:]*}}: tensor<8xi32> {soap.name = "ids", soap.range = 7 : i64, soap.role = "input"}
// CHECK-SAME: %{{[^:]*}}: tensor<2x4xi32> {soap.name = "mask", soap.role = "input"}
// CHECK-SAME: %{{[^:]*}}: tensor<2x4xi64> {soap.name = "kept", soap.range = 3 : i64, soap.role = "input"}

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#ids3 = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @forward(%table: tensor<7x5xf32> {soap.param, soap.name = "table"},
                   %ids: tensor<8xi32> {soap.name = "ids"},
                   %mask: tensor<2x4xi32> {soap.name = "mask"},
                   %kept: tensor<2x4xi64> {soap.name = "kept", soap.range = 3 : i64})
    -> tensor<2x4x5xf32> {
  %ids2 = tensor.expand_shape %ids [[0, 1]] output_shape [2, 4] : tensor<8xi32> into tensor<2x4xi32>
  %e = tensor.empty() : tensor<2x4x5xf32>
  %rows = linalg.generic {indexing_maps = [#ids3, #ids3, #ids3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ids2, %mask, %kept : tensor<2x4xi32>, tensor<2x4xi32>, tensor<2x4xi64>) outs(%e : tensor<2x4x5xf32>) {
  ^bb0(%i: i32, %m: i32, %k: i64, %o: f32):
    %row = arith.index_cast %i : i32 to index
    %col = linalg.index 2 : index
    %v = tensor.extract %table[%row, %col] : tensor<7x5xf32>
    %mf = arith.sitofp %m : i32 to f32
    %kf = arith.sitofp %k : i64 to f32
    %w = arith.mulf %v, %mf : f32
    %x = arith.addf %w, %kf : f32
    linalg.yield %x : f32
  } -> tensor<2x4x5xf32>
  return %rows : tensor<2x4x5xf32>
}

// An integer constant the exporter elided (position ids) has no values to
// run with; elided-integers=iota fills 0, 1, 2, ... along the last
// dimension, elided-integers=zeros fills zeros. The default is an error
// (errors.mlir).
// RUN: soap-opt %s --soap-lift-params="elided-integers=iota" | FileCheck %s --check-prefix=IOTA
// RUN: soap-opt %s --soap-lift-params="elided-integers=zeros" | FileCheck %s --check-prefix=ZEROS

// IOTA-LABEL: func.func @embed(
// IOTA: arith.constant dense<{{\[}}[0, 1, 2, 3], [0, 1, 2, 3]]> : tensor<2x4xi64>
// IOTA-NOT: dense_resource
// ZEROS: arith.constant dense<0> : tensor<2x4xi64>
// ZEROS-NOT: dense_resource
func.func @embed(%x: tensor<2x4xf32>) -> tensor<2x4xi64> {
  %ids = arith.constant dense_resource<__elided__> : tensor<2x4xi64>
  return %ids : tensor<2x4xi64>
}

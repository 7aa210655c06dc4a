// soap-translate carries upstream's translations.
// RUN: soap-translate --mlir-to-llvmir %s | FileCheck %s
// RUN: soap-translate --help | FileCheck %s --check-prefix=HELP

// CHECK: define float @scale(float %[[X:.*]])
// CHECK: fmul float %[[X]], 2.000000e+00
// HELP-DAG: --mlir-to-llvmir
// HELP-DAG: --soap-verify
llvm.func @scale(%x: f32) -> f32 {
  %c = llvm.mlir.constant(2.0 : f32) : f32
  %r = llvm.fmul %x, %c : f32
  llvm.return %r : f32
}

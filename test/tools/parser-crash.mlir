// MLIR 22's parser segfaults on an array<index: ...> attribute
// (llvm/llvm-project#179045): soap-opt reports an error that names the
// input instead of crashing. With a parser that has the fix, the attribute
// is still the wrong type for the group, and the run still fails by name.
// Under AddressSanitizer the crash is its report (scripts/sanitize.sh).
// UNSUPPORTED: sanitizers
// RUN: not soap-opt %s 2>&1 | FileCheck %s
// RUN: not soap-opt %s -o %t.out 2>&1 | FileCheck %s
// CHECK: error:
// CHECK-NOT: Stack dump
// CHECK-NOT: PLEASE submit

func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = "soap.all_reduce"(%x) <{kind = 0 : i32, group = array<index: 0, 1>}> : (tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

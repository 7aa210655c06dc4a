//===- LoopOutlining.h - one LLVM function per loop nest --------*- C++ -*-===//
//
// A lowered training step is one function with thousands of loop nests.
// LLVM's loop passes (IndVarSimplify above all) and its code generator take
// time superlinear in the size of a function, so SOAP moves every top-level
// loop nest into a function of its own before optimizing, and marks those
// functions noinline so the inliner does not undo it.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_CODEGEN_LOOPOUTLINING_H
#define SOAP_CODEGEN_LOOPOUTLINING_H

namespace llvm {
class Module;
class TargetMachine;
} // namespace llvm

namespace soap::codegen {

/// Outlines every top-level loop nest of every function of `module` into a
/// new noinline function. `machine` may be null.
void outlineLoopNests(llvm::Module &module, llvm::TargetMachine *machine);

} // namespace soap::codegen

#endif // SOAP_CODEGEN_LOOPOUTLINING_H

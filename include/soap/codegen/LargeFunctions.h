//===- LargeFunctions.h - large functions to the fast code generator -*- C++ -*-===//
//
// Once its loop nests are outlined (LoopOutlining.h), a partitioned training
// step is still one function of hundreds of thousands of instructions: the
// calls, guards and buffer management between the kernels. LLVM's greedy
// register allocator takes time superlinear in such a function (the step's
// arguments live across all of it). SOAP moves those functions, already
// optimized, into a module of their own that the code generator compiles
// at CodeGenOptLevel::None (FastISel and the local register allocator:
// linear time). Only loop-free functions move: a kernel, however large,
// keeps the optimizing code generator.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_CODEGEN_LARGEFUNCTIONS_H
#define SOAP_CODEGEN_LARGEFUNCTIONS_H

#include <memory>

namespace llvm {
class Module;
} // namespace llvm

namespace soap::codegen {

/// Moves every loop-free function of `module` with at least
/// `minInstructions` LLVM instructions (driver code: what is left of a step
/// once its loop nests are outlined) into a new module, leaving declarations behind, and returns
/// it; null when no function is that large (and `module` is unchanged).
/// Local symbols of `module` become external and hidden, so that the two
/// object files link into one executable.
std::unique_ptr<llvm::Module> splitOffLargeFunctions(llvm::Module &module,
                                                     unsigned minInstructions);

} // namespace soap::codegen

#endif // SOAP_CODEGEN_LARGEFUNCTIONS_H

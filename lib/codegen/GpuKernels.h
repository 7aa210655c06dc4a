//===- GpuKernels.h - kernels of the GPU lowering ----------*- C++ -*-===//
//
// Internal to lib/codegen: the kernel shapes GpuLowering.cpp builds besides
// one thread per point (GpuKernels.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_LIB_CODEGEN_GPUKERNELS_H
#define SOAP_LIB_CODEGEN_GPUKERNELS_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

namespace soap::codegen {

/// A gpu.launch of `grid` blocks of `block` threads at `b`'s insertion point,
/// with an empty body (but its terminator).
mlir::gpu::LaunchOp createLaunch(mlir::OpBuilder &b, mlir::Location loc,
                                 int64_t grid, int64_t block);

/// Replaces `op`, a generic on buffers with static loops whose outputs are
/// all reductions by a combiner gpu.all_reduce knows (add, mul, min, max,
/// and, or, xor) over at least 32 points, by a kernel of one block per
/// output point whose threads share the reduced points. False (and `op`
/// untouched) otherwise.
bool launchBlockReduction(mlir::RewriterBase &rewriter,
                          mlir::linalg::GenericOp op);

/// Replaces `outer`, a perfect loop nest with constant bounds whose
/// innermost body adds values to elements of buffers (load, add, store at
/// the same indices: a gather's scatter-add gradient), by a kernel of one
/// thread per point of the nest with each update as an atomic add. False
/// (and the nest untouched) otherwise.
bool launchScatterAdd(mlir::RewriterBase &rewriter, mlir::scf::ForOp outer);

} // namespace soap::codegen

#endif // SOAP_LIB_CODEGEN_GPUKERNELS_H

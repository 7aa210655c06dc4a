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

#include <optional>

namespace soap::codegen {

/// Threads per block of generated kernels, at most.
constexpr int64_t kBlockSize = 256;

mlir::Value constantIndex(mlir::OpBuilder &b, mlir::Location loc,
                          int64_t value);

/// The iterations of a loop: from `lower` in steps of `step`, `count` of
/// them.
struct LoopRange {
  int64_t lower, step, count;
};

/// The range of a loop with constant bounds and a positive step; none
/// otherwise.
std::optional<LoopRange> constantRange(mlir::Value lower, mlir::Value upper,
                                       mlir::Value step);

/// `linear` split into the induction values of loops of `ranges` (the last
/// one fastest, so that neighbouring threads touch neighbouring elements of
/// row-major buffers).
llvm::SmallVector<mlir::Value> delinearize(mlir::OpBuilder &b,
                                           mlir::Location loc,
                                           mlir::Value linear,
                                           llvm::ArrayRef<LoopRange> ranges);

/// A gpu.launch of `grid` blocks of `block` threads at `b`'s insertion point,
/// with an empty body (but its terminator).
mlir::gpu::LaunchOp createLaunch(mlir::OpBuilder &b, mlir::Location loc,
                                 int64_t grid, int64_t block);

/// A launch of one thread per point of the loops of `ranges` (at least one
/// point) at `b`'s insertion point, in blocks of up to kBlockSize threads;
/// leaves `b` inside it where the thread has a point, and returns the
/// point's induction values (delinearize).
llvm::SmallVector<mlir::Value>
launchOnePerPoint(mlir::OpBuilder &b, mlir::Location loc,
                  llvm::ArrayRef<LoopRange> ranges);

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

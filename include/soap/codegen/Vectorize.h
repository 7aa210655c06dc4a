//===- Vectorize.h - tiling linalg ops for registers, and vectorizing -*- C++ -*-===//
//
// What soap-profile's kernels and `--soap-lower-cpu kernels=vector` share:
// tile a linalg op on tensors so that a tile is a register block
// (contractions: 4 rows x 4 vectors of the output per reduction step;
// convolutions: a 1-D convolution of one output row), vectorize the tile,
// and, after bufferization, lower the vector ops to 1-D forms LLVM handles.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_CODEGEN_VECTORIZE_H
#define SOAP_CODEGEN_VECTORIZE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include <string>

namespace soap::codegen {

/// f32 lanes of the host's widest vector registers: 16 with AVX-512, 8
/// with AVX2, 4 otherwise.
int64_t vectorLanesF32();

/// Tile sizes (0: the whole loop) that make one tile of `op` a register
/// block; sizes divide the loops, so every tile has static shapes.
llvm::SmallVector<int64_t> chooseTileSizes(mlir::linalg::LinalgOp op);

/// Tiles `op` (on tensors, static shapes) with chooseTileSizes and
/// vectorizes the tile in place. On failure `error` says why; the op may
/// then be left tiled but not vectorized, which is still correct code.
bool tileAndVectorize(mlir::linalg::LinalgOp op, std::string &error);

/// Whether the CPU lowering tiles and vectorizes `op` (contractions and
/// convolutions on tensors with static shapes; with `blasKernels`, only
/// those BLAS does not take). Everything else becomes loops that LLVM
/// vectorizes where it can. soap-profile asks the same question, so that
/// a profiled kernel is compiled as the executable compiles it.
bool vectorizedByLowering(mlir::linalg::LinalgOp op, bool blasKernels);

/// Replaces f32 transcendental functions (tanh, exp, log, erf, ...) in
/// `root` by polynomial approximations in arith ops, which loops vectorize
/// (libm calls do not); accurate to a few ulp.
void approximateMathFunctions(mlir::Operation *root);

/// Lowers vector.contract, multi-reductions, transposes and N-D transfers
/// in `func` to 1-D vector operations that convert-vector-to-llvm handles.
bool lowerVectorOps(mlir::func::FuncOp func, std::string &error);

} // namespace soap::codegen

#endif // SOAP_CODEGEN_VECTORIZE_H

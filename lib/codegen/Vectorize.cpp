//===- Vectorize.cpp - tiling linalg ops for registers, and vectorizing -===//
//
// Moved from tools/soap-profile/KernelCodegen.cpp so that the CPU lowering
// (--soap-lower-cpu kernels=vector) and soap-profile compile kernels alike.
//
//===----------------------------------------------------------------------===//

#include "soap/codegen/Vectorize.h"
#include "soap/codegen/BlasKernels.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/TargetParser/Host.h"

#include <algorithm>

using namespace mlir;

namespace soap::codegen {

bool vectorizedByLowering(linalg::LinalgOp op, bool blasKernels) {
  if (!op.hasPureTensorSemantics() || op.hasDynamicShape())
    return false;
  bool kernel = linalg::isaContractionOpInterface(op) ||
                linalg::isaConvolutionOpInterface(op);
  return kernel && !(blasKernels && blasTakes(op));
}

void approximateMathFunctions(Operation *root) {
  RewritePatternSet patterns(root->getContext());
  populateMathPolynomialApproximationPatterns(patterns);
  (void)applyPatternsGreedily(root, std::move(patterns));
}

//===----------------------------------------------------------------------===//
// Tiling and vectorization
//===----------------------------------------------------------------------===//

/// The largest divisor of `size` that is at most `limit`.
static int64_t divisorAtMost(int64_t size, int64_t limit) {
  for (int64_t d = std::min(size, limit); d > 1; --d)
    if (size % d == 0)
      return d;
  return 1;
}

/// The loop that indexes the innermost dimension of `map`'s results, or -1
/// when that is not a plain loop.
static int innermostLoop(AffineMap map) {
  if (map.getNumResults() == 0)
    return -1;
  if (auto dim = dyn_cast<AffineDimExpr>(map.getResults().back()))
    return dim.getPosition();
  return -1;
}

/// f32 lanes of the host's widest vector registers: 16 with AVX-512, 8
/// with AVX2 (the JIT compiles for the host CPU).
int64_t vectorLanesF32() {
  static int64_t lanes = [] {
    llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
    if (features.lookup("avx512f"))
      return 16;
    if (features.lookup("avx"))
      return 8;
    return 4; // SSE, NEON
  }();
  return lanes;
}

/// Tile sizes (0: the whole loop) that make one tile a register block:
/// for contractions 4 rows x 4 vectors of the output per reduction step,
/// for convolutions a 1-D convolution of 16 output columns, otherwise a
/// vector along the innermost dimension of the largest operand. Sizes
/// divide the loops, so that every tile has static shapes.
SmallVector<int64_t> chooseTileSizes(linalg::LinalgOp op) {
  SmallVector<int64_t> loops = op.getStaticLoopRanges();
  SmallVector<int64_t> tiles;
  for (int64_t size : loops)
    tiles.push_back(size == 1 ? 0 : 1);
  auto tileTo = [&](int loop, int64_t limit) {
    int64_t d = divisorAtMost(loops[loop], limit);
    tiles[loop] = d == loops[loop] ? 0 : d;
  };

  if (linalg::isaContractionOpInterface(op)) {
    FailureOr<linalg::ContractionDimensions> dims =
        linalg::inferContractionDims(op);
    if (succeeded(dims)) {
      // An output tile of 4 rows of 4 vector registers (16 accumulators),
      // one reduction step at a time: the fastest of the shapes tried on
      // AVX-512 (512^3 f32: 4x64 ~45% of peak, 8x32 ~33%, 6x64 ~40%;
      // reduction tiles above 1 lower badly).
      int outputInner =
          innermostLoop(op.getMatchingIndexingMap(op.getDpsInitOperand(0)));
      int64_t rowTile = 4, columnTile = 4 * vectorLanesF32();
      if (outputInner >= 0 && llvm::is_contained(dims->n, outputInner)) {
        tileTo(outputInner, columnTile);
        if (!dims->m.empty())
          tileTo(dims->m.back(), rowTile);
      } else if (outputInner >= 0 && llvm::is_contained(dims->m, outputInner)) {
        tileTo(outputInner, columnTile);
        if (!dims->n.empty())
          tileTo(dims->n.back(), rowTile);
      } else if (!dims->k.empty()) {
        tileTo(dims->k.back(), 64); // a matrix-vector product
      }
      return tiles;
    }
  }

  if (linalg::isaConvolutionOpInterface(op)) {
    FailureOr<linalg::ConvolutionDimensions> dims =
        linalg::inferConvolutionDims(op);
    if (succeeded(dims) && !dims->outputImage.empty() &&
        !dims->filterLoop.empty()) {
      // Every loop 1 but: 16 output columns (the rows of the 1-D
      // convolution a tile decomposes into) with their whole window, a
      // vector of output channels, 8 input channels. The fastest of the
      // shapes tried on AVX-512 (3x3 and 1x1 convolutions of 64-256
      // channels: ~25 GFLOP/s, against ~7 with 4 columns x 64 channels
      // x 1 input channel).
      int64_t lanes = vectorLanesF32();
      tileTo(dims->outputImage.back(), 16);
      tiles[dims->filterLoop.back()] = 0;
      for (unsigned f : dims->outputChannel)
        tileTo(f, lanes);
      for (unsigned c : dims->inputChannel)
        tileTo(c, 8);
      for (unsigned d : dims->depth)
        tileTo(d, lanes);
      return tiles;
    }
  }

  // Other ops: a vector along the innermost dimension of the largest
  // operand (contiguous in memory), one element along every other loop.
  int best = -1;
  int64_t bestElements = -1;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<ShapedType>(operand.get().getType());
    if (!type || !type.hasStaticShape() || type.getRank() == 0)
      continue;
    int loop = innermostLoop(op.getMatchingIndexingMap(&operand));
    if (loop >= 0 && type.getNumElements() > bestElements) {
      best = loop;
      bestElements = type.getNumElements();
    }
  }
  if (best >= 0)
    tileTo(best, 64);
  return tiles;
}

bool tileAndVectorize(linalg::LinalgOp target, std::string &error) {
  MLIRContext *context = target->getContext();
  IRRewriter rewriter(context);
  rewriter.setInsertionPoint(target);
  SmallVector<int64_t> tiles = chooseTileSizes(target);

  Operation *toVectorize = target;
  if (llvm::any_of(tiles, [](int64_t t) { return t != 0; })) {
    scf::SCFTilingOptions options;
    options.setTileSizes(getAsIndexOpFoldResult(context, tiles));
    FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
        rewriter, cast<TilingInterface>(target.getOperation()), options);
    if (failed(tiled) || tiled->tiledOps.size() != 1) {
      error = "tiling failed";
      return false;
    }
    rewriter.replaceOp(target, tiled->replacements);
    toVectorize = tiled->tiledOps.front();
  }
  if (linalg::isaConvolutionOpInterface(cast<linalg::LinalgOp>(toVectorize))) {
    // A tile with one output row and one window row is a 1-D convolution,
    // which the vectorizer handles.
    Operation *next = toVectorize->getNextNode();
    RewritePatternSet patterns(context);
    linalg::populateDecomposeConvolutionPatterns(patterns);
    // Only the tile and what replaces it: the rest of the function (a
    // whole training step in --soap-lower-cpu) is left alone.
    GreedyRewriteConfig config;
    config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps);
    if (failed(applyOpPatternsGreedily(ArrayRef<Operation *>{toVectorize},
                                       std::move(patterns), config))) {
      error = "convolution decomposition did not converge";
      return false;
    }
    toVectorize = nullptr;
    for (Operation *op = next ? next->getPrevNode() : nullptr; op;
         op = op->getPrevNode())
      if (isa<linalg::LinalgOp>(op)) {
        toVectorize = op;
        break;
      }
    if (!toVectorize) {
      error = "internal: the convolution disappeared";
      return false;
    }
  }
  rewriter.setInsertionPoint(toVectorize);
  FailureOr<linalg::VectorizationResult> vectorized =
      linalg::vectorize(rewriter, toVectorize);
  if (failed(vectorized)) {
    error = "the vectorizer does not handle this op";
    return false;
  }
  rewriter.replaceOp(toVectorize, vectorized->replacements);
  return true;
}

/// Lowers vector.contract, multi-reductions, transposes and N-D transfers
/// to 1-D vector operations that convert-vector-to-llvm handles well.
bool lowerVectorOps(func::FuncOp func, std::string &error) {
  MLIRContext *context = func.getContext();
  RewritePatternSet patterns(context);
  vector::populateVectorContractLoweringPatterns(
      patterns, vector::VectorContractLowering::OuterProduct);
  vector::populateVectorOuterProductLoweringPatterns(patterns);
  vector::populateVectorMultiReductionLoweringPatterns(
      patterns, vector::VectorMultiReductionLowering::InnerReduction);
  vector::populateVectorTransposeLoweringPatterns(
      patterns, vector::VectorTransposeLowering::EltWise);
  vector::populateVectorTransferPermutationMapLoweringPatterns(patterns);
  vector::populateVectorBroadcastLoweringPatterns(patterns);
  vector::populateVectorShapeCastLoweringPatterns(patterns);
  vector::populateVectorMaskOpLoweringPatterns(patterns);
  if (failed(applyPatternsGreedily(func, std::move(patterns)))) {
    error = "vector lowering did not converge";
    return false;
  }
  return true;
}

} // namespace soap::codegen

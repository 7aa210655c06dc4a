//===- ElementwiseFusion.cpp - elementwise chains as one loop nest --------===//
//
// On tensors, before bufferization: an elementwise linalg op whose result
// has one use fuses into the linalg op that uses it (upstream's
// elementwise-op fusion), so a chain such as bias, batch-norm apply, ReLU
// and a residual add runs as one loop nest and its intermediate tensors
// are never written. Contractions and convolutions are never the consumer:
// they stay whole for the BLAS, oneDNN, cuBLAS and cuDNN calls that take
// them. A producer with several uses stays, so no work is duplicated; a
// producer that accumulates into its own output stays too (below).
//
//===----------------------------------------------------------------------===//

#include "LoweringSteps.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace soap::codegen {

/// True when `op`'s body reads the old value of one of its outputs (an
/// accumulation into its init, as the gradient sums are written). Fusing
/// such producers gave wrong parameter updates (the zoo MLP and BERT, a NaN
/// in ResNet-18's export; the cause inside the upstream rewrite is not
/// traced yet), so they stay alone.
static bool readsItsOutputs(linalg::LinalgOp op) {
  return llvm::any_of(op.getDpsInitsMutable(), [&](OpOperand &init) {
    return op.payloadUsesValueFromOperand(&init);
  });
}

LogicalResult fuseElementwiseChains(ModuleOp module) {
  MLIRContext *context = module.getContext();
  RewritePatternSet patterns(context);
  linalg::populateElementwiseOpsFusionPatterns(patterns, [](OpOperand *fused) {
    auto producer = fused->get().getDefiningOp<linalg::LinalgOp>();
    auto consumer = dyn_cast<linalg::LinalgOp>(fused->getOwner());
    return producer && producer->hasOneUse() && consumer &&
           !readsItsOutputs(producer) &&
           !linalg::isaContractionOpInterface(consumer) &&
           !linalg::isaConvolutionOpInterface(consumer);
  });
  linalg::populateEraseUnusedOperandsAndResultsPatterns(patterns);
  if (failed(applyPatternsGreedily(module, std::move(patterns))))
    return module.emitError() << "elementwise fusion did not converge";
  return success();
}

} // namespace soap::codegen

//===- ElementwiseFusion.cpp - elementwise chains as one loop nest --------===//
//
// On tensors, before bufferization: an elementwise linalg op whose result
// has one use fuses into the linalg op that uses it (upstream's
// elementwise-op fusion), so a chain such as bias, batch-norm apply, ReLU
// and a residual add runs as one loop nest and its intermediate tensors
// are never written. Contractions and convolutions are never the consumer:
// they stay whole for the BLAS, oneDNN, cuBLAS and cuDNN calls that take
// them. A producer with several uses stays, so no work is duplicated.
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
/// accumulation into its init, as the gradient sums are written): fused
/// into a consumer, that value would be read from the shared init after
/// the consumer overwrote it, so such producers stay alone.
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

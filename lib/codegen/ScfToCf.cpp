//===- ScfToCf.cpp - SCF to control flow in memory linear in the program -===//
//
// Upstream's convert-scf-to-cf applies its patterns in a dialect conversion,
// whose rewriter records every op that a block split moves so that it could
// roll the conversion back. Lowering one scf.if or scf.for splits its block
// and moves every op after it, so a step with thousands of them (a
// partitioned program's soap.on_devices guards, the loops of unfused
// generics) recorded the square of its size: the searched 4-rank MobileBERT
// ran out of 24 GB there. The same patterns under the greedy driver keep no
// rollback record. (The time still grows with ops x splits, as moving ops
// updates their parent.)
//
//===----------------------------------------------------------------------===//

#include "soap/codegen/CpuLowering.h"

#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <mutex>

using namespace mlir;

namespace soap {
namespace {

struct ScfToCfPass : PassWrapper<ScfToCfPass, OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ScfToCfPass)

  StringRef getArgument() const override { return "soap-scf-to-cf"; }
  StringRef getDescription() const override {
    return "convert-scf-to-cf's patterns under the greedy driver (memory "
           "linear in the program; used by the SOAP lowerings)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, cf::ControlFlowDialect>();
  }

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateSCFToControlFlowConversionPatterns(patterns);
    GreedyRewriteConfig config;
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled)
        .enableFolding(false)
        .enableConstantCSE(false)
        .setMaxIterations(GreedyRewriteConfig::kNoLimit);
    (void)applyPatternsGreedily(getOperation(), std::move(patterns), config);
    WalkResult left = getOperation()->walk([](Operation *op) {
      if (isa<scf::SCFDialect>(op->getDialect())) {
        op->emitError() << "'" << op->getName()
                        << "' could not be lowered to control flow";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace

void registerScfToCfPass() {
  static std::once_flag once;
  std::call_once(once, [] { PassRegistration<ScfToCfPass>(); });
}

} // namespace soap

//===- TrainingStep.cpp - --soap-training-step ----------------------------===//
//
// Thin pass over soap::autodiff::buildTrainingStep (lib/autodiff): reads
// the options, finds the loss function, adds @train_step and cleans it up.
//
//===----------------------------------------------------------------------===//

#include "PassSupport.h"
#include "soap/Autodiff/TrainingStep.h"
#include "soap/Passes/Passes.h"
#include "soap/graph/OpGraphBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/CSE.h"
#include "mlir/Transforms/Passes.h"

#include <cmath>

namespace soap {
#define GEN_PASS_DEF_SOAPAPPENDLOSS
#define GEN_PASS_DEF_SOAPTRAININGSTEP
#include "soap/Passes/Passes.h.inc"
} // namespace soap

using namespace mlir;
using namespace soap;

namespace {

/// The loss= and result= options both passes take, or an error on `module`.
LogicalResult parseLoss(ModuleOp module, StringRef loss, StringRef result,
                        autodiff::LossKind &kind,
                        autodiff::LossResults &results) {
  std::optional<autodiff::LossKind> lossKind = autodiff::parseLossKind(loss);
  if (!lossKind)
    return module.emitError() << "unknown loss '" << loss
                              << "' (expected none, softmax-xent or mse)";
  std::optional<autodiff::LossResults> selection =
      autodiff::parseLossResults(result);
  if (!selection)
    return module.emitError()
           << "bad result='" << result << "' (expected a result number or all)";
  kind = *lossKind;
  results = *selection;
  return success();
}

struct SoapAppendLossPass
    : public soap::impl::SoapAppendLossBase<SoapAppendLossPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    autodiff::LossKind kind;
    autodiff::LossResults results;
    if (loss.empty()) {
      module.emitError() << "soap-append-loss needs loss=softmax-xent or "
                            "loss=mse";
      return signalPassFailure();
    }
    if (failed(parseLoss(module, loss, result, kind, results)) ||
        failed(rejectTosa(module, "soap-append-loss")))
      return signalPassFailure();
    FailureOr<func::FuncOp> function =
        autodiff::findLossFunction(module, funcName);
    if (failed(function) ||
        failed(
            refuseAfterTrainingStep(module, *function, "soap-append-loss")) ||
        failed(inlineCalls(*function, "soap-append-loss")) ||
        failed(autodiff::appendLoss(*function, kind, results)))
      return signalPassFailure();
  }
};

struct SoapTrainingStepPass
    : public soap::impl::SoapTrainingStepBase<SoapTrainingStepPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    autodiff::TrainingStepOptions options;
    std::optional<autodiff::OptimizerKind> optimizerKind =
        autodiff::parseOptimizerKind(optimizer);
    if (!optimizerKind) {
      module.emitError() << "unknown optimizer '" << optimizer
                         << "' (expected sgd, momentum or adam)";
      return signalPassFailure();
    }
    // Written so that NaN fails each (a comparison with NaN is false).
    if (!(learningRate > 0.0 && std::isfinite(learningRate)) ||
        !(momentum >= 0.0 && std::isfinite(momentum)) ||
        !(beta1 >= 0.0 && beta1 < 1.0) || !(beta2 >= 0.0 && beta2 < 1.0) ||
        !(epsilon > 0.0 && std::isfinite(epsilon)) ||
        !(weightDecay >= 0.0 && std::isfinite(weightDecay))) {
      module.emitError()
          << "bad optimizer hyperparameters: lr and eps must be positive, "
             "beta1 and beta2 in [0, 1), momentum and weight-decay "
             "non-negative, all finite";
      return signalPassFailure();
    }
    if (failed(parseLoss(module, loss, result, options.loss, options.results)))
      return signalPassFailure();
    options.optimizer = *optimizerKind;
    options.learningRate = learningRate;
    options.momentum = momentum;
    options.beta1 = beta1;
    options.beta2 = beta2;
    options.epsilon = epsilon;
    options.weightDecay = weightDecay;

    if (failed(rejectTosa(module, "soap-training-step")))
      return signalPassFailure();
    FailureOr<func::FuncOp> lossFunction =
        autodiff::findLossFunction(module, funcName);
    if (failed(lossFunction) ||
        failed(inlineCalls(*lossFunction, "soap-training-step")))
      return signalPassFailure();
    FailureOr<func::FuncOp> step =
        autodiff::buildTrainingStep(*lossFunction, options);
    if (failed(step))
      return signalPassFailure();

    // Fold the zeros, unit reshapes and dead forward values the gradient
    // rules leave behind.
    OpPassManager cleanup(func::FuncOp::getOperationName());
    cleanup.addPass(createCanonicalizerPass());
    cleanup.addPass(createCSEPass());
    if (failed(runPipeline(cleanup, *step)))
      return signalPassFailure();
  }
};

} // namespace

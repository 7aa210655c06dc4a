//===- TrainingStep.h - @train_step from a loss function --------*- C++ -*-===//
//
// Builds the training step that docs/train-step.md specifies: the forward
// computation of a loss function, its gradients (Autodiff.h) and an
// optimizer update, as one function `@train_step`.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_AUTODIFF_TRAININGSTEP_H
#define SOAP_AUTODIFF_TRAININGSTEP_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <string>

namespace soap::autodiff {

/// The loss appended to the function's result.
enum class LossKind {
  /// The function already returns a scalar loss.
  None,
  /// Mean softmax cross-entropy of logits [..., classes] against i64 labels
  /// [...].
  SoftmaxCrossEntropy,
  /// Mean squared error against float labels shaped like the output.
  MeanSquaredError,
};

enum class OptimizerKind { SGD, Momentum, Adam };

/// Which results of a function that returns several values the loss
/// applies to: one (by number), or all of them, whose losses are summed.
struct LossResults {
  /// The result number; none: the function's only result.
  std::optional<unsigned> index;
  /// Every result, the losses summed.
  bool all = false;
};

/// `""` (the only result), `all`, or a result number.
std::optional<LossResults> parseLossResults(llvm::StringRef text);

std::optional<LossKind> parseLossKind(llvm::StringRef name);
std::optional<OptimizerKind> parseOptimizerKind(llvm::StringRef name);

struct TrainingStepOptions {
  LossKind loss = LossKind::None;
  OptimizerKind optimizer = OptimizerKind::SGD;
  double learningRate = 0.01;
  double momentum = 0.9;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-8;
  double weightDecay = 0.0;
  LossResults results;
};

/// The function named `name`, or else the only function with an argument
/// marked {soap.param}; emits an error on `module` when there is none or
/// more than one.
mlir::FailureOr<mlir::func::FuncOp> findLossFunction(mlir::ModuleOp module,
                                                     llvm::StringRef name);

/// Adds `@train_step` (docs/train-step.md) for `lossFunction` to the module,
/// after it. Fails after emitting an error.
mlir::FailureOr<mlir::func::FuncOp>
buildTrainingStep(mlir::func::FuncOp lossFunction,
                  const TrainingStepOptions &options);

/// The types of the optimizer state @train_step keeps for parameters of
/// `paramTypes`, in argument order (docs/train-step.md): per parameter its
/// velocity (momentum) or m and v (adam), then adam's step counter.
llvm::SmallVector<mlir::RankedTensorType>
optimizerStateTypes(const TrainingStepOptions &options,
                    llvm::ArrayRef<mlir::RankedTensorType> paramTypes,
                    mlir::MLIRContext *context);

/// Emits the optimizer update @train_step applies: from the parameters,
/// their gradients and the optimizer state (in optimizerStateTypes' order),
/// appends the new parameters and the new state, in the same order.
/// soap-profile times exactly these ops.
void emitOptimizerUpdates(mlir::OpBuilder &b, mlir::Location loc,
                          const TrainingStepOptions &options,
                          llvm::ArrayRef<mlir::Value> params,
                          llvm::ArrayRef<mlir::Value> gradients,
                          llvm::ArrayRef<mlir::Value> state,
                          llvm::SmallVector<mlir::Value> &newParams,
                          llvm::SmallVector<mlir::Value> &newState);

/// Adds `@name(args of lossFunction [, labels]) -> (loss, gradient of each
/// {soap.param} argument)`: the training step without the update, for
/// gradient checks. With `withGradients` false it returns the loss only.
mlir::FailureOr<mlir::func::FuncOp>
buildGradientFunction(mlir::func::FuncOp lossFunction, LossKind loss,
                      llvm::StringRef name, bool withGradients = true,
                      LossResults results = {});

/// Rewrites `function` to return the scalar loss of its result(s)
/// (`loss` is softmax-xent or mse) against labels arguments appended to it
/// ({soap.role = "label"}, named labels or labels.K, soap.range = classes
/// for softmax-xent): the loss function @train_step would build with
/// `loss`, so that a strategy search or a simulation sees the loss's ops.
/// Keeps the function's name, attributes and argument attributes. Fails
/// after emitting an error, leaving `function` as it was.
mlir::FailureOr<mlir::func::FuncOp> appendLoss(mlir::func::FuncOp function,
                                               LossKind loss,
                                               LossResults results = {});

} // namespace soap::autodiff

#endif // SOAP_AUTODIFF_TRAININGSTEP_H

//===- MarkTrainStep.h - a plain function as a training step --*- C++ -*-===//
//
// Exports such as linreg_train_step.mlir are already training steps
// (params and data in, updated params and the loss out) without the
// attributes of docs/train-step.md. markTrainStep adds them, so that the
// CPU lowering and the driver can run the function.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_CODEGEN_MARKTRAINSTEP_H
#define SOAP_CODEGEN_MARKTRAINSTEP_H

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace soap {

struct TrainStepMarking {
  /// The function to mark; it is renamed @train_step.
  std::string func;
  /// Argument numbers of the parameters; the results other than the loss
  /// are their updated values, in this order.
  std::vector<unsigned> params;
  /// Argument numbers of labels; other unmarked arguments are inputs.
  std::vector<unsigned> labels;
  /// The result number of the loss.
  unsigned loss = 0;
  /// soap.init of parameters that have none.
  std::string init = "fan-in";
};

/// Adds soap.role/soap.name/soap.init to the function's arguments and
/// results and renames it @train_step; emits an error and fails on a bad
/// marking (argument out of range, a result whose type differs from its
/// parameter's, ...).
mlir::LogicalResult markTrainStep(mlir::ModuleOp module,
                                  const TrainStepMarking &marking);

} // namespace soap

#endif // SOAP_CODEGEN_MARKTRAINSTEP_H

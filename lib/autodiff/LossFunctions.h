//===- LossFunctions.h - loss heads appended to a model's output -*- C++ -*-===//
//
// Private to lib/autodiff.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_LIB_AUTODIFF_LOSSFUNCTIONS_H
#define SOAP_LIB_AUTODIFF_LOSSFUNCTIONS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace soap::autodiff {

/// Mean softmax cross-entropy of `logits` [..., classes] against integer
/// `labels` [...]: a rank-0 tensor.
mlir::Value buildSoftmaxCrossEntropy(mlir::OpBuilder &b, mlir::Location loc,
                                     mlir::Value logits, mlir::Value labels);

/// Mean of (output - labels)^2 over all elements: a rank-0 tensor.
mlir::Value buildMeanSquaredError(mlir::OpBuilder &b, mlir::Location loc,
                                  mlir::Value output, mlir::Value labels);

/// `lhs + rhs` of two rank-0 tensors (the losses of several results).
mlir::Value addScalars(mlir::OpBuilder &b, mlir::Location loc, mlir::Value lhs,
                       mlir::Value rhs);

/// Before --soap-append-loss replaces `function` with one that returns the
/// loss: its callers (an exporter's driver, such as an IREE-style @main
/// that runs the model and prints its output) are pointed at a private copy
/// that still returns the model's output, `@<name>.output`, without the
/// soap.* marks that would make it a second model to train. An error when
/// that name is taken.
mlir::LogicalResult pointCallersAtOutputCopy(mlir::func::FuncOp function);

} // namespace soap::autodiff

#endif // SOAP_LIB_AUTODIFF_LOSSFUNCTIONS_H

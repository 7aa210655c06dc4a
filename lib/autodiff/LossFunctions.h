//===- LossFunctions.h - loss heads appended to a model's output -*- C++ -*-===//
//
// Private to lib/autodiff.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_LIB_AUTODIFF_LOSSFUNCTIONS_H
#define SOAP_LIB_AUTODIFF_LOSSFUNCTIONS_H

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

} // namespace soap::autodiff

#endif // SOAP_LIB_AUTODIFF_LOSSFUNCTIONS_H

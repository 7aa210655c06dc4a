//===- Autodiff.h - reverse-mode differentiation of tensor programs -*- C++ -*-===//
//
// Reverse-mode automatic differentiation of functions written with linalg,
// tensor, arith and math ops on tensors: the engine behind
// --soap-training-step (docs/training-step.md).
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_AUTODIFF_AUTODIFF_H
#define SOAP_AUTODIFF_AUTODIFF_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"
#include "mlir/Support/LLVM.h"

namespace soap::autodiff {

/// Emits, at the builder's insertion point, the gradient of `loss` (a
/// rank-0 float tensor) with respect to each value of `wrt` (tensors).
/// The forward computation is the ops of the insertion block before the
/// insertion point; the gradients are computed from their results (no
/// recomputation). A value of `wrt` that `loss` does not depend on gets a
/// zero tensor. Fails, after emitting an error at the op concerned, when an
/// op on the path from `wrt` to `loss` cannot be differentiated.
mlir::FailureOr<llvm::SmallVector<mlir::Value>>
buildGradients(mlir::OpBuilder &builder, mlir::Value loss,
               mlir::ArrayRef<mlir::Value> wrt);

/// Emits, at the builder's insertion point, the backward ops of the one op
/// `op` (already in the block): given the adjoints of its results
/// (`resultAdjoints`, one per result), the gradients of the operands
/// numbered `wrtOperands` (tensors), in that order. This is what the
/// training step emits for `op`; soap-profile times it. Fails, after an
/// error at `op`, when `op` has no gradient rule.
mlir::FailureOr<llvm::SmallVector<mlir::Value>>
buildOpGradients(mlir::OpBuilder &builder, mlir::Operation *op,
                 mlir::ValueRange resultAdjoints,
                 mlir::ArrayRef<unsigned> wrtOperands);

/// Registers the dialects whose ops the gradients are made of (linalg,
/// tensor, arith, math) as dependencies of a pass.
void registerAutodiffDependencies(mlir::DialectRegistry &registry);

} // namespace soap::autodiff

#endif // SOAP_AUTODIFF_AUTODIFF_H

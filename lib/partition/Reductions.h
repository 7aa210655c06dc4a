//===- Reductions.h - partial results of reductions -------------*- C++ -*-===//
//
// Private to lib/partition: how an op combines the partial results of a
// split reduction, and whether its init already is that combination's
// identity.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_LIB_PARTITION_REDUCTIONS_H
#define SOAP_LIB_PARTITION_REDUCTIONS_H

#include "soap/Dialect/SoapDialect.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include <optional>

namespace soap::partition {

/// How the body of `op` (one output) combines its output with new values:
/// the combination of the partial results of the ranks; nothing when it is
/// not a sum, max or min of the output.
std::optional<ReductionKind> combinerOf(mlir::linalg::LinalgOp op);

/// True when `init` is a linalg.fill of the identity of `kind`.
bool isIdentityFill(mlir::Value init, ReductionKind kind);

/// The identity of `kind` for `element` (0, -inf or +inf; the extreme
/// integers for integers).
mlir::TypedAttr identityOf(ReductionKind kind, mlir::Type element);

/// A tensor of `type` filled with the identity of `kind` (tensor.empty and
/// linalg.fill at the builder's insertion point).
mlir::Value identityFilled(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::RankedTensorType type, ReductionKind kind);

} // namespace soap::partition

#endif // SOAP_LIB_PARTITION_REDUCTIONS_H

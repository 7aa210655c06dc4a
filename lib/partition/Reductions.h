//===- Reductions.h - partial results of reductions -------------*- C++ -*-===//
//
// Private to lib/partition: whether a reduction's init already is the
// identity of the combination of its partial results (soap/Dialect/
// Combiner.h), and that identity.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_LIB_PARTITION_REDUCTIONS_H
#define SOAP_LIB_PARTITION_REDUCTIONS_H

#include "soap/Dialect/Combiner.h"
#include "soap/Dialect/SoapDialect.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include <optional>

namespace soap::partition {

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

//===- Combiner.h - how a reduction combines its partial results -*- C++
//-*-===//
//
// A linalg op that reduces into one output combines its output with each
// new value by a sum, a max or a min. Split along a reduction loop, its
// tasks hold partial results that this combination completes. Shared by
// the partitioner (which completes them) and the op graph (which tells the
// simulator how the partitioner completes them).
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_DIALECT_COMBINER_H
#define SOAP_DIALECT_COMBINER_H

#include "soap/Dialect/SoapDialect.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include <optional>

namespace soap {

/// How the body of `op` (one output) combines its output with new values:
/// the combination of the partial results of the ranks; nothing when it is
/// not a sum, max or min of the output.
std::optional<ReductionKind> combinerOf(mlir::linalg::LinalgOp op);

/// Whether a split of `op`'s reduction loops completes its partial results
/// at once, on the op's devices, instead of leaving them for the readers to
/// combine: a max or min (its gradient compares the input with the complete
/// result, so the result is needed complete anyway; and pooling windows are
/// small).
inline bool completesPartialsAtOnce(ReductionKind kind) {
  return kind == ReductionKind::max || kind == ReductionKind::min;
}

} // namespace soap

#endif // SOAP_DIALECT_COMBINER_H

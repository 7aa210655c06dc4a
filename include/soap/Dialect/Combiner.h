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

/// Whether the partial results of `op`'s tasks, were a reduction loop of it
/// split, could not be combined: it reduces, its body is not a sum, max or
/// min of one output (a max that also yields its index, torch-mlir's
/// aten.max.dim), and it is no gather (whose tasks along the lookup loops
/// yield partial sums). The partitioner runs such a split whole on every
/// device instead (checkPlan), its gradient runs whole too (autodiff), and
/// the simulator places both so (OpNode::partialsUncombinable).
bool hasUncombinablePartials(mlir::linalg::LinalgOp op);

/// Whether `degrees` (per loop of `op`, a gather's lookup loops after its
/// own) splits a reduction loop of `op` whose partial results could not be
/// combined (hasUncombinablePartials).
bool splitsUncombinablePartials(mlir::linalg::LinalgOp op,
                                llvm::ArrayRef<int64_t> degrees);

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

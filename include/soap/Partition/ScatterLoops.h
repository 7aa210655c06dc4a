//===- ScatterLoops.h - scatter-add loop nests split over the batch -------===//
//
// A gather's gradient (lib/autodiff/GatherGradient.cpp) is a nest of
// scf.for loops over the gather's iteration space that carries the table's
// gradient: each point reads what it needs from tensors defined outside the
// nest with tensor.extract and adds its contribution to one element
// (tensor.insert of extract + value). A loop whose induction variable only
// indexes those outside tensors, directly, can run over a part of its
// range on each device: each device then holds a partial sum of the whole
// gradient, and the parts add up (an all_reduce), as for any reduction
// split over the batch. A loop whose induction variable also picks one
// dimension of the element written (the column) can run over a part of its
// range into that part of the gradient.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_PARTITION_SCATTERLOOPS_H
#define SOAP_PARTITION_SCATTERLOOPS_H

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace soap::partition {

/// A tensor defined outside the nest, read with tensor.extract inside it,
/// whose dimension `dim` is indexed by a loop's induction variable itself.
struct LoopRead {
  /// The extract's tensor operand.
  mlir::OpOperand *tensor;
  unsigned dim;
};

/// A loop whose induction variable picks one dimension of the element
/// written, and otherwise only indexes tensors from outside directly (the
/// column of an embedding's gradient): each device can run its part of the
/// range into its part of the result along that dimension.
struct ColumnLoop {
  llvm::SmallVector<LoopRead> reads;
  unsigned resultDim;
};

/// A scatter-add loop nest (see the file comment).
struct ScatterAddNest {
  /// Outermost first; each loop runs from 0 by 1 and carries one tensor.
  llvm::SmallVector<mlir::scf::ForOp> loops;
  llvm::SmallVector<int64_t> tripCounts;
  /// Per loop: the reads its induction variable indexes, when that is its
  /// only use (the loop sums over its range and can be split); nullopt
  /// when it is used otherwise (it picks the element written).
  llvm::SmallVector<std::optional<llvm::SmallVector<LoopRead>>> summable;
  /// Per loop, when it is a column loop.
  llvm::SmallVector<std::optional<ColumnLoop>> columns;

  /// The nest's result, the gradient.
  mlir::Value result() const { return loops.front()->getResult(0); }
  /// The tensor it starts from.
  mlir::Value init() { return loops.front().getInitArgs()[0]; }
  /// The loop whose induction variable `value` is, if any.
  std::optional<unsigned> loopOf(mlir::Value value);
  /// Makes loop `loop` run `count` times from 0.
  void setTripCount(unsigned loop, int64_t count);
  /// Makes the loops carry `type` (a part of the gradient, after their
  /// init was replaced by one).
  void setCarriedType(mlir::RankedTensorType type);
};

/// The nest `outer` heads, when it is a scatter-add nest: constant bounds,
/// one carried tensor, and every update of it an addition into the element
/// it reads (tensor.insert of arith.addf of tensor.extract at the same
/// indices).
std::optional<ScatterAddNest> matchScatterAdd(mlir::scf::ForOp outer);

/// The nest's one update when the row it writes is read from a tensor
/// defined outside the nest (an embedding's ids: the update is
/// `sum[index_cast(ids[...]), ...]`).
struct LookupUpdate {
  mlir::tensor::InsertOp insert;
  /// The read of the element's old value.
  mlir::tensor::ExtractOp old;
  /// The dimension of the gradient the ids index.
  unsigned dim;
  /// The read of the ids.
  mlir::tensor::ExtractOp ids;
};

/// The lookup update of `nest`; none for other nests (every index a
/// loop's, or more than one update or data-indexed dimension).
std::optional<LookupUpdate> matchLookupUpdate(ScatterAddNest &nest);

} // namespace soap::partition

#endif // SOAP_PARTITION_SCATTERLOOPS_H

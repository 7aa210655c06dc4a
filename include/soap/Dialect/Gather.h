//===- Gather.h - lookups of a table at indices read from data ---*- C++ -*-===//
//
// torch-mlir, IREE and soap-zoo write an embedding lookup as a
// linalg.generic whose body reads a table defined above the op with
// tensor.extract, at indices that are either loops of the op (`linalg.index
// 2`: the column) or computed from the op's inputs (`index_cast %id`: the
// row), and yields the element it read. The partitioning interface sees
// such an op as a loop nest with one more loop per data-indexed dimension of
// the table: a *lookup loop* that ranges over the table's rows. A task that
// covers part of a lookup loop holds those rows of the table; the points
// whose row it lacks yield zero, so the tasks along a lookup loop hold
// partial sums of the result (a vocabulary-parallel embedding). A task along
// a column loop reads only its columns of the table.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_DIALECT_GATHER_H
#define SOAP_DIALECT_GATHER_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <optional>

namespace soap {

struct GatherLookup {
  /// The extract whose element the body yields.
  mutable mlir::tensor::ExtractOp extract;
  /// Loops of the op (linalg's, then one lookup loop per data-indexed
  /// dimension of the table, in dimension order).
  unsigned numOpLoops = 0;
  llvm::SmallVector<int64_t> lookupSizes;
  /// Per dimension of the table, the loop that indexes it: a loop of the op
  /// (its linalg.index) or a lookup loop (numOpLoops + k).
  llvm::SmallVector<unsigned> loopOfDim;

  mlir::Value table() const { return extract.getTensor(); }
  mlir::RankedTensorType tableType() const {
    return mlir::cast<mlir::RankedTensorType>(table().getType());
  }
  unsigned numLoops() const { return numOpLoops + lookupSizes.size(); }
  bool isLookupLoop(unsigned loop) const { return loop >= numOpLoops; }
  bool isLookupDim(unsigned dim) const { return isLookupLoop(loopOfDim[dim]); }
  /// The table's indices as a map from all the loops.
  mlir::AffineMap tableMap() const;
};

/// `op` as a gather (see the file comment): a generic with parallel loops,
/// static shapes and one result whose body yields a tensor.extract of a
/// ranked tensor defined above the op, read nowhere else in the body, at
/// indices that are each a linalg.index of the op or computed from the
/// op's inputs alone (at least one of them).
std::optional<GatherLookup> matchGather(mlir::Operation *op);

/// A task's part of a gather's table: the columns its loops cover and,
/// along a split lookup loop, a range of rows.
struct LocalTable {
  /// The part, the same type on every device.
  mlir::Value tensor;
  /// Per dimension, the global index of the part's first element on this
  /// device (null, or no entry: 0 on every device).
  llvm::SmallVector<mlir::Value> offsets;
};

/// Rewrites `extract`, the extract of `gather` in a task's copy of the op,
/// to read `table` at the global indices minus the part's offsets. Along a
/// lookup dimension the part holds fewer rows than the whole table, a row
/// outside the part yields zero (so that the tasks along a lookup loop hold
/// partial sums).
void lookUpLocally(mlir::OpBuilder &b, const GatherLookup &gather,
                   const LocalTable &table, mlir::tensor::ExtractOp extract);

} // namespace soap

#endif // SOAP_DIALECT_GATHER_H

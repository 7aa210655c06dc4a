//===- BatchDimensions.h - the dimensions derived from the batch -*- C++
//-*-===//
//
// Which dimensions of which values of a function are the batch, or derived
// from it, and how to change their size. --soap-set-batch resizes a model's
// batch with it; --soap-partition shrinks the batch to one device's share.
//
// The batch dimensions are a closure over the def-use graph, in both
// directions, from the batch dimension of every input argument: a linalg op
// ties all operand dimensions indexed by the same loop; a result is tied to
// its init; reshapes tie a source dimension to the group it expands into
// (the batch goes to the group's first dimension, the batch-major
// convention of every exporter) or collapses from; slices, pads and
// concatenations tie dimensions they keep whole. A batch dimension of size
// B*k (a collapsed batch) scales to N*k. Splat constants are rebuilt at the
// new shape. What no input reaches (constants, parameters and what is
// computed from them alone) and has size 1 where a batch loop reads it, at
// batch 1, stays size 1 and is broadcast (position ids sliced from a
// `tensor<1x512xi64>`; a class token concatenated to the samples is
// repeated over the batch). A parameter argument never changes shape: reaching
// one is an error. Anything else that touches a batch dimension is an error
// that names the op, or, for --soap-partition, a use that gets the value
// whole (gathered over the devices) first.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_PARTITION_BATCHDIMENSIONS_H
#define SOAP_PARTITION_BATCHDIMENSIONS_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <memory>

namespace soap {

/// One dimension of one tensor value.
using ValueDim = std::pair<mlir::Value, unsigned>;

/// The batch dimensions of a function.
class BatchDimensions {
public:
  /// The batch dimension of every argument for which `isInput(index)` holds
  /// (dimension 0 unless {soap.batch_dim = k}); they must agree on the batch
  /// size. Errors are prefixed with `pass`. It first gives every use of a
  /// shared `tensor.empty` (or `linalg.fill` of one) its own copy, so that
  /// CSE-merged inits do not tie unrelated dimensions to the batch: the
  /// function changes even when the caller does not resize it.
  /// With `gatherUnknownUses`, a use the closure does not know (an op
  /// nested in a region, such as a tensor.extract in a scatter-add loop or
  /// a gather's body, or an unknown op) is not an error: it is recorded in
  /// getGatheredUses() and the closure does not go through it.
  static mlir::FailureOr<BatchDimensions>
  find(mlir::func::FuncOp function, llvm::StringRef pass,
       llvm::function_ref<bool(unsigned)> isInput,
       bool gatherUnknownUses = false);
  /// The uses find() recorded with gatherUnknownUses, each with the batch
  /// dimension of the value used: the user needs the value whole.
  llvm::ArrayRef<std::pair<mlir::OpOperand *, unsigned>>
  getGatheredUses() const {
    return gathered;
  }

  /// The batch size the function has now.
  int64_t getBatch() const { return batch; }
  /// The seeds: each input argument and its batch dimension.
  llvm::ArrayRef<ValueDim> getInputs() const { return inputs; }
  /// The batch dimensions of `value` (empty when none).
  llvm::SmallDenseSet<unsigned> getDims(mlir::Value value) const {
    return dims.lookup(value);
  }
  /// The loops of `op` that index a batch dimension of one of its operands.
  llvm::SmallVector<unsigned> getBatchLoops(mlir::linalg::LinalgOp op) const;

  /// Moves the batch dimensions recorded for `from` to `to` (a value that
  /// takes its place before resize()).
  void transfer(mlir::Value from, mlir::Value to);

  /// Finds float constants near a reduction over the batch that count its
  /// elements at the current batch (a mean written as a sum divided by a
  /// constant, or multiplied by its inverse). resize() keeps them, so at
  /// `newBatch` they no longer count the elements: a warning names each,
  /// or with `rescale` a remark, and the divf or mulf then uses the count
  /// at `newBatch`. Call before resize().
  void reportBatchDivisors(mlir::func::FuncOp function, int64_t newBatch,
                           bool rescale) const;

  /// Rescales every batch dimension from the current batch to `newBatch`
  /// (which must divide or be a multiple of it evenly), fixes the ops that
  /// spell shapes out, and the function's type; verifies the function.
  mlir::LogicalResult resize(mlir::func::FuncOp function, int64_t newBatch);

private:
  struct MapRewrite {
    mlir::Operation *op;
    unsigned operandIndex, result, loop;
  };
  struct Broadcast {
    mlir::Operation *op;
    unsigned operandIndex, dim;
  };
  int64_t batch = 0;
  std::string pass;
  llvm::SmallVector<ValueDim> inputs;
  llvm::DenseMap<mlir::Value, llvm::SmallDenseSet<unsigned>> dims;
  llvm::SmallVector<MapRewrite> mapRewrites;
  /// Operand dimensions read through a batch loop that stay size 1 (they
  /// hold the same values for every sample).
  llvm::SmallVector<Broadcast> broadcasts;
  /// Splat constants whose shape follows the batch.
  llvm::SmallVector<mlir::arith::ConstantOp> splats;
  llvm::SmallVector<std::pair<mlir::OpOperand *, unsigned>> gathered;
};

} // namespace soap

#endif // SOAP_PARTITION_BATCHDIMENSIONS_H

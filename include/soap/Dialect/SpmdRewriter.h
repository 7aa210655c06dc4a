//===- SpmdRewriter.h - the partitioner's rewrites, for ops ----*- C++ -*-===//
//
// What the SPMD partitioner (soap-partition) offers an op's
// PartitionableOpInterface::partition: the rewrites of the global program's
// ops into the local ops every device runs, with communication before them
// where an operand is not laid out as the op reads it. An op model picks the
// rewrite that fits its kind; a model that picks none leaves the op to run
// whole on every device.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_DIALECT_SPMDREWRITER_H
#define SOAP_DIALECT_SPMDREWRITER_H

#include "mlir/Support/LLVM.h"

namespace mlir {
class Operation;
} // namespace mlir

namespace soap {

/// Each rewrite either replaces `op` in the partitioned program (its results
/// become distributed values that later ops read) or fails, changing
/// nothing, when `op` is not of the form it takes.
class SpmdRewriter {
public:
  virtual ~SpmdRewriter();

  /// A linalg structured op on tensors, by its loops: one local op per task
  /// of its #soap.config (or, without one, of its most split operand's
  /// layout), operands brought to the boxes the tasks read, split
  /// reductions left as partial sums, gathers looking up the rows each
  /// device holds.
  virtual mlir::LogicalResult partitionLoops(mlir::Operation *op) = 0;
  /// A tensor.collapse_shape or expand_shape of a value split only along
  /// the outermost dimension of each group: each device reshapes its part.
  virtual mlir::LogicalResult partitionReshape(mlir::Operation *op) = 0;
  /// A tensor.pad, extract_slice or insert_slice of a value split only
  /// along dimensions the op leaves whole: each device pads or slices its
  /// part.
  virtual mlir::LogicalResult partitionPassThrough(mlir::Operation *op) = 0;
  /// A tensor.concat of values split alike along the other dimensions.
  virtual mlir::LogicalResult partitionConcat(mlir::Operation *op) = 0;
  /// A data-movement op of the tensor dialect (extract_slice, expand_shape,
  /// collapse_shape, concat, and insert_slice into zeros: a slice's
  /// gradient) with a #soap.config: each task's block of the result from the
  /// region of each operand its loops read, brought there as lib/layout
  /// plans it (what the simulator prices for the config). A pad or another
  /// insertion follows a config of one task: whole on its device.
  /// Fails, changing nothing, without a config or when the local op cannot
  /// be the same op on blocks (a device with several tasks, a reshape of a
  /// block that is not contiguous, a concatenation split along its
  /// dimension).
  virtual mlir::LogicalResult partitionByConfig(mlir::Operation *op) = 0;
};

/// Whether `op` makes a splat: a tensor.empty of static shape, a fill (on
/// tensors) of one, or a splat constant. The partitioner rebuilds a splat
/// at the shape each reader needs instead of moving it, and the simulator
/// prices no communication from it.
bool isRebuiltSplat(mlir::Operation *op);

} // namespace soap

#endif // SOAP_DIALECT_SPMDREWRITER_H

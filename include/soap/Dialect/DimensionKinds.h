//===- DimensionKinds.h - sample/attribute/parameter/reduction --*- C++ -*-===//
//
// Classifies the loops of partitionable ops: a loop is a reduction when it is
// contracted; a parameter when it indexes a parameter dimension of an input
// (a {soap.param} argument, a weight constant, or a value computed only from
// those, along the dimensions that come from the parameters: a bias
// broadcast over the batch is a parameter only along its channels); a sample
// when it runs over the batch; an attribute otherwise. Outputs the op
// accumulates into (a bias-initialised accumulator) do not make loops
// parameters. The batch starts at each input's batch dimension and is
// propagated through the indexing maps of the ops' parallel loops, forwards
// and backwards, until nothing changes.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_DIALECT_DIMENSIONKINDS_H
#define SOAP_DIALECT_DIMENSIONKINDS_H

#include "soap/Dialect/PartitionableInterface.h"
#include "soap/graph/DimKind.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallBitVector.h"

namespace soap {

/// Lower-case name of a kind: "sample", "attribute", "parameter", "reduction".
inline llvm::StringRef stringifyDimKind(DimKind kind) {
  return dimKindName(kind);
}

class DimensionKindAnalysis {
public:
  /// Analyses every function-like op nested in `root` (or `root` itself).
  explicit DimensionKindAnalysis(mlir::Operation *root);

  /// True when `value` is a parameter or computed only from parameters.
  bool isParameter(mlir::Value value) const;

  /// Dimensions of a parameter `value` along which parameter data varies
  /// (empty for values that are not parameters).
  llvm::SmallBitVector getParameterDims(mlir::Value value) const;

  /// Dimensions of `value` that run over (or contain) the batch.
  llvm::SmallBitVector getSampleDims(mlir::Value value) const;

  /// Loops of `op` that run over the batch of an input, whatever their
  /// iterator type: the sample loops, and reductions over the batch (batch
  /// norm statistics, a mean loss), which data parallelism splits too.
  llvm::SmallBitVector getBatchLoops(PartitionableOpInterface op) const;

  /// Kind of every loop of `op`.
  llvm::SmallVector<DimKind> getLoopKinds(PartitionableOpInterface op) const;

private:
  void markParameters(mlir::Operation *root);
  void seedSamples(mlir::Operation *root);
  bool propagateSamples(mlir::Operation *op);
  llvm::SmallBitVector sampleLoops(PartitionableOpInterface op) const;
  llvm::SmallBitVector parameterLoops(PartitionableOpInterface op) const;
  bool addSampleDims(mlir::Value value, const llvm::SmallBitVector &dims);

  llvm::DenseSet<mlir::Value> parameters;
  llvm::DenseMap<mlir::Value, llvm::SmallBitVector> parameterDims;
  llvm::DenseMap<mlir::Value, llvm::SmallBitVector> sampleDims;
};

} // namespace soap

#endif // SOAP_DIALECT_DIMENSIONKINDS_H

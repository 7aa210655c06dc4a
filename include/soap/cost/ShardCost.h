//===- ShardCost.h - FLOPs and bytes of one task of an op -------*- C++ -*-===//
//
// Plain C++ (no MLIR types): an op seen as a loop nest whose tensors are
// indexed by linear expressions of the loops. Used by the partitioning
// interface, and later by the OpGraph, the cost model and the simulator.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_COST_SHARDCOST_H
#define SOAP_COST_SHARDCOST_H

#include <cstdint>
#include <optional>
#include <vector>

namespace soap {

/// One term `coefficient * loop` of an index expression.
struct IndexTerm {
  unsigned loop = 0;
  int64_t coefficient = 1;
};

/// Index of one tensor dimension as `sum(terms) + constant`. When `isLinear`
/// is false the expression could not be written that way (floordiv, mod) and
/// the whole dimension is assumed to be touched.
struct IndexExpr {
  std::vector<IndexTerm> terms;
  int64_t constant = 0;
  bool isLinear = true;

  /// The loop the index is, when it is exactly one loop (coefficient 1, no
  /// constant).
  std::optional<unsigned> singleLoop() const {
    if (!isLinear || terms.size() != 1 || terms[0].coefficient != 1 ||
        constant != 0)
      return std::nullopt;
    return terms[0].loop;
  }
};

/// What a task does with the data of a tensor.
enum class AccessRole {
  Read,   ///< read from memory
  Write,  ///< written to memory
  Unread, ///< indexed by the loops, but no data moves (views, allocations,
          ///< outputs whose old value is not read)
  Shape,  ///< only the shape is used: the value need not be present (a
          ///< pooling window, an input the body ignores: a count)
};

/// How an op touches one tensor.
struct TensorAccess {
  std::vector<IndexExpr> indices; ///< one expression per tensor dimension
  std::vector<int64_t> shape;     ///< tensor shape; negative when unknown
  int64_t elementBytes = 4;
  AccessRole role = AccessRole::Read;
};

/// An op as a loop nest.
struct LoopNest {
  std::vector<int64_t> loopSizes; ///< negative when unknown
  std::vector<TensorAccess> accesses;
  double flopsPerIteration = 0;
  /// Per loop, whether it is a lookup loop (a gather's loop over the rows
  /// of its table; PartitionableOpInterface::getLookupLoops): it adds no
  /// points to a task. Empty when there are none.
  std::vector<bool> lookupLoops;

  /// Points of a task with the given loop extents: the product of the
  /// extents of the loops that are not lookup loops.
  double points(const std::vector<int64_t> &shardSizes) const;
};

/// Work of one task.
struct ShardCost {
  double flops = 0;
  double bytesRead = 0;
  double bytesWritten = 0;
  double bytes() const { return bytesRead + bytesWritten; }
};

/// Number of distinct values `expr` takes when loop `l` ranges over
/// [0, shardSizes[l]), capped at `dimSize` when that is known (>= 0).
int64_t accessExtent(const IndexExpr &expr,
                     const std::vector<int64_t> &shardSizes, int64_t dimSize);

/// Number of elements of `access` that a task of `nest` with the given loop
/// extents touches: at most one per point.
int64_t accessFootprint(const LoopNest &nest, const TensorAccess &access,
                        const std::vector<int64_t> &shardSizes);

/// FLOPs and bytes of a task that covers `shardSizes[l]` iterations of each
/// loop `l`. Requires `shardSizes.size() == nest.loopSizes.size()` and
/// positive extents.
ShardCost shardCost(const LoopNest &nest,
                    const std::vector<int64_t> &shardSizes);

} // namespace soap

#endif // SOAP_COST_SHARDCOST_H

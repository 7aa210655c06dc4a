//===- PartitionableInterface.h - ops SOAP can partition --------*- C++ -*-===//

#ifndef SOAP_DIALECT_PARTITIONABLEINTERFACE_H
#define SOAP_DIALECT_PARTITIONABLEINTERFACE_H

#include "soap/cost/ShardCost.h"

#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/OpDefinition.h"

#include <optional>
#include <string>

namespace soap {

/// A tensor an op reads or writes, and the map from the op's loops to its
/// indices.
struct OperandAccess {
  mlir::Value value;
  mlir::AffineMap map;
  AccessRole role = AccessRole::Read;
  /// The op writes its result into this tensor (a linalg output, the
  /// destination of an insert_slice): what it holds is overwritten or
  /// accumulated into, not an input of the computation proper.
  bool isDestination = false;
};

class SpmdRewriter; // soap/Dialect/SpmdRewriter.h

namespace detail {
/// Shard cost from the op's loop nest (the interface's default).
ShardCost defaultShardCost(mlir::Operation *op,
                           llvm::ArrayRef<int64_t> shardSizes);
} // namespace detail

} // namespace soap

#include "soap/Dialect/SoapInterfaces.h.inc"

namespace soap {

/// Writes `expr` as a sum of `coefficient * loop` terms plus a constant, or
/// marks it non-linear (floordiv, mod, products of loops, symbols).
IndexExpr toIndexExpr(mlir::AffineExpr expr);

/// The loop that moves `expr` fastest through memory's outer dimension: the
/// term with the largest coefficient (the outermost loop of a reshape, the
/// output position of a convolution window). Nothing for constants.
std::optional<unsigned> outermostLoop(const IndexExpr &expr);

/// Bytes of one element of `type` (or of its elements, for shaped types);
/// 8 for index and other opaque element types.
int64_t getElementBytes(mlir::Type type);

/// The op as a plain loop nest (sizes, index expressions, element sizes).
LoopNest getLoopNest(PartitionableOpInterface op);

/// Attaches the partitioning interface to upstream ops (linalg structured
/// ops, tensor reshapes, slices, pad, concat and empty).
void registerPartitionableExternalModels(mlir::DialectRegistry &registry);

} // namespace soap

#endif // SOAP_DIALECT_PARTITIONABLEINTERFACE_H

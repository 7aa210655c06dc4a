//===- ShardInterop.h - SOAP configs and upstream shard annotations -*- C++ -*-===//
//
// Upstream MLIR's `shard` dialect describes a tensor's distribution over a
// device grid (`shard.grid`, `shard.sharding`, `shard.shard`), and its
// `sharding-propagation` and `shard-partition` passes turn annotated
// programs into SPMD programs with `shard` collectives. These functions
// convert SOAP's per-op configs to such annotations and back, where a
// strategy fits one grid, and lower the collectives of a shard-partitioned
// program to SOAP's, so that it runs on SOAP's runtime (docs/shard.md).
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_PARTITION_SHARDINTEROP_H
#define SOAP_PARTITION_SHARDINTEROP_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace soap {

/// Replaces the #soap.config of `function`'s ops by shard annotations on a
/// 1-D grid `@soap_grid` of `numDevices` devices: the operands of an op
/// split along one loop over all devices in order are annotated (for the
/// op) with that split; arguments and results are annotated replicated,
/// so the signature keeps its global shapes. Configs that do not fit the
/// grid (splits of several loops, device subsets or another order, halos)
/// are dropped with one warning that counts and names them.
mlir::LogicalResult exportShardAnnotations(mlir::func::FuncOp function,
                                           int64_t numDevices);

/// Turns the shard annotations of `function`'s linalg operands into
/// #soap.config (the grid's devices in row-major order) and removes every
/// annotation; sets the module's soap.num_devices. An op whose annotations
/// contradict each other, or use halos or explicit offsets, gets no config
/// and a warning.
mlir::LogicalResult importShardAnnotations(mlir::func::FuncOp function);

/// Lowers the collectives of a shard-partitioned module (one static grid)
/// to SOAP's: process indices and grid shapes become rank tables and
/// constants; all_reduce, all_gather, all_to_all and all_slice become
/// soap.all_reduce, soap.all_gather, soap.all_to_all and local slices over
/// the devices of each group. Other
/// shard ops get an error naming them.
mlir::LogicalResult lowerShardCollectives(mlir::ModuleOp module);

} // namespace soap

#endif // SOAP_PARTITION_SHARDINTEROP_H

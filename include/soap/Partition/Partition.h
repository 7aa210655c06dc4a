//===- Partition.h - a training step as one SPMD program --------*- C++ -*-===//
//
// --soap-partition turns the global @train_step into one SPMD program that
// every rank runs on its own shard. With #soap.config on its ops, each op
// runs as the tasks its config gives each device and communication is
// derived from the layouts (partitionByConfigs). Without configs, the
// batch is split over all devices (partitionBatch): each rank takes its
// rows of the global inputs (offset soap.rank * batch/N), every value
// derived from the batch shrinks to the local batch, and every op that
// reduces over the batch is followed by a soap.all_reduce. Either way the
// parameters, optimizer state and loss come out whole on every rank and
// equal to the single-device values.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_PARTITION_PARTITION_H
#define SOAP_PARTITION_PARTITION_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace soap {

/// Partitions the batch of `function` (a training step whose inputs and
/// labels carry soap.role) over `devices` ranks. On failure the function
/// may be partly rewritten; the caller discards it.
mlir::LogicalResult partitionBatch(mlir::func::FuncOp function,
                                   int64_t devices);

/// Partitions `function` over `devices` ranks as the #soap.config of its
/// ops say (docs/partition.md): every op goes to its
/// PartitionableOpInterface::partition, which picks one of the rewrites of
/// soap/Dialect/SpmdRewriter.h (linalg ops run as the local ops of their
/// tasks, those without a config following the layout of their most split
/// operand); ops without a partitioned form run whole on every device, and
/// communication
/// is derived from the layouts producers give and consumers read. The
/// arguments and results keep their global shapes and are whole on every
/// rank. Emits warnings for configs it cannot follow (those ops run whole)
/// and for ops that gather split operands to run whole.
mlir::LogicalResult partitionByConfigs(mlir::func::FuncOp function,
                                       int64_t devices);

} // namespace soap

#endif // SOAP_PARTITION_PARTITION_H

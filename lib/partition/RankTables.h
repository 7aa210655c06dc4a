//===- RankTables.h - values that depend on the rank ------------*- C++ -*-===//
//
// Private to lib/partition: an SPMD program computes a rank's offsets and
// flags by looking them up in a constant table indexed by soap.rank.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_LIB_PARTITION_RANKTABLES_H
#define SOAP_LIB_PARTITION_RANKTABLES_H

#include "mlir/IR/Builders.h"

namespace soap::partition {

/// `values[rank]` as an index: a constant when all are equal, else an
/// element of a constant table.
mlir::Value valueOfRank(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::Value rank, llvm::ArrayRef<int64_t> values);

/// `flags[rank]` as an i1.
mlir::Value flagOfRank(mlir::OpBuilder &b, mlir::Location loc,
                       mlir::Value rank, llvm::ArrayRef<bool> flags);

} // namespace soap::partition

#endif // SOAP_LIB_PARTITION_RANKTABLES_H

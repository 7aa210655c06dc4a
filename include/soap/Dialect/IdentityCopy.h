//===- IdentityCopy.h - linalg.generic copies that canonicalize away -*- C++
//-*-===//
//
// torch-mlir exports `contiguous()` and no-op views as a linalg.generic that
// copies its input unchanged. linalg's canonicalization
// (EraseIdentityLinalgOp), which --soap-training-step runs on the step it
// builds, erases such copies: their readers read the source. The simulator's op
// graph and the autodiff treat them the same way, so that what is priced and
// differentiated is what the partitioned step runs.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_DIALECT_IDENTITYCOPY_H
#define SOAP_DIALECT_IDENTITYCOPY_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/SmallVector.h"

namespace soap {

/// The operand each result of `op` is, when `op` is a linalg.generic on
/// tensors that copies operands unchanged (identity indexing maps, a body
/// that only yields its block arguments, each result of its operand's
/// type); else nothing.
llvm::SmallVector<mlir::Value> identityCopySources(mlir::Operation *op);

} // namespace soap

#endif // SOAP_DIALECT_IDENTITYCOPY_H

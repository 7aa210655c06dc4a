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

namespace mlir::linalg {
class GenericOp;
} // namespace mlir::linalg

namespace soap {

/// The operand each result of `op` is, when `op` is a linalg.generic on
/// tensors that copies operands unchanged (identity indexing maps, a body
/// that yields its block arguments once arith's folders have run: x * 1.0,
/// x / 1.0, x + -0.0, x - 0.0; each result of its operand's type); else
/// nothing.
llvm::SmallVector<mlir::Value> identityCopySources(mlir::Operation *op);

/// A linalg.generic (on tensors or buffers) with one input and one output,
/// no reduction loop and an identity-mapped output, whose body yields the
/// input's element unchanged: a copy, through whatever map reads the input.
bool copiesItsInput(mlir::linalg::GenericOp op);

/// Whether `op` copies its one input with its dimensions transposed or
/// broadcast, on tensors: a linalg.transpose or linalg.broadcast, or a
/// copying linalg.generic (copiesItsInput) that reads the input through a
/// projected permutation (a 0 where the input's dimension is 1). The CPU
/// lowering folds such copies into a contraction that reads them (it reads
/// the source through the composed map: foldBroadcastsIntoContractions,
/// foldTransposesIntoContractions), and the simulator's memory counts no
/// buffer for a copy that only contractions read, directly or through
/// other such copies.
bool isRelayoutCopy(mlir::Operation *op);

} // namespace soap

#endif // SOAP_DIALECT_IDENTITYCOPY_H

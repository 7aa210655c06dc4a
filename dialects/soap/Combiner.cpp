//===- Combiner.cpp - how a reduction combines its partial results --------===//

#include "soap/Dialect/Combiner.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;

namespace soap {

std::optional<ReductionKind> combinerOf(linalg::LinalgOp op) {
  if (op.getNumDpsInits() != 1 || op->getNumRegions() != 1)
    return std::nullopt;
  auto yield = cast<linalg::YieldOp>(op.getBlock()->getTerminator());
  if (yield.getNumOperands() != 1)
    return std::nullopt;
  Operation *combine = yield.getOperand(0).getDefiningOp();
  if (!combine || combine->getNumOperands() != 2)
    return std::nullopt;
  Value out = op.getBlock()->getArguments().back();
  if (!llvm::is_contained(combine->getOperands(), out))
    return std::nullopt;
  if (isa<arith::AddFOp, arith::AddIOp>(combine))
    return ReductionKind::sum;
  if (isa<arith::MaximumFOp, arith::MaxNumFOp, arith::MaxSIOp>(combine))
    return ReductionKind::max;
  if (isa<arith::MinimumFOp, arith::MinNumFOp, arith::MinSIOp>(combine))
    return ReductionKind::min;
  return std::nullopt;
}

} // namespace soap

//===- Combiner.cpp - how a reduction combines its partial results --------===//

#include "soap/Dialect/Combiner.h"
#include "soap/Dialect/Gather.h"

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

bool hasUncombinablePartials(linalg::LinalgOp op) {
  return op.getNumReductionLoops() > 0 && !combinerOf(op) && !matchGather(op);
}

bool splitsUncombinablePartials(linalg::LinalgOp op,
                                llvm::ArrayRef<int64_t> degrees) {
  if (!hasUncombinablePartials(op))
    return false;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  for (auto [loop, degree] : llvm::enumerate(degrees))
    if (degree > 1 && loop < iterators.size() &&
        iterators[loop] == utils::IteratorType::reduction)
      return true;
  return false;
}

} // namespace soap

//===- ScatterLoops.cpp - scatter-add loop nests split over the batch -----===//

#include "ScatterLoops.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;

namespace soap::partition {

void ScatterAddNest::setTripCount(unsigned loop, int64_t count) {
  scf::ForOp forOp = loops[loop];
  OpBuilder b(loops.front());
  forOp.getUpperBoundMutable().assign(
      arith::ConstantIndexOp::create(b, forOp.getLoc(), count));
  tripCounts[loop] = count;
}

/// Whether `value` is defined inside `op`'s regions.
static bool definedInside(Value value, Operation *op) {
  Operation *scope = value.getParentRegion()->getParentOp();
  return scope == op || op->isProperAncestor(scope);
}

/// Whether the updates of the tensor carried by the innermost loop `loop`
/// all add into the element they read.
static bool onlyAdds(scf::ForOp loop) {
  Block *body = loop.getBody();
  Value sum = loop.getRegionIterArgs()[0];
  while (true) {
    tensor::InsertOp next;
    for (OpOperand &use : sum.getUses()) {
      Operation *user = use.getOwner();
      if (user->getBlock() != body)
        return false;
      if (isa<tensor::ExtractOp>(user) || isa<scf::YieldOp>(user))
        continue;
      auto insert = dyn_cast<tensor::InsertOp>(user);
      if (!insert || use.get() != insert.getDest() || next)
        return false;
      next = insert;
    }
    if (!next)
      return body->getTerminator()->getOperand(0) == sum;
    // next = insert(old + x, sum[i]), old = sum[i] read only for this.
    auto add = next.getScalar().getDefiningOp<arith::AddFOp>();
    if (!add)
      return false;
    tensor::ExtractOp old;
    for (Value term : add->getOperands())
      if (auto extract = term.getDefiningOp<tensor::ExtractOp>();
          extract && extract.getTensor() == sum &&
          extract.getIndices() == next.getIndices())
        old = extract;
    if (!old || !old->hasOneUse())
      return false;
    for (Operation *user : sum.getUsers())
      if (auto extract = dyn_cast<tensor::ExtractOp>(user);
          extract && extract != old)
        return false;
    sum = next.getResult();
  }
}

std::optional<ScatterAddNest> matchScatterAdd(scf::ForOp outer) {
  ScatterAddNest nest;
  scf::ForOp loop = outer;
  while (true) {
    if (loop.getNumRegionIterArgs() != 1 ||
        !isa<RankedTensorType>(loop.getResult(0).getType()))
      return std::nullopt;
    std::optional<int64_t> lower = getConstantIntValue(loop.getLowerBound());
    std::optional<int64_t> step = getConstantIntValue(loop.getStep());
    std::optional<int64_t> upper = getConstantIntValue(loop.getUpperBound());
    if (lower != 0 || step != 1 || !upper)
      return std::nullopt;
    nest.loops.push_back(loop);
    nest.tripCounts.push_back(*upper);
    Block *body = loop.getBody();
    auto inner = dyn_cast<scf::ForOp>(body->front());
    if (!inner || body->getOperations().size() != 2)
      break;
    if (inner.getInitArgs().size() != 1 ||
        inner.getInitArgs()[0] != loop.getRegionIterArgs()[0] ||
        body->getTerminator()->getOperand(0) != inner->getResult(0))
      return std::nullopt;
    loop = inner;
  }
  if (!onlyAdds(nest.loops.back()))
    return std::nullopt;

  for (scf::ForOp forOp : nest.loops) {
    SmallVector<LoopRead> reads;
    bool summable = true;
    for (OpOperand &use : forOp.getInductionVar().getUses()) {
      auto extract = dyn_cast<tensor::ExtractOp>(use.getOwner());
      if (!extract || use.getOperandNumber() == 0 ||
          definedInside(extract.getTensor(), outer)) {
        summable = false;
        break;
      }
      reads.push_back({&extract->getOpOperand(0), use.getOperandNumber() - 1});
    }
    nest.summable.push_back(summable ? std::optional(std::move(reads))
                                     : std::nullopt);
  }
  return nest;
}

} // namespace soap::partition

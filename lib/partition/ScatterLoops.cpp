//===- ScatterLoops.cpp - scatter-add loop nests split over the batch -----===//

#include "soap/Partition/ScatterLoops.h"

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

std::optional<unsigned> ScatterAddNest::loopOf(Value value) {
  for (auto [index, loop] : llvm::enumerate(loops))
    if (loop.getInductionVar() == value)
      return index;
  return std::nullopt;
}

void ScatterAddNest::setCarriedType(RankedTensorType type) {
  for (scf::ForOp loop : loops) {
    loop.getRegionIterArgs()[0].setType(type);
    loop.getResult(0).setType(type);
  }
  for (auto insert : loops.back().getBody()->getOps<tensor::InsertOp>())
    insert.getResult().setType(type);
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

  // The tensors of the carried sum in the innermost body: its iteration
  // argument and each update.
  Block *innermost = nest.loops.back().getBody();
  SmallVector<tensor::InsertOp> updates;
  for (auto insert : innermost->getOps<tensor::InsertOp>())
    updates.push_back(insert);
  auto isSum = [&](Value tensor) {
    return tensor == nest.loops.back().getRegionIterArgs()[0] ||
           llvm::is_contained(updates, tensor.getDefiningOp());
  };
  for (scf::ForOp forOp : nest.loops) {
    SmallVector<LoopRead> reads;
    bool onlyReads = true, column = true;
    std::optional<unsigned> resultDim;
    Value iv = forOp.getInductionVar();
    for (OpOperand &use : iv.getUses()) {
      auto extract = dyn_cast<tensor::ExtractOp>(use.getOwner());
      if (extract && use.getOperandNumber() != 0 &&
          !definedInside(extract.getTensor(), outer)) {
        reads.push_back(
            {&extract->getOpOperand(0), use.getOperandNumber() - 1});
        continue;
      }
      onlyReads = false;
      // An index of the element updated: of an update, or of the read of
      // the element's old value.
      std::optional<unsigned> dim;
      if (auto insert = dyn_cast<tensor::InsertOp>(use.getOwner());
          insert && use.getOperandNumber() >= 2 && isSum(insert.getDest()))
        dim = use.getOperandNumber() - 2;
      else if (extract && use.getOperandNumber() != 0 &&
               isSum(extract.getTensor()))
        dim = use.getOperandNumber() - 1;
      if (!dim || (resultDim && *resultDim != *dim))
        column = false;
      else
        resultDim = dim;
    }
    column = column && resultDim && llvm::all_of(updates, [&](auto insert) {
               return insert.getIndices()[*resultDim] == iv;
             });
    nest.columns.push_back(!onlyReads && column
                               ? std::optional(ColumnLoop{reads, *resultDim})
                               : std::nullopt);
    nest.summable.push_back(onlyReads ? std::optional(std::move(reads))
                                      : std::nullopt);
  }
  return nest;
}

std::optional<LookupUpdate> matchLookupUpdate(ScatterAddNest &nest) {
  Block *body = nest.loops.back().getBody();
  auto inserts = body->getOps<tensor::InsertOp>();
  if (!llvm::hasSingleElement(inserts))
    return std::nullopt;
  LookupUpdate update{*inserts.begin(), {}, 0, {}};
  // The old value read, as onlyAdds found it: insert(old + x, sum[i]).
  auto add = update.insert.getScalar().getDefiningOp<arith::AddFOp>();
  if (!add)
    return std::nullopt;
  for (Value term : add->getOperands())
    if (auto extract = term.getDefiningOp<tensor::ExtractOp>();
        extract && extract.getTensor() == update.insert.getDest())
      update.old = extract;
  if (!update.old)
    return std::nullopt;
  bool found = false;
  for (auto [dim, index] : llvm::enumerate(update.insert.getIndices())) {
    if (nest.loopOf(index))
      continue;
    auto cast = index.getDefiningOp<arith::IndexCastOp>();
    auto ids = cast ? cast.getIn().getDefiningOp<tensor::ExtractOp>()
                    : tensor::ExtractOp();
    if (found || !ids || definedInside(ids.getTensor(), nest.loops.front()))
      return std::nullopt;
    found = true;
    update.dim = dim;
    update.ids = ids;
  }
  if (!found)
    return std::nullopt;
  return update;
}

} // namespace soap::partition

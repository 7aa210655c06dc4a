//===- Gather.cpp - lookups of a table at indices read from data ----------===//

#include "soap/Dialect/Gather.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;

namespace soap {

AffineMap GatherLookup::tableMap() const {
  SmallVector<AffineExpr> results;
  for (unsigned loop : loopOfDim)
    results.push_back(getAffineDimExpr(loop, extract.getContext()));
  return AffineMap::get(numLoops(), 0, results, extract.getContext());
}

/// True when `value`, used in the body of `op`, is computed from the op's
/// input elements and constants only (no linalg.index, no output element,
/// no other value from above).
static bool computedFromInputs(Value value, linalg::LinalgOp op,
                               llvm::DenseSet<Value> &seen) {
  if (!seen.insert(value).second)
    return true;
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    if (arg.getOwner() != op.getBlock())
      return false;
    OpOperand *operand = op.getMatchingOpOperand(arg);
    return operand && op.isDpsInput(operand);
  }
  Operation *def = value.getDefiningOp();
  if (def->hasTrait<OpTrait::ConstantLike>())
    return true;
  if (def->getBlock() != op.getBlock() || isa<linalg::IndexOp>(def) ||
      def->getNumRegions() != 0 || !isPure(def))
    return false;
  return llvm::all_of(def->getOperands(), [&](Value operand) {
    return computedFromInputs(operand, op, seen);
  });
}

std::optional<GatherLookup> matchGather(Operation *operation) {
  auto op = dyn_cast_or_null<linalg::GenericOp>(operation);
  if (!op || !op.hasPureTensorSemantics() || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() != 0 ||
      op.payloadUsesValueFromOperand(op.getDpsInitOperand(0)))
    return std::nullopt;
  auto yield = cast<linalg::YieldOp>(op.getBlock()->getTerminator());
  auto extract = yield.getValues()[0].getDefiningOp<tensor::ExtractOp>();
  if (!extract || extract->getBlock() != op.getBlock())
    return std::nullopt;
  Value table = extract.getTensor();
  auto tableType = dyn_cast<RankedTensorType>(table.getType());
  if (!tableType || !tableType.hasStaticShape() ||
      op->isAncestor(table.getParentBlock()->getParentOp()) ||
      llvm::any_of(table.getUses(), [&](OpOperand &use) {
        return use.getOwner() != extract.getOperation() &&
               op->isAncestor(use.getOwner());
      }))
    return std::nullopt;
  if (llvm::any_of(op.getStaticLoopRanges(), ShapedType::isDynamic))
    return std::nullopt;

  GatherLookup gather;
  gather.extract = extract;
  gather.numOpLoops = op.getNumLoops();
  for (auto [dim, index] : llvm::enumerate(extract.getIndices())) {
    if (auto loop = index.getDefiningOp<linalg::IndexOp>();
        loop && loop->getParentOp() == op.getOperation()) {
      gather.loopOfDim.push_back(loop.getDim());
      continue;
    }
    llvm::DenseSet<Value> seen;
    if (!computedFromInputs(index, op, seen))
      return std::nullopt;
    gather.loopOfDim.push_back(gather.numOpLoops + gather.lookupSizes.size());
    gather.lookupSizes.push_back(tableType.getDimSize(dim));
  }
  if (gather.lookupSizes.empty())
    return std::nullopt;
  return gather;
}

void lookUpLocally(OpBuilder &b, const GatherLookup &gather,
                   const LocalTable &table, tensor::ExtractOp extract) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(extract);
  Location loc = extract.getLoc();
  auto type = cast<RankedTensorType>(table.tensor.getType());
  // Per dimension: the part holds only some of the rows a lookup may ask
  // for (a split lookup loop).
  SmallVector<bool> partialRows;
  for (int64_t dim = 0; dim < type.getRank(); ++dim)
    partialRows.push_back(gather.isLookupDim(dim) &&
                          type.getDimSize(dim) !=
                              gather.tableType().getDimSize(dim));
  SmallVector<Value> indices;
  Value present;
  for (auto [dim, index] : llvm::enumerate(extract.getIndices())) {
    Value local = index;
    if (Value offset =
            dim < table.offsets.size() ? table.offsets[dim] : Value())
      local = arith::SubIOp::create(b, loc, index, offset);
    if (partialRows[dim]) {
      // Unsigned: a row before the part wraps to a huge index.
      Value size = arith::ConstantIndexOp::create(b, loc, type.getDimSize(dim));
      Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                           local, size);
      present = present ? arith::AndIOp::create(b, loc, present, inside)
                        : inside;
    }
    indices.push_back(local);
  }
  if (present) {
    // Rows elsewhere read row 0 of the part, then yield zero.
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    for (auto [dim, index] : llvm::enumerate(indices))
      if (partialRows[dim])
        index = arith::SelectOp::create(b, loc, present, index, zero);
  }
  auto local = tensor::ExtractOp::create(b, loc, table.tensor, indices);
  Value result = local;
  if (present) {
    Type element = type.getElementType();
    Value zero = arith::ConstantOp::create(b, loc, element,
                                           b.getZeroAttr(element));
    result = arith::SelectOp::create(b, loc, present, local, zero);
  }
  extract.getResult().replaceAllUsesWith(result);
  extract.erase();
}

} // namespace soap

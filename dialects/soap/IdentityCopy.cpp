//===- IdentityCopy.cpp - linalg.generic copies that canonicalize away ----===//

#include "soap/Dialect/IdentityCopy.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"

using namespace mlir;

SmallVector<Value> soap::identityCopySources(Operation *op) {
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic || !generic.hasPureTensorSemantics() ||
      llvm::any_of(generic.getIndexingMapsArray(),
                   [](AffineMap map) { return !map.isIdentity(); }))
    return {};
  Block &body = generic.getRegion().front();
  if (!llvm::hasSingleElement(body))
    return {};
  SmallVector<Value> sources;
  for (auto [i, yielded] :
       llvm::enumerate(body.getTerminator()->getOperands())) {
    auto arg = dyn_cast<BlockArgument>(yielded);
    if (!arg || arg.getOwner() != &body)
      return {};
    Value source = op->getOperand(arg.getArgNumber());
    if (source.getType() != op->getResult(i).getType())
      return {};
    sources.push_back(source);
  }
  return sources;
}

bool soap::copiesItsInput(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 1 || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() != 0 ||
      !op.getIndexingMapsArray().back().isIdentity())
    return false;
  Block &body = op.getRegion().front();
  return body.getOperations().size() == 1 &&
         body.getTerminator()->getOperand(0) == body.getArgument(0);
}

bool soap::isRelayoutCopy(Operation *op) {
  if (isa<linalg::TransposeOp, linalg::BroadcastOp>(op))
    return cast<linalg::LinalgOp>(op).hasPureTensorSemantics();
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic || !generic.hasPureTensorSemantics() || !copiesItsInput(generic))
    return false;
  AffineMap in = generic.getIndexingMapsArray().front();
  if (!in.isProjectedPermutation(/*allowZeroInResults=*/true))
    return false;
  auto source = dyn_cast<ShapedType>(generic.getDpsInputs().front().getType());
  if (!source)
    return false;
  for (auto [i, expr] : llvm::enumerate(in.getResults()))
    if (!isa<AffineDimExpr>(expr) && source.getDimSize(i) != 1)
      return false;
  return true;
}

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

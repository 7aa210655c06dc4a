//===- IdentityCopy.cpp - linalg.generic copies that canonicalize away ----===//

#include "soap/Dialect/IdentityCopy.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <cmath>

using namespace mlir;

/// Whether `value` is the float constant `x` (of that sign, for a zero).
static bool isFloatConstant(Value value, double x) {
  FloatAttr attr;
  if (!matchPattern(value, m_Constant(&attr)))
    return false;
  const APFloat &f = attr.getValue();
  return f.convertToDouble() == x && f.isNegative() == std::signbit(x);
}

/// What `value` is once arith's folders have run: through x * 1, 1 * x,
/// x / 1, x + -0.0, -0.0 + x and x - 0.0, the value x.
static Value foldedOperand(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    Value a, b;
    if (isa<arith::MulFOp, arith::AddFOp, arith::DivFOp, arith::SubFOp>(def)) {
      a = def->getOperand(0);
      b = def->getOperand(1);
    } else {
      break;
    }
    if (isa<arith::MulFOp>(def) && isFloatConstant(b, 1.0))
      value = a;
    else if (isa<arith::MulFOp>(def) && isFloatConstant(a, 1.0))
      value = b;
    else if (isa<arith::DivFOp>(def) && isFloatConstant(b, 1.0))
      value = a;
    else if (isa<arith::AddFOp>(def) && isFloatConstant(b, -0.0))
      value = a;
    else if (isa<arith::AddFOp>(def) && isFloatConstant(a, -0.0))
      value = b;
    else if (isa<arith::SubFOp>(def) && isFloatConstant(b, 0.0))
      value = a;
    else
      break;
  }
  return value;
}

SmallVector<Value> soap::identityCopySources(Operation *op) {
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic || !generic.hasPureTensorSemantics() ||
      llvm::any_of(generic.getIndexingMapsArray(),
                   [](AffineMap map) { return !map.isIdentity(); }))
    return {};
  Block &body = generic.getRegion().front();
  // The body's other ops compute nothing the yield needs once folded
  // (x * 1.0: torch's alpha=1), or are constants; side effects keep it.
  if (llvm::any_of(body.without_terminator(),
                   [](Operation &inner) { return !isPure(&inner); }))
    return {};
  SmallVector<Value> sources;
  for (auto [i, yielded] :
       llvm::enumerate(body.getTerminator()->getOperands())) {
    auto arg = dyn_cast<BlockArgument>(foldedOperand(yielded));
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

//===- PartitionableInterface.cpp - ops SOAP can partition ----------------===//

#include "soap/Dialect/PartitionableInterface.h"
#include "soap/Dialect/SpmdRewriter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineExprVisitor.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace soap;

#include "soap/Dialect/SoapInterfaces.cpp.inc"

SpmdRewriter::~SpmdRewriter() = default;

bool soap::isRebuiltSplat(Operation *op) {
  if (!op)
    return false;
  if (auto empty = dyn_cast<tensor::EmptyOp>(op))
    return empty.getType().hasStaticShape();
  if (auto fill = dyn_cast<linalg::FillOp>(op))
    return fill.hasPureTensorSemantics() &&
           isRebuiltSplat(fill.getDpsInits()[0].getDefiningOp());
  if (auto constant = dyn_cast<arith::ConstantOp>(op))
    return isa<RankedTensorType>(constant.getType()) &&
           isa<SplatElementsAttr>(constant.getValue());
  return false;
}

IndexExpr soap::toIndexExpr(AffineExpr expr) {
  IndexExpr result;
  std::function<bool(AffineExpr, int64_t)> add = [&](AffineExpr e,
                                                      int64_t scale) -> bool {
    if (auto dim = dyn_cast<AffineDimExpr>(e)) {
      for (IndexTerm &term : result.terms)
        if (term.loop == dim.getPosition()) {
          term.coefficient += scale;
          return true;
        }
      result.terms.push_back({dim.getPosition(), scale});
      return true;
    }
    if (auto cst = dyn_cast<AffineConstantExpr>(e)) {
      result.constant += scale * cst.getValue();
      return true;
    }
    auto bin = dyn_cast<AffineBinaryOpExpr>(e);
    if (!bin)
      return false;
    if (bin.getKind() == AffineExprKind::Add)
      return add(bin.getLHS(), scale) && add(bin.getRHS(), scale);
    if (bin.getKind() == AffineExprKind::Mul) {
      if (auto cst = dyn_cast<AffineConstantExpr>(bin.getRHS()))
        return add(bin.getLHS(), scale * cst.getValue());
      if (auto cst = dyn_cast<AffineConstantExpr>(bin.getLHS()))
        return add(bin.getRHS(), scale * cst.getValue());
    }
    return false;
  };
  if (!add(expr, 1)) {
    result.terms.clear();
    result.constant = 0;
    result.isLinear = false;
  }
  return result;
}

int64_t soap::getElementBytes(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  Type element = shaped ? shaped.getElementType() : type;
  if (element.isIntOrFloat())
    return std::max<int64_t>(1, (element.getIntOrFloatBitWidth() + 7) / 8);
  if (auto complex = dyn_cast<ComplexType>(element))
    return 2 * getElementBytes(complex.getElementType());
  return 8; // index and other opaque element types
}

LoopNest soap::getLoopNest(PartitionableOpInterface op) {
  LoopNest nest;
  for (int64_t size : op.getLoopSizes())
    nest.loopSizes.push_back(ShapedType::isDynamic(size) ? -1 : size);
  nest.flopsPerIteration = op.getFlopsPerIteration();
  for (bool lookup : op.getLookupLoops())
    nest.lookupLoops.push_back(lookup);
  for (const OperandAccess &access : op.getOperandAccesses()) {
    TensorAccess tensor;
    tensor.role = access.role;
    tensor.elementBytes = getElementBytes(access.value.getType());
    if (auto shaped = dyn_cast<ShapedType>(access.value.getType()))
      for (int64_t size : shaped.getShape())
        tensor.shape.push_back(ShapedType::isDynamic(size) ? -1 : size);
    for (AffineExpr expr : access.map.getResults())
      tensor.indices.push_back(toIndexExpr(expr));
    nest.accesses.push_back(std::move(tensor));
  }
  return nest;
}

ShardCost soap::detail::defaultShardCost(Operation *op,
                                         ArrayRef<int64_t> shardSizes) {
  LoopNest nest = getLoopNest(cast<PartitionableOpInterface>(op));
  return shardCost(nest, {shardSizes.begin(), shardSizes.end()});
}

std::optional<unsigned> soap::outermostLoop(const IndexExpr &expr) {
  std::optional<unsigned> best;
  int64_t bestCoefficient = 0;
  for (const IndexTerm &term : expr.terms) {
    int64_t magnitude = std::llabs(term.coefficient);
    if (magnitude > bestCoefficient) {
      best = term.loop;
      bestCoefficient = magnitude;
    }
  }
  return best;
}

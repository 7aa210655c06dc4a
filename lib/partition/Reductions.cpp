//===- Reductions.cpp - partial results of reductions ---------------------===//

#include "Reductions.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;

namespace soap::partition {

bool isIdentityFill(Value init, ReductionKind kind) {
  auto fill = init.getDefiningOp<linalg::FillOp>();
  if (!fill)
    return false;
  Attribute value;
  if (!matchPattern(fill.getInputs()[0], m_Constant(&value)))
    return false;
  return value == identityOf(kind, getElementTypeOrSelf(init.getType()));
}

TypedAttr identityOf(ReductionKind kind, Type element) {
  if (auto floatType = dyn_cast<FloatType>(element)) {
    const llvm::fltSemantics &semantics = floatType.getFloatSemantics();
    switch (kind) {
    case ReductionKind::max:
      return FloatAttr::get(element, APFloat::getInf(semantics, true));
    case ReductionKind::min:
      return FloatAttr::get(element, APFloat::getInf(semantics, false));
    default:
      return FloatAttr::get(element, APFloat::getZero(semantics));
    }
  }
  unsigned width = element.isIndex() ? 64 : element.getIntOrFloatBitWidth();
  switch (kind) {
  case ReductionKind::max:
    return IntegerAttr::get(element, APInt::getSignedMinValue(width));
  case ReductionKind::min:
    return IntegerAttr::get(element, APInt::getSignedMaxValue(width));
  default:
    return IntegerAttr::get(element, APInt(width, 0));
  }
}

Value identityFilled(OpBuilder &b, Location loc, RankedTensorType type,
                     ReductionKind kind) {
  Value empty = tensor::EmptyOp::create(b, loc, type.getShape(),
                                        type.getElementType());
  Value identity =
      arith::ConstantOp::create(b, loc, identityOf(kind, type.getElementType()));
  return linalg::FillOp::create(b, loc, ValueRange{identity},
                                ValueRange{empty})
      .getResult(0);
}

} // namespace soap::partition

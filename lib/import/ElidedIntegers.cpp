//===- ElidedIntegers.cpp - integer constants without their values --------===//
//
// Exporters elide large constants (`dense_resource<__elided__>`). A float
// weight can start from a random initialisation; an integer constant (the
// position ids a transformer adds to its token embeddings, token type ids)
// cannot: its values are data. Without them the model would fail much later
// ("resource does not exist" when soap-translate builds the executable), so
// the lift reports them here, or fills them as the user asked.
//
//===----------------------------------------------------------------------===//

#include "soap/Import/LiftParams.h"

#include "ImportSupport.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;

namespace soap {

FailureOr<unsigned> resolveElidedIntegers(func::FuncOp function,
                                          ElidedIntegers mode) {
  SmallVector<arith::ConstantOp> elided;
  function.walk([&](arith::ConstantOp constant) {
    auto type = dyn_cast<RankedTensorType>(constant.getType());
    if (type && type.getElementType().isIntOrIndex() &&
        isElided(constant.getValue()))
      elided.push_back(constant);
  });
  bool hasErrors = false;
  for (arith::ConstantOp constant : elided) {
    auto type = cast<RankedTensorType>(constant.getType());
    if (mode == ElidedIntegers::Error) {
      constant.emitError()
          << "soap-lift-params: the exporter elided the values of this "
             "integer constant ("
          << type
          << " = dense_resource<__elided__>); integers are data, not weights "
             "to initialise. Re-export the model with its constants, or pass "
             "elided-integers=iota to fill it with 0, 1, 2, ... along its last "
             "dimension (position ids) or elided-integers=zeros";
      hasErrors = true;
      continue;
    }
    if (!type.hasStaticShape()) {
      constant.emitError() << "soap-lift-params: cannot fill elided " << type
                           << ": its shape is not static";
      hasErrors = true;
      continue;
    }
    unsigned width = type.getElementType().isIndex()
                         ? IndexType::kInternalStorageBitWidth
                         : type.getElementType().getIntOrFloatBitWidth();
    int64_t last = type.getRank() == 0 ? 1 : type.getShape().back();
    if (mode == ElidedIntegers::Iota && !llvm::isUIntN(width, last - 1)) {
      constant.emitError() << "soap-lift-params: elided-integers=iota: "
                           << last - 1 << " does not fit in " << type;
      hasErrors = true;
      continue;
    }
    SmallVector<APInt> values;
    values.reserve(type.getNumElements());
    for (int64_t i = 0, e = type.getNumElements(); i < e; ++i)
      values.push_back(
          APInt(width, mode == ElidedIntegers::Iota ? i % last : 0));
    constant.setValueAttr(DenseElementsAttr::get(type, values));
  }
  if (hasErrors)
    return failure();
  return elided.size();
}

} // namespace soap

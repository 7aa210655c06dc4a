//===- LiftParams.cpp - weight constants become parameters ----------------===//
//
// Real exporters (torch-mlir, IREE) bake the weights into the function as
// `arith.constant` tensors, often `dense_resource<__elided__>` without data.
// This pass turns each float constant tensor of at least `min-elements`
// elements into a new leading function argument marked {soap.param}, named
// `param.<i>` in order of appearance, whose `soap.init` is the constant's
// value when it has one and "fan-in" (seeded by the runtime) when the export
// elided it. Callers of the function pass the constant they no longer find
// inside it, so the module computes what it computed before.
//
//===----------------------------------------------------------------------===//

#include "PassSupport.h"
#include "soap/Dialect/SoapDialect.h"
#include "soap/Passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/SymbolTable.h"

namespace soap {
#define GEN_PASS_DEF_SOAPLIFTPARAMS
#include "soap/Passes/Passes.h.inc"
} // namespace soap

using namespace mlir;
using namespace soap;

namespace {

/// The initial value a lifted constant carries: its elements, or "fan-in"
/// when the exporter elided them (a dense_resource whose blob is absent).
static Attribute initialValue(arith::ConstantOp constant) {
  auto value = cast<ElementsAttr>(constant.getValue());
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(value)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob)
      return StringAttr::get(constant.getContext(), "fan-in");
  }
  return value;
}

struct SoapLiftParamsPass
    : public soap::impl::SoapLiftParamsBase<SoapLiftParamsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    func::FuncOp function =
        findTargetFuncOp(module, funcName, "soap-lift-params");
    if (!function)
      return signalPassFailure();
    int64_t threshold = minElements;
    if (threshold < 1) {
      module.emitError() << "soap-lift-params: min-elements must be at least "
                            "1, not "
                         << threshold;
      return signalPassFailure();
    }

    SmallVector<arith::ConstantOp> weights;
    function.walk([&](arith::ConstantOp constant) {
      auto type = dyn_cast<RankedTensorType>(constant.getType());
      if (type && type.hasStaticShape() &&
          isa<FloatType>(type.getElementType()) &&
          type.getNumElements() >= threshold)
        weights.push_back(constant);
    });
    if (weights.empty()) {
      emitWarning(function.getLoc())
          << "soap-lift-params: no float constant of at least " << threshold
          << " elements in @" << function.getName() << "; nothing lifted";
      return;
    }

    // Callers keep computing the same thing: each passes the constants it
    // no longer finds inside the function, in front of its own operands.
    std::optional<SymbolTable::UseRange> uses =
        SymbolTable::getSymbolUses(function, module);
    if (!uses) {
      function.emitError() << "soap-lift-params: cannot find the uses of @"
                           << function.getName();
      return signalPassFailure();
    }
    for (const SymbolTable::SymbolUse &use : *uses) {
      auto call = dyn_cast<func::CallOp>(use.getUser());
      if (!call) {
        use.getUser()->emitError()
            << "soap-lift-params: @" << function.getName()
            << " is referenced by '" << use.getUser()->getName()
            << "', which cannot be given the lifted parameters";
        return signalPassFailure();
      }
    }

    MLIRContext *context = &getContext();
    Block &entry = function.getBody().front();
    unsigned oldArguments = function.getNumArguments();
    OpBuilder builder(context);
    for (auto [index, constant] : llvm::enumerate(weights)) {
      BlockArgument argument =
          entry.insertArgument(index, constant.getType(), constant.getLoc());
      constant.getResult().replaceAllUsesWith(argument);
    }
    // New argument attributes: the lifted parameters first, then the old
    // ones shifted.
    SmallVector<DictionaryAttr> argAttrs;
    for (auto [index, constant] : llvm::enumerate(weights)) {
      NamedAttrList attrs;
      attrs.set(SoapDialect::getParamAttrName(), UnitAttr::get(context));
      attrs.set(SoapDialect::getNameAttrName(),
                StringAttr::get(context, "param." + std::to_string(index)));
      attrs.set(SoapDialect::getInitAttrName(), initialValue(constant));
      argAttrs.push_back(attrs.getDictionary(context));
    }
    for (unsigned i = 0; i < oldArguments; ++i) {
      DictionaryAttr attrs = function.getArgAttrDict(i);
      argAttrs.push_back(attrs ? attrs : DictionaryAttr::get(context));
    }
    function.setType(FunctionType::get(context, entry.getArgumentTypes(),
                                       function.getResultTypes()));
    function.setAllArgAttrs(argAttrs);

    for (const SymbolTable::SymbolUse &use : *uses) {
      auto call = cast<func::CallOp>(use.getUser());
      builder.setInsertionPoint(call);
      SmallVector<Value> operands;
      for (arith::ConstantOp constant : weights)
        operands.push_back(
            builder.clone(*constant.getOperation())->getResult(0));
      llvm::append_range(operands, call.getOperands());
      call->setOperands(operands);
    }
    for (arith::ConstantOp constant : weights)
      constant.erase();
  }
};

} // namespace

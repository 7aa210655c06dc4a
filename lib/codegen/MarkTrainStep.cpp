//===- MarkTrainStep.cpp - a plain function as a training step -----------===//

#include "soap/codegen/MarkTrainStep.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/SmallSet.h"

using namespace mlir;

namespace soap {

LogicalResult markTrainStep(ModuleOp module, const TrainStepMarking &m) {
  auto func = module.lookupSymbol<func::FuncOp>(m.func);
  if (!func || func.isExternal())
    return module.emitError() << "no function @" << m.func
                              << " with a body to mark as a training step";
  if (m.func != "train_step" && module.lookupSymbol("train_step"))
    return module.emitError()
           << "the module already has a @train_step; mark that one";
  if (m.init != "fan-in" && m.init != "zeros" && m.init != "ones")
    return module.emitError() << "init=" << m.init
                              << " is not one of fan-in, zeros, ones";
  unsigned numArgs = func.getNumArguments(), numResults = func.getNumResults();
  llvm::SmallSet<unsigned, 8> seen;
  for (const std::vector<unsigned> *list : {&m.params, &m.labels})
    for (unsigned a : *list) {
      if (a >= numArgs)
        return func.emitError() << "argument " << a << " does not exist (@"
                                << m.func << " has " << numArgs << ")";
      if (!seen.insert(a).second)
        return func.emitError() << "argument " << a << " is marked twice";
    }
  if (m.loss >= numResults)
    return func.emitError() << "loss=" << m.loss << ": @" << m.func
                            << " has " << numResults << " results";
  if (numResults - 1 != m.params.size())
    return func.emitError()
           << "@" << m.func << " returns " << numResults - 1
           << " results besides the loss, but " << m.params.size()
           << " parameters are marked; each updated parameter must be "
              "returned in the order of params=";

  Builder b(module.getContext());
  auto str = [&](StringRef s) { return b.getStringAttr(s); };
  auto nameOf = [&](unsigned a) {
    if (auto name = func.getArgAttrOfType<StringAttr>(a, "soap.name"))
      return name.str();
    return "arg" + std::to_string(a);
  };
  for (unsigned a = 0; a < numArgs; ++a) {
    std::string role = llvm::is_contained(m.params, a)   ? "param"
                       : llvm::is_contained(m.labels, a) ? "label"
                                                         : "input";
    func.setArgAttr(a, "soap.role", str(role));
    func.setArgAttr(a, "soap.name", str(nameOf(a)));
    if (role == "param" && !func.getArgAttr(a, "soap.init"))
      func.setArgAttr(a, "soap.init", str(m.init));
  }
  unsigned next = 0;
  for (unsigned r = 0; r < numResults; ++r) {
    if (r == m.loss) {
      func.setResultAttr(r, "soap.role", str("loss"));
      func.setResultAttr(r, "soap.name", str("loss"));
      continue;
    }
    unsigned param = m.params[next++];
    if (func.getResultTypes()[r] != func.getArgumentTypes()[param])
      return func.emitError()
             << "result " << r << " has type " << func.getResultTypes()[r]
             << " but the parameter it updates (argument " << param
             << ") has type " << func.getArgumentTypes()[param];
    func.setResultAttr(r, "soap.role", str("param"));
    func.setResultAttr(r, "soap.name", str(nameOf(param)));
  }
  if (m.func != "train_step") {
    if (failed(SymbolTable::replaceAllSymbolUses(
            func, b.getStringAttr("train_step"), module)))
      return func.emitError() << "cannot rename @" << m.func;
    func.setSymName("train_step");
  }
  return success();
}

} // namespace soap

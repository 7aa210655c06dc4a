//===- InlineCalls.cpp - one function for the whole model -----------------===//
//
// JAX (and other exporters) emit a model as an entry that calls helper
// functions (`@selu`, `@_where`, `@_mse`). SOAP's passes work on one
// function, so the calls are inlined into it with upstream's inliner.
//
//===----------------------------------------------------------------------===//

#include "soap/graph/OpGraphBuilder.h"

#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Transforms/Inliner.h"
#include "mlir/Transforms/InliningUtils.h"

using namespace mlir;

namespace soap {

LogicalResult inlineCalls(FunctionOpInterface function, StringRef pass) {
  InlinerInterface interface(function.getContext());
  Operation *symbolTable = SymbolTable::getNearestSymbolTable(
      function->getParentOp() ? function->getParentOp() : function);
  // Each round inlines the calls present at its start; the callees' own
  // calls are inlined in the next round. A chain longer than the number of
  // functions in the module is a recursion.
  unsigned functions = 0;
  if (symbolTable)
    for (Region &region : symbolTable->getRegions())
      for (Block &block : region)
        functions += llvm::count_if(block, [](Operation &op) {
          return isa<FunctionOpInterface>(op);
        });
  for (unsigned round = 0;; ++round) {
    SmallVector<std::pair<CallOpInterface, CallableOpInterface>> calls;
    function->walk([&](CallOpInterface call) {
      auto callee =
          dyn_cast_if_present<CallableOpInterface>(call.resolveCallable());
      if (callee && callee.getCallableRegion() &&
          !callee.getCallableRegion()->empty())
        calls.push_back({call, callee});
    });
    if (calls.empty())
      return success();
    if (round > functions)
      return calls.front().first->emitError()
             << pass << ": the call to '"
             << cast<SymbolOpInterface>(calls.front().second.getOperation())
                    .getName()
             << "' is recursive and cannot be inlined";
    for (auto [call, callee] : calls) {
      if (callee.getOperation() == function.getOperation())
        return call->emitError() << pass << ": @" << function.getName()
                                 << " calls itself and cannot be inlined";
      if (failed(inlineCall(interface, InlinerConfig().getCloneCallback(),
                            call, callee, callee.getCallableRegion())))
        return call->emitError()
               << pass << ": cannot inline this call into @"
               << function.getName() << "; run --inline first";
      call->erase();
    }
  }
}

} // namespace soap

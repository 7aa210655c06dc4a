//===- ExportStrategy.cpp - write the configs or the op graph as JSON -----===//

#include "PassSupport.h"
#include "soap/Passes/Passes.h"

namespace soap {
#define GEN_PASS_DEF_SOAPEXPORTSTRATEGY
#define GEN_PASS_DEF_SOAPEXPORTGRAPH
#include "soap/Passes/Passes.h.inc"
} // namespace soap

using namespace mlir;
using namespace soap;

namespace {
struct SoapExportStrategyPass
    : public soap::impl::SoapExportStrategyBase<SoapExportStrategyPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (file.empty()) {
      module.emitError() << "--soap-export-strategy needs file=PATH.json";
      return signalPassFailure();
    }
    std::optional<BuiltOpGraph> built = buildModuleGraph(module, funcName);
    if (!built)
      return signalPassFailure();
    FailureOr<int> devices = resolveDeviceCount(module, 0, 1);
    if (failed(devices))
      return signalPassFailure();
    Strategy strategy = strategyFromIR(*built, *devices);
    std::string error;
    if (!writeTextFile(file, strategy.toJSON(built->graph), error)) {
      module.emitError() << error;
      return signalPassFailure();
    }
    markAllAnalysesPreserved();
  }
};
struct SoapExportGraphPass
    : public soap::impl::SoapExportGraphBase<SoapExportGraphPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (file.empty()) {
      module.emitError() << "--soap-export-graph needs file=PATH.json";
      return signalPassFailure();
    }
    std::optional<BuiltOpGraph> built = buildModuleGraph(module, funcName);
    if (!built)
      return signalPassFailure();
    std::string error;
    if (!writeTextFile(file, built->graph.toJSON(), error)) {
      module.emitError() << error;
      return signalPassFailure();
    }
    markAllAnalysesPreserved();
  }
};
} // namespace

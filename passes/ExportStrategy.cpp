//===- ExportStrategy.cpp - write the configs to a JSON file --------------===//

#include "PassSupport.h"
#include "soap/Passes/Passes.h"

namespace soap {
#define GEN_PASS_DEF_SOAPEXPORTSTRATEGY
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
    int devices = resolveDeviceCount(module, 0, 1);
    Strategy strategy = strategyFromIR(*built, devices);
    std::string error;
    if (!writeTextFile(file, strategy.toJSON(built->graph), error)) {
      module.emitError() << error;
      return signalPassFailure();
    }
    markAllAnalysesPreserved();
  }
};
} // namespace

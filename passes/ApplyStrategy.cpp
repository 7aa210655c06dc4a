//===- ApplyStrategy.cpp - attach a baseline or a strategy file -----------===//

#include "PassSupport.h"
#include "soap/Passes/Passes.h"
#include "soap/search/Strategies.h"

#include "llvm/Support/MemoryBuffer.h"

namespace soap {
#define GEN_PASS_DEF_SOAPAPPLYSTRATEGY
#include "soap/Passes/Passes.h.inc"
} // namespace soap

using namespace mlir;
using namespace soap;

namespace {
struct SoapApplyStrategyPass
    : public soap::impl::SoapApplyStrategyBase<SoapApplyStrategyPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<BuiltOpGraph> built = buildModuleGraph(module, funcName);
    if (!built)
      return signalPassFailure();
    FailureOr<int> resolved = resolveDeviceCount(module, numDevices, 0);
    if (failed(resolved))
      return signalPassFailure();
    int devices = *resolved;
    std::optional<Strategy> strategy;
    if (strategyName.find(".json") != std::string::npos ||
        strategyName.find('/') != std::string::npos) {
      auto buffer = llvm::MemoryBuffer::getFile(strategyName);
      if (!buffer) {
        module.emitError() << "cannot read strategy file '" << strategyName
                           << "': " << buffer.getError().message();
        return signalPassFailure();
      }
      std::string error;
      strategy = Strategy::fromJSON((*buffer)->getBuffer().str(), built->graph,
                                    error);
      if (!strategy) {
        module.emitError() << strategyName << ": " << error;
        return signalPassFailure();
      }
      if (numDevices > 0 && strategy->numDevices != numDevices) {
        module.emitError() << strategyName << " is a strategy for "
                           << strategy->numDevices << " devices, not "
                           << static_cast<int>(numDevices);
        return signalPassFailure();
      }
    } else {
      if (devices < 1) {
        module.emitError() << "--soap-apply-strategy needs devices=N (or a "
                              "module with soap.num_devices)";
        return signalPassFailure();
      }
      strategy = strategyByName(strategyName, built->graph, devices);
      if (!strategy) {
        std::string names;
        for (const std::string &n : baselineStrategyNames())
          names += (names.empty() ? "" : ", ") + n;
        module.emitError() << "unknown strategy '" << strategyName
                           << "'; expected " << names
                           << ", random:SEED (SEED a decimal below 2^64), or "
                              "a strategy .json file";
        return signalPassFailure();
      }
    }
    if (auto problem = strategy->validate(built->graph)) {
      module.emitError() << "strategy '" << strategyName
                         << "' does not fit the model: " << *problem;
      return signalPassFailure();
    }
    attachStrategy(*built, *strategy);
  }
};
} // namespace

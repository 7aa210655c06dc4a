//===- ApplyStrategy.cpp - attach a baseline or a strategy file -----------===//

#include "PassSupport.h"
#include "soap/Passes/Passes.h"
#include "soap/search/Strategies.h"

#include "llvm/Support/MemoryBuffer.h"

#include <set>

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
    bool fromFile = strategyName.find(".json") != std::string::npos ||
                    strategyName.find('/') != std::string::npos;
    if (fromFile) {
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
    // A named strategy that cannot use every device (data parallelism on a
    // batch smaller than, or not a multiple of, the device count) leaves
    // the rest idle: said, not silent.
    if (!fromFile) {
      std::set<int64_t> used;
      for (const ParallelConfig &config : strategy->configs)
        used.insert(config.devices.begin(), config.devices.end());
      if (!used.empty() &&
          static_cast<int64_t>(used.size()) < strategy->numDevices)
        module.emitWarning()
            << "strategy '" << strategyName << "' uses " << used.size()
            << " of the " << strategy->numDevices
            << " devices; the others stay idle (a batch smaller than, or "
               "not a multiple of, the device count splits only as far as "
               "it divides)";
    }
    attachStrategy(*built, *strategy);
  }
};
} // namespace

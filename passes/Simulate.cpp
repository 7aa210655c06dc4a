//===- Simulate.cpp - predict a step of the annotated program -------------===//

#include "PassSupport.h"
#include "soap/Passes/Passes.h"
#include "soap/sim/Simulator.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

namespace soap {
#define GEN_PASS_DEF_SOAPSIMULATE
#include "soap/Passes/Passes.h.inc"
} // namespace soap

using namespace mlir;
using namespace soap;

namespace {
struct SoapSimulatePass
    : public soap::impl::SoapSimulateBase<SoapSimulatePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<BuiltOpGraph> built = buildModuleGraph(module, funcName);
    if (!built)
      return signalPassFailure();
    SimulationSetup setup;
    if (failed(prepareSimulation(module, machineFile, numDevices, profileFile,
                                 optimizer, setup)))
      return signalPassFailure();
    const Machine *machine = &*setup.machine;
    std::string error;
    Strategy strategy = strategyFromIR(*built, machine->numDevices());
    if (auto problem = strategy.validate(built->graph)) {
      module.emitError() << "the program's configs do not fit "
                         << machine->numDevices() << " devices of '"
                         << machine->name() << "': " << *problem;
      return signalPassFailure();
    }
    CostModel cost = setup.costModel();
    SimOptions options;
    options.training = training;
    Simulator simulator(built->graph, cost, options);
    SimReport report = simulator.simulate(strategy);
    report.memoryTimeline = simulator.memoryTimeline();

    int64_t peak = 0;
    for (int64_t bytes : report.devicePeakMemory)
      peak = std::max(peak, bytes);
    double busy = 0;
    for (double b : report.deviceBusy)
      busy += b;
    llvm::errs() << "soap-simulate: " << machine->name() << ", "
                 << machine->numDevices() << " devices, "
                 << (training ? "training step" : "forward pass") << ": "
                 << llvm::format("%.3f", report.stepTime * 1e3) << " ms, "
                 << llvm::format("%.1f", 100 * busy /
                                              (report.stepTime *
                                               machine->numDevices() + 1e-30))
                 << "% busy, "
                 << llvm::format("%.2f", report.totalCommBytes / 1e6)
                 << " MB moved, peak memory "
                 << llvm::format("%.2f", peak / 1e6) << " MB/device ("
                 << report.numTasks << " tasks)\n";
    report.coverage =
        reportProfileCoverage("soap-simulate", built->graph, strategy.configs,
                              setup, simulator.madeCopies());
    for (int64_t bytes : report.devicePeakMemory)
      if (bytes > machine->deviceType().memoryBytes) {
        llvm::errs() << "soap-simulate: warning: a device needs "
                     << llvm::format("%.2f", bytes / 1e9) << " GB, more than "
                     << llvm::format("%.2f",
                                     machine->deviceType().memoryBytes / 1e9)
                     << " GB it has\n";
        break;
      }
    if (!reportFile.empty() &&
        !writeTextFile(reportFile, report.toJSON(*machine), error)) {
      module.emitError() << error;
      return signalPassFailure();
    }
    if (!traceFile.empty() &&
        !writeTextFile(traceFile, simulator.chromeTrace(), error)) {
      module.emitError() << error;
      return signalPassFailure();
    }
    if (!communicationFile.empty() &&
        !writeTextFile(communicationFile,
                       communicationJSON(simulator.communication()), error)) {
      module.emitError() << error;
      return signalPassFailure();
    }
    markAllAnalysesPreserved();
  }

  /// {"steps": [{"kind": ..., "group": [...], "bytes": ..., "what": ...}, ...]}
  static std::string communicationJSON(const std::vector<CommStep> &steps) {
    std::string text = "{\"steps\": [";
    for (size_t i = 0; i < steps.size(); ++i) {
      text += i ? ",\n  " : "\n  ";
      text += "{\"kind\": \"" + steps[i].kind + "\", \"group\": [";
      for (size_t d = 0; d < steps[i].group.size(); ++d)
        text += (d ? ", " : "") + std::to_string(steps[i].group[d]);
      text += "], \"bytes\": " + std::to_string(steps[i].bytes);
      std::string what;
      llvm::raw_string_ostream os(what);
      llvm::json::Value(steps[i].what).print(os);
      text += ", \"what\": " + what + "}";
    }
    return text + "\n]}\n";
  }
};
} // namespace

//===- Search.cpp - the MCMC strategy search pass -------------------------===//

#include "soap/search/Search.h"
#include "PassSupport.h"
#include "soap/Passes/Passes.h"
#include "soap/sim/Simulator.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>

namespace soap {
#define GEN_PASS_DEF_SOAPSEARCH
#include "soap/Passes/Passes.h.inc"
} // namespace soap

using namespace mlir;
using namespace soap;

namespace {
struct SoapSearchPass : public soap::impl::SoapSearchBase<SoapSearchPass> {
  using Base::Base;

  void runOnOperation() override {
    // time= counts from here: building the op graph and simulating the
    // starting points are part of the search the user waits for.
    auto start = std::chrono::steady_clock::now();
    ModuleOp module = getOperation();
    // Written so that NaN fails each (a comparison with NaN is false) and
    // infinities fail where a finite value is needed.
    if (budget < 0 || !(timeLimit >= 0 && std::isfinite(timeLimit)) ||
        chains < 1 || threads < 1 || memoryLimit < 0 ||
        !(temperature > 0 && std::isfinite(temperature)) ||
        !(layerMoves >= 0 && layerMoves <= 1) ||
        !(localMoves >= 0 && localMoves <= 1)) {
      module.emitError() << "--soap-search: budget, time and memory-limit "
                            "must be >= 0, chains and threads >= 1, "
                            "temperature > 0, layer-moves and local-moves "
                            "in [0, 1] (and all finite)";
      return signalPassFailure();
    }
    std::optional<BuiltOpGraph> built = buildModuleGraph(module, funcName);
    if (!built)
      return signalPassFailure();
    SimulationSetup setup;
    if (failed(prepareSimulation(module, machineFile, numDevices, profileFile,
                                 optimizer, setup)))
      return signalPassFailure();
    const Machine &machine = *setup.machine;
    CostModel cost = setup.costModel();

    SearchOptions options;
    options.budget = budget;
    options.timeLimit = timeLimit;
    options.start = start;
    options.seed = seed;
    options.chains = chains;
    options.threads = threads;
    options.memoryLimit = memoryLimit;
    options.temperature = temperature;
    options.layerMoves = layerMoves;
    options.localMoves = localMoves;
    bool terminal = llvm::sys::Process::StandardErrIsDisplayed();
    if (terminal)
      options.progress = [](int64_t iterations, double best, double accept,
                            double seconds) {
        llvm::errs() << llvm::format(
            "\rsoap-search: %lld proposals, best %.3f ms, %.0f%% accepted, "
            "%.1f s   ",
            static_cast<long long>(iterations), best * 1e3, accept * 100,
            seconds);
      };
    SimOptions simOptions;
    simOptions.training = training;
    SearchResult result =
        searchStrategy(built->graph, cost, simOptions, options);
    if (terminal)
      llvm::errs() << "\n";

    double best = result.bestReport.stepTime;
    llvm::errs() << "soap-search: " << machine.name() << ", "
                 << machine.numDevices() << " devices: best "
                 << llvm::format("%.3f", best * 1e3) << " ms, "
                 << llvm::format("%.2f", result.dataParallelTime / best)
                 << "x data parallel ("
                 << llvm::format("%.3f", result.dataParallelTime * 1e3)
                 << " ms), "
                 << llvm::format("%.2f", result.bestExpertTime / best)
                 << "x the best expert strategy, " << result.bestExpertName
                 << " (" << llvm::format("%.3f", result.bestExpertTime * 1e3)
                 << " ms); " << result.iterations << " proposals in "
                 << llvm::format("%.1f", result.seconds) << " s ("
                 << llvm::format("%.0f", result.iterations / result.seconds)
                 << "/s), "
                 << llvm::format("%.0f", result.acceptanceRate * 100)
                 << "% accepted\n";
    if (setup.profile) {
      // The best strategy's copies that run as kernels (their made keys).
      Simulator simulator(built->graph, cost, simOptions);
      simulator.simulate(result.best);
      reportProfileCoverage("soap-search", built->graph, result.best.configs,
                            setup, simulator.madeCopies());
    }
    if (!summaryFile.empty()) {
      std::string error;
      if (!writeTextFile(summaryFile, result.toJSON(), error)) {
        module.emitError() << error;
        return signalPassFailure();
      }
    }
    if (!result.fitsMemory) {
      std::string message;
      llvm::raw_string_ostream os(message);
      os << "no strategy found fits in "
         << llvm::format("%.3f", result.memoryLimit / 1e9)
         << " GB per device: the best needs "
         << llvm::format("%.3f", result.peakMemory / 1e9)
         << " GB on its fullest device";
      module.emitError() << message;
      return signalPassFailure();
    }
    llvm::errs() << "soap-search: the strategy fits: "
                 << llvm::format("%.3f", result.peakMemory / 1e9)
                 << " GB on the fullest device, limit "
                 << llvm::format("%.3f", result.memoryLimit / 1e9) << " GB\n";
    attachStrategy(*built, result.best);
  }
};
} // namespace

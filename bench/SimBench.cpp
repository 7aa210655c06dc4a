//===- SimBench.cpp - simulator benchmarks --------------------------------===//
//
//   soap-sim-bench proposals MODEL.mlir MACHINE DEVICES [N]
//     median time to evaluate one random proposal with a full simulation and
//     with delta simulation, and to undo it, from data parallelism; then the
//     delta time once N proposals were kept (one markdown row)
//   soap-sim-bench strategies MODEL.mlir MACHINE DEVICES
//     simulated step time of each baseline strategy (one markdown row)
// MODEL may also be an OpGraph JSON written by --soap-export-graph.
//
//===----------------------------------------------------------------------===//

#include "soap/Dialect/Registration.h"
#include "soap/graph/OpGraphBuilder.h"
#include "soap/machine/Machine.h"
#include "soap/search/ConfigSpace.h"
#include "soap/search/Strategies.h"
#include "soap/sim/Simulator.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/SourceMgr.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

using namespace soap;

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

static double seconds() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int main(int argc, char **argv) {
  if (argc < 5) {
    std::fprintf(stderr,
                 "usage: soap-sim-bench proposals|strategies MODEL.mlir "
                 "MACHINE.json DEVICES [PROPOSALS]\n");
    return 2;
  }
  std::string mode = argv[1], modelPath = argv[2], machinePath = argv[3];
  int devices = std::atoi(argv[4]);
  int proposals = argc > 5 ? std::atoi(argv[5]) : 1000;

  // The model: MLIR, or an OpGraph JSON from --soap-export-graph.
  std::string error;
  std::optional<OpGraph> loaded;
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  registerSoapDialects(registry);
  mlir::MLIRContext context(registry);
  if (modelPath.size() > 5 &&
      modelPath.compare(modelPath.size() - 5, 5, ".json") == 0) {
    std::ifstream in(modelPath);
    std::stringstream buffer;
    buffer << in.rdbuf();
    loaded = OpGraph::fromJSON(buffer.str(), error);
  } else {
    mlir::OwningOpRef<mlir::ModuleOp> module =
        mlir::parseSourceFile<mlir::ModuleOp>(modelPath, &context);
    if (!module) {
      std::fprintf(stderr, "soap-sim-bench: cannot parse %s\n",
                   modelPath.c_str());
      return 1;
    }
    auto func = findTargetFunction(*module, "", error);
    std::optional<BuiltOpGraph> built;
    if (func)
      built = buildOpGraph(func, error);
    if (built)
      loaded = std::move(built->graph);
  }
  std::optional<Machine> machine = Machine::load(machinePath, error);
  if (machine && devices != machine->numDevices())
    machine = machine->withDevices(devices, error);
  if (!loaded || !machine) {
    std::fprintf(stderr, "soap-sim-bench: %s\n", error.c_str());
    return 1;
  }
  const OpGraph &graph = *loaded;
  CostModel cost(*machine);

  if (mode == "strategies") {
    Simulator sim(graph, cost);
    std::printf("| %s | %s | %d |", modelPath.c_str(), machine->name().c_str(),
                devices);
    for (const std::string &name : baselineStrategyNames()) {
      Strategy s = *strategyByName(name, graph, devices);
      if (auto problem = s.validate(graph)) {
        std::printf(" n/a |");
        continue;
      }
      std::printf(" %.3f |", sim.simulate(s).stepTime * 1e3);
    }
    std::printf("\n");
    return 0;
  }
  if (mode != "proposals") {
    std::fprintf(stderr, "soap-sim-bench: unknown mode '%s'\n", mode.c_str());
    return 2;
  }
  // 1. From data parallelism, each proposal evaluated and then taken back
  //    (what the search does with a rejected proposal, and most are).
  Simulator delta(graph, cost), full(graph, cost);
  Strategy start = dataParallelStrategy(graph, devices);
  SimReport initial = delta.simulate(start);
  std::mt19937_64 rng(42);
  auto propose = [&](int &node) {
    node = std::uniform_int_distribution<int>(0, graph.nodes.size() - 1)(rng);
    return randomConfig(graph.nodes[node], devices, rng);
  };
  std::vector<double> deltaTimes, undoTimes, fullTimes;
  std::vector<std::pair<int, ParallelConfig>> sampled;
  for (int i = 0; i < proposals; ++i) {
    int node;
    ParallelConfig config = propose(node);
    double t0 = seconds();
    delta.simulateDelta(node, config);
    double t1 = seconds();
    delta.undo();
    double t2 = seconds();
    deltaTimes.push_back(t1 - t0);
    undoTimes.push_back(t2 - t1);
    if (i % 10 == 0)
      sampled.emplace_back(node, config);
  }
  // Full simulations of every 10th proposal (they are slow), timed apart:
  // interleaved, each one would evict the delta state from the caches.
  for (const auto &[node, config] : sampled) {
    Strategy proposed = start;
    proposed.configs[node] = config;
    double t0 = seconds();
    full.simulate(proposed);
    fullTimes.push_back(seconds() - t0);
  }
  // 2. Every proposal kept: the strategy drifts towards random configs,
  //    with many more transfers and tasks (the worst case).
  std::vector<double> driftTimes;
  SimReport last;
  for (int i = 0; i < proposals; ++i) {
    int node;
    ParallelConfig config = propose(node);
    double t0 = seconds();
    last = delta.simulateDelta(node, config);
    driftTimes.push_back(seconds() - t0);
  }
  double d = median(deltaTimes), f = median(fullTimes);
  std::printf("| %s | %s | %d | %zu | %lld | %.3f | %.3f | %.3f | %.0fx | "
              "%lld | %.3f |\n",
              modelPath.c_str(), machine->name().c_str(), devices,
              graph.nodes.size(), static_cast<long long>(initial.numTasks),
              f * 1e3, d * 1e3, median(undoTimes) * 1e3, f / d,
              static_cast<long long>(last.numTasks), median(driftTimes) * 1e3);
  return 0;
}

//===- SimulatorZooTest.cpp - the simulator across the model zoo ----------===//
//
// Every zoo model at small sizes: delta simulation == full simulation on
// random config changes, and the SGD step of an embedding table that one
// gather reads priced inside its scatter.
//
//===----------------------------------------------------------------------===//

#include "soap/graph/OpGraphBuilder.h"
#include "soap/machine/Machine.h"
#include "soap/search/Strategies.h"
#include "soap/sim/Simulator.h"
#include "soap/zoo/Zoo.h"

#include "soap/Dialect/Registration.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"

#include "SimulatorChecks.h"
#include "TestMachines.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <optional>

using namespace soap;

namespace {

using test::checkDeltaEqualsFull;
using test::loadMachine;

/// Small sizes with a batch of 8 (so that 8 devices can split it).
soap::zoo::ModelOptions smallOptions(const soap::zoo::ModelInfo &model) {
  soap::zoo::ModelOptions options = model.defaults;
  std::string error;
  for (auto [name, value] :
       std::vector<std::pair<const char *, int64_t>>{{"batch", 8},
                                                     {"classes", 4},
                                                     {"width", 4},
                                                     {"image", 32},
                                                     {"hidden", 16},
                                                     {"seq", 3},
                                                     {"vocab", 16},
                                                     {"embed", 8},
                                                     {"layers", 1},
                                                     {"heads", 2},
                                                     {"max-pos", 8},
                                                     {"input", 8}}) {
    if (!options.has(name))
      continue;
    if (model.name == "inception_v3" && std::string(name) == "image")
      value = 75; // the smallest image Inception-v3's stem accepts
    if (model.name == "alexnet" && std::string(name) == "image")
      value = 64;
    EXPECT_TRUE(succeeded(options.set(name, value, error))) << error;
  }
  return options;
}

/// Zoo models at small sizes (smallOptions), as op graphs.
class SimulatorZoo : public ::testing::Test {
protected:
  SimulatorZoo() {
    mlir::DialectRegistry registry;
    soap::zoo::registerZooDialects(registry);
    registerSoapDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// `model`'s op graph; nullopt with a test failure when it cannot be
  /// built.
  std::optional<OpGraph> graphOf(const soap::zoo::ModelInfo &model) {
    std::string error;
    module = soap::zoo::buildModel(context, model, smallOptions(model), error);
    EXPECT_TRUE(module) << model.name << ": " << error;
    if (!module)
      return std::nullopt;
    auto func = findTargetFunction(*module, "", error);
    EXPECT_TRUE(func) << model.name << ": " << error;
    if (!func)
      return std::nullopt;
    auto built = buildOpGraph(func, error);
    EXPECT_TRUE(built) << model.name << ": " << error;
    if (!built)
      return std::nullopt;
    return built->graph;
  }

  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

TEST_F(SimulatorZoo, DeltaEqualsFullOnEveryModel) {
  Machine machine = loadMachine("p100-4x4", 8);
  uint64_t seed = 100;
  int models = 0;
  for (const soap::zoo::ModelInfo &model : soap::zoo::getModels()) {
    std::optional<OpGraph> graph = graphOf(model);
    ASSERT_TRUE(graph);
    SCOPED_TRACE(model.name);
    checkDeltaEqualsFull(*graph, machine, 150, seed++, true);
    ++models;
  }
  EXPECT_GE(models, 13);
}

// An embedding table under SGD that one gather reads: where no all-reduce
// sums its gradient, --soap-lower-cpu applies the step inside the gather's
// scatter-add (sparse-updates), and its update costs nothing of its own.
// With momentum (the velocity reads the whole gradient) or data
// parallelism (the table's gradient all-reduced first) it is a dense pass
// over the table.
TEST_F(SimulatorZoo, SgdStepOfAGatheredTableRunsInItsScatter) {
  const soap::zoo::ModelInfo *rnnlm = nullptr;
  for (const soap::zoo::ModelInfo &model : soap::zoo::getModels())
    if (model.name == "rnnlm")
      rnnlm = &model;
  ASSERT_TRUE(rnnlm);
  std::optional<OpGraph> graph = graphOf(*rnnlm);
  ASSERT_TRUE(graph);
  const OpGraph &g = *graph;
  // The table: the tensor a gather's lookup loop indexes.
  std::string table;
  for (const OpNode &node : g.nodes)
    for (const NodeAccess &access : node.accesses)
      if (node.isLookupTable(access) && g.tensors[access.tensor].isParameter)
        table = g.tensors[access.tensor].name;
  ASSERT_FALSE(table.empty());
  // Update durations from the simulated trace: the table's and the others'.
  auto updates = [&](int devices, Optimizer optimizer) {
    Machine machine = loadMachine("cpu-local", devices);
    CostModel cost(machine, nullptr, optimizer);
    Simulator sim(g, cost);
    sim.simulate(devices == 1 ? dataParallelStrategy(g, 1)
                              : dataParallelStrategy(g, devices));
    nlohmann::json trace = nlohmann::json::parse(sim.chromeTrace());
    std::pair<double, double> tableAndOthers{0, 0};
    int tableUpdates = 0;
    for (const nlohmann::json &e : trace["traceEvents"]) {
      if (e.value("cat", "") != "update")
        continue;
      if (e.value("name", "") == "update " + table) {
        tableAndOthers.first += e.value("dur", 0.0);
        ++tableUpdates;
      } else {
        tableAndOthers.second += e.value("dur", 0.0);
      }
    }
    EXPECT_EQ(tableUpdates, devices) << "one update of the table per device";
    return tableAndOthers;
  };
  auto [sgdTable, sgdOthers] = updates(1, Optimizer::SGD);
  EXPECT_EQ(sgdTable, 0);
  EXPECT_GT(sgdOthers, 0);
  EXPECT_GT(updates(1, Optimizer::Momentum).first, 0);
  EXPECT_GT(updates(2, Optimizer::SGD).first, 0);
}

} // namespace

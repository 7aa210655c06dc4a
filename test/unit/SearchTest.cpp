//===- SearchTest.cpp - the MCMC strategy search --------------------------===//

#include "soap/machine/Machine.h"
#include "soap/search/ConfigSpace.h"
#include "soap/search/Search.h"
#include "soap/search/Strategies.h"

#include "TestMachines.h"

#include <gtest/gtest.h>

using namespace soap;

namespace {

using test::loadMachine;

IndexExpr loop(unsigned l) {
  IndexExpr e;
  e.terms.push_back({l, 1});
  return e;
}

/// A chain of linear layers y = x W over a batch, with widths[i] inputs
/// and widths[i + 1] outputs in layer i, the weights as parameters.
OpGraph linearChain(int64_t batch, const std::vector<int64_t> &widths) {
  OpGraph g;
  g.tensors.push_back({"x", {batch, widths[0]}, 4, "f32", false, true, -1});
  for (size_t l = 0; l + 1 < widths.size(); ++l) {
    int64_t in = widths[l], out = widths[l + 1];
    int input = g.tensors.size() - 1;
    int weight = g.tensors.size();
    g.tensors.push_back(
        {"w" + std::to_string(l), {in, out}, 4, "f32", true, false, -1});
    int output = g.tensors.size();
    g.tensors.push_back({"h" + std::to_string(l), {batch, out}, 4, "f32",
                         false, false, static_cast<int>(l)});
    OpNode node;
    node.opName = "linalg.matmul";
    node.opClass = OpClass::Matmul;
    node.loopSizes = {batch, out, in};
    node.loopNames = {"m", "n", "k"};
    node.loopKinds = {DimKind::Sample, DimKind::Parameter, DimKind::Reduction};
    node.overBatch = {true, false, false};
    node.flopsPerIteration = 2;
    node.accesses = {{input, {loop(0), loop(2)}, AccessRole::Read, false},
                     {weight, {loop(2), loop(1)}, AccessRole::Read, false},
                     {output, {loop(0), loop(1)}, AccessRole::Write, false}};
    g.nodes.push_back(node);
  }
  g.markBackward();
  return g;
}

OpGraph linearChain(int layers, int64_t batch, int64_t width) {
  return linearChain(batch, std::vector<int64_t>(layers + 1, width));
}

SearchOptions small(uint64_t seed, int threads) {
  SearchOptions o;
  o.budget = 1200;
  o.seed = seed;
  o.chains = 3;
  o.threads = threads;
  o.roundLength = 50;
  return o;
}

TEST(Search, DeterministicWithOneThreadOrSeveral) {
  OpGraph g = linearChain(4, 64, 256);
  Machine machine = loadMachine("p100-4x4", 8);
  CostModel cost(machine);
  SearchResult one = searchStrategy(g, cost, {}, small(7, 1));
  SearchResult again = searchStrategy(g, cost, {}, small(7, 1));
  SearchResult three = searchStrategy(g, cost, {}, small(7, 3));
  EXPECT_EQ(one.best.toJSON(g), again.best.toJSON(g));
  EXPECT_EQ(one.best.toJSON(g), three.best.toJSON(g));
  EXPECT_EQ(one.bestCost, three.bestCost);
  EXPECT_EQ(one.iterations, three.iterations);
  SearchResult other = searchStrategy(g, cost, {}, small(8, 1));
  EXPECT_EQ(other.iterations, one.iterations); // same budget
}

TEST(Search, NeverWorseThanItsStartingStrategies) {
  OpGraph g = linearChain(3, 32, 512);
  for (const char *name : {"p100-4x4", "k80-16x4"}) {
    Machine machine = loadMachine(name, 16);
    CostModel cost(machine);
    SearchResult result = searchStrategy(g, cost, {}, small(3, 2));
    Simulator sim(g, cost);
    for (const std::string &baseline : baselineStrategyNames()) {
      Strategy s = *strategyByName(baseline, g, 16);
      if (s.validate(g))
        continue;
      double start = searchCost(sim.simulate(s), result.memoryLimit);
      EXPECT_LE(result.bestCost, start) << name << " " << baseline;
    }
    EXPECT_LE(result.bestReport.stepTime, result.dataParallelTime);
    EXPECT_LE(result.bestReport.stepTime, result.bestExpertTime);
    EXPECT_EQ(result.bestCost,
              searchCost(result.bestReport, result.memoryLimit));
    EXPECT_FALSE(result.best.validate(g));
  }
}

TEST(Search, FindsAStrategyThatFitsWhenDataParallelDoesNot) {
  // Large weights, small batch: data parallelism keeps every weight (and
  // its gradient) on every device; splitting the weights fits in less.
  OpGraph g = linearChain(4, 8, 2048);
  Machine machine = loadMachine("h100-8", 8);
  CostModel cost(machine);
  Simulator sim(g, cost);
  SimReport dp = sim.simulate(dataParallelStrategy(g, 8));
  int64_t dpPeak = *std::max_element(dp.devicePeakMemory.begin(),
                                     dp.devicePeakMemory.end());
  SearchOptions options = small(5, 2);
  options.budget = 3000;
  options.memoryLimit = dpPeak / 2;
  SearchResult result = searchStrategy(g, cost, {}, options);
  EXPECT_TRUE(result.fitsMemory);
  EXPECT_LE(result.peakMemory, options.memoryLimit);
  EXPECT_GT(dpPeak, options.memoryLimit);

  // Nothing fits in a kilobyte: the result says so.
  options.memoryLimit = 1024;
  SearchResult none = searchStrategy(g, cost, {}, options);
  EXPECT_FALSE(none.fitsMemory);
  EXPECT_GT(none.peakMemory, 1024);
}

TEST(Search, FindsTheEnumeratedOptimum) {
  // A few ops on two devices: every combination of every op's configs is
  // simulated, and the search must reach the best cost. Only cases where
  // the optimum is none of the baselines the chains start from count: the
  // search has to find it.
  Machine machine = loadMachine("k80-16x4", 2);
  CostModel cost(machine);
  int64_t limit = machine.deviceType().memoryBytes;
  int checked = 0;
  for (std::vector<int64_t> widths :
       {std::vector<int64_t>{8, 8, 8}, {8, 4096, 8}, {2048, 8, 2048},
        {16, 2048, 2048}, {2048, 2048, 16, 16}, {8, 1024, 1024, 8}}) {
    for (int64_t batch : {8, 256}) {
      OpGraph g = linearChain(batch, widths);
      std::vector<std::vector<ParallelConfig>> space;
      size_t combinations = 1;
      for (const OpNode &node : g.nodes) {
        space.push_back(enumerateConfigs(node, 2));
        combinations *= space.back().size();
      }
      EXPECT_EQ(space[0].size(), 15u); // replicated, 2 whole, 3 splits x 4
      Simulator sim(g, cost);
      double optimum = INFINITY;
      for (size_t c = 0; c < combinations; ++c) {
        Strategy s;
        s.numDevices = 2;
        size_t rest = c;
        for (size_t n = 0; n < g.nodes.size(); ++n) {
          s.configs.push_back(space[n][rest % space[n].size()]);
          rest /= space[n].size();
        }
        optimum = std::min(optimum, searchCost(sim.simulate(s), limit));
      }
      double baselines = INFINITY;
      for (const std::string &name : baselineStrategyNames())
        baselines = std::min(
            baselines,
            searchCost(sim.simulate(*strategyByName(name, g, 2)), limit));
      if (!(optimum < baselines))
        continue;
      ++checked;
      SearchOptions options = small(11, 1);
      options.chains = 2; // starts: the baselines only
      options.budget = 8000;
      SearchResult result = searchStrategy(g, cost, {}, options);
      EXPECT_EQ(result.bestCost, optimum)
          << g.nodes.size() << " layers, batch " << batch << ", "
          << combinations << " strategies, baselines " << baselines;
    }
  }
  EXPECT_GE(checked, 3) << "too few cases where the optimum is not a baseline";
}

} // namespace

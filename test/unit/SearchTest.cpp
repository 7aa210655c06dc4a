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

/// Adds y = x W with the existing parameter `weight`; returns y.
int addMatmul(OpGraph &g, int input, int weight, const std::string &name) {
  int64_t batch = g.tensors[input].shape[0];
  int64_t in = g.tensors[weight].shape[0], out = g.tensors[weight].shape[1];
  int output = g.tensors.size();
  g.tensors.push_back({name, {batch, out}, 4, "f32", false, false,
                       static_cast<int>(g.nodes.size())});
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
  return output;
}

/// Adds an elementwise op y = f(x) over [batch, width] reading `input`;
/// returns its output tensor.
int addElementwise(OpGraph &g, int input, const std::string &name) {
  const GraphTensor &in = g.tensors[input];
  int64_t batch = in.shape[0], width = in.shape[1];
  int output = g.tensors.size();
  g.tensors.push_back({name, {batch, width}, 4, "f32", false, false,
                       static_cast<int>(g.nodes.size())});
  OpNode node;
  node.opName = "linalg.generic";
  node.opClass = OpClass::Elementwise;
  node.loopSizes = {batch, width};
  node.loopNames = {"d0", "d1"};
  node.loopKinds = {DimKind::Sample, DimKind::Attribute};
  node.overBatch = {true, false};
  node.flopsPerIteration = 1;
  node.accesses = {{input, {loop(0), loop(1)}, AccessRole::Read, false},
                   {output, {loop(0), loop(1)}, AccessRole::Write, false}};
  g.nodes.push_back(node);
  return output;
}

/// A chain of linear layers y = x W over a batch, with widths[i] inputs
/// and widths[i + 1] outputs in layer i, the weights as parameters.
OpGraph linearChain(int64_t batch, const std::vector<int64_t> &widths) {
  OpGraph g;
  g.tensors.push_back({"x", {batch, widths[0]}, 4, "f32", false, true, -1});
  int h = 0;
  for (size_t l = 0; l + 1 < widths.size(); ++l) {
    int weight = g.tensors.size();
    g.tensors.push_back({"w" + std::to_string(l), {widths[l], widths[l + 1]},
                         4, "f32", true, false, -1});
    h = addMatmul(g, h, weight, "h" + std::to_string(l));
  }
  g.markBackward();
  return g;
}

OpGraph linearChain(int layers, int64_t batch, int64_t width) {
  return linearChain(batch, std::vector<int64_t>(layers + 1, width));
}

/// A two-layer RNN-like graph unrolled over `steps`: at each step, layer l
/// computes tanh(h W_l) from the previous layer's output, the weights shared
/// by the steps; then a classifier with its own weight.
OpGraph unrolledLayers(int steps, int64_t batch, int64_t width) {
  OpGraph g;
  std::vector<int> weights;
  for (int l = 0; l < 3; ++l) {
    weights.push_back(g.tensors.size());
    g.tensors.push_back({"w" + std::to_string(l), {width, width}, 4, "f32",
                         true, false, -1});
  }
  int x = g.tensors.size();
  g.tensors.push_back({"x", {batch, width}, 4, "f32", false, true, -1});
  int h = x;
  for (int t = 0; t < steps; ++t)
    for (int l = 0; l < 2; ++l) {
      std::string name = "t" + std::to_string(t) + "." + std::to_string(l);
      h = addElementwise(g, addMatmul(g, h, weights[l], name + ".mm"),
                         name + ".tanh");
    }
  addMatmul(g, h, weights[2], "classifier");
  g.markBackward();
  return g;
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
  // Another seed stops at the same budget, or earlier after half of it
  // without an improvement.
  SearchResult other = searchStrategy(g, cost, {}, small(8, 1));
  EXPECT_LE(other.iterations, 1200);
  EXPECT_GE(other.iterations, 600);
}

TEST(Search, StopsAtItsDeadline) {
  OpGraph g = linearChain(4, 64, 256);
  Machine machine = loadMachine("p100-4x4", 8);
  CostModel cost(machine);
  // The time limit counts from `start`: one that ran out before the call
  // leaves data parallelism, simulated, as the only starting point and no
  // proposal, whatever the budget.
  SearchOptions options = small(7, 2);
  options.budget = 0;
  options.roundLength = 0;
  options.timeLimit = 1;
  options.start = std::chrono::steady_clock::now() - std::chrono::hours(1);
  SearchResult late = searchStrategy(g, cost, {}, options);
  EXPECT_EQ(late.iterations, 0);
  ASSERT_EQ(late.startTimes.size(), 1u);
  EXPECT_EQ(late.startTimes[0].first, "data-parallel");
  EXPECT_EQ(late.best.toJSON(g), dataParallelStrategy(g, 8).toJSON(g));
  EXPECT_GT(late.bestReport.stepTime, 0);
  EXPECT_EQ(late.bestReport.stepTime, late.dataParallelTime);
  EXPECT_FALSE(late.best.validate(g));

  // A limit that has not run out: the search makes proposals, and stops
  // by the deadline however large the budget. (2 s: simulating the
  // starting strategies alone took more than 0.2 s under the sanitizers
  // on a loaded machine.)
  options.start.reset();
  options.timeLimit = 2;
  SearchResult timed = searchStrategy(g, cost, {}, options);
  EXPECT_GT(timed.iterations, 0);
  EXPECT_EQ(timed.bestCost, searchCost(timed.bestReport, timed.memoryLimit));
  EXPECT_FALSE(timed.best.validate(g));
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

TEST(ConfigSpace, LayerGroupsJoinStepsSharingAWeightAndTheirOps) {
  OpGraph g = unrolledLayers(3, 8, 16);
  // Nodes: per step and layer a matmul (even) and its tanh (odd), layer 0
  // at 4t, 4t+1 and layer 1 at 4t+2, 4t+3; the classifier last.
  std::vector<Layer> layers = layerGroups(g);
  ASSERT_EQ(layers.size(), 3u);
  EXPECT_EQ(layers[0].ops, (std::vector<int>{0, 1, 4, 5, 8, 9}));
  EXPECT_EQ(layers[0].readers, (std::vector<int>{0, 4, 8}));
  EXPECT_EQ(layers[1].ops, (std::vector<int>{2, 3, 6, 7, 10, 11}));
  EXPECT_EQ(layers[1].readers, (std::vector<int>{2, 6, 10}));
  EXPECT_EQ(layers[2].ops, (std::vector<int>{12}));
  EXPECT_EQ(layers[2].readers, (std::vector<int>{12}));

  OpGraph noWeights;
  noWeights.tensors.push_back({"x", {8, 16}, 4, "f32", false, true, -1});
  addElementwise(noWeights, 0, "y");
  EXPECT_TRUE(layerGroups(noWeights).empty());
}

TEST(ConfigSpace, CarryConfigKeepsTheDevicesAndSplitsTheSampleLoopFirst) {
  OpGraph g = unrolledLayers(1, 8, 16);
  const OpNode &matmul = g.nodes[0], &tanh = g.nodes[1];
  ParallelConfig split{{2, 2, 1}, {4, 5, 6, 7}};
  // The same loops: the config itself.
  EXPECT_EQ(carryConfig(split, matmul, g.nodes[2])->degrees, split.degrees);
  // Four tasks on [8, 16]: all on the batch loop, same devices.
  std::optional<ParallelConfig> carried = carryConfig(split, matmul, tanh);
  ASSERT_TRUE(carried);
  EXPECT_EQ(carried->degrees, (std::vector<int64_t>{4, 1}));
  EXPECT_EQ(carried->devices, split.devices);
  // Sixteen tasks: 8 on the batch loop, the rest on the next one.
  ParallelConfig wide{{8, 2, 1}, std::vector<int64_t>(16, 0)};
  EXPECT_EQ(carryConfig(wide, matmul, tanh)->degrees,
            (std::vector<int64_t>{8, 2}));
  // Three tasks divide no loop of [8, 16].
  ParallelConfig three{{1, 1, 3}, {0, 1, 2}};
  EXPECT_FALSE(carryConfig(three, matmul, tanh));
  // Replicated and single-device configs carry as they are.
  EXPECT_TRUE(carryConfig(ParallelConfig{}, matmul, tanh)->degrees.empty());
  ParallelConfig single{{}, {3}};
  EXPECT_EQ(carryConfig(single, matmul, tanh)->devices,
            (std::vector<int64_t>{3}));
}

TEST(ConfigSpace, NeighbourConfigsMoveResizeOrReshapeTheSplit) {
  OpGraph g = unrolledLayers(1, 8, 16);
  const OpNode &matmul = g.nodes[0]; // loops [8, 16, 16]
  ParallelConfig current{{2, 2, 1}, {4, 5, 6, 7}};
  auto consecutiveFrom = [](const ParallelConfig &c, int64_t first) {
    for (size_t t = 0; t < c.devices.size(); ++t)
      if (c.devices[t] != first + static_cast<int64_t>(t))
        return false;
    return true;
  };
  std::mt19937_64 rng(5);
  int moved = 0, resized = 0, reshaped = 0;
  for (int i = 0; i < 600; ++i) {
    ParallelConfig next = neighbourConfig(matmul, current, 16, rng);
    ASSERT_EQ(next.degrees.size(), 3u);
    ASSERT_EQ(static_cast<int64_t>(next.devices.size()), next.numTasks());
    for (size_t l = 0; l < 3; ++l)
      ASSERT_EQ(matmul.loopSizes[l] % next.degrees[l], 0);
    int64_t first = next.devices.front();
    std::vector<int> changed;
    for (size_t l = 0; l < 3; ++l)
      if (next.degrees[l] != current.degrees[l])
        changed.push_back(l);
    if (changed.empty()) {
      // Another aligned block of four.
      EXPECT_EQ(first % 4, 0);
      EXPECT_NE(first, 4);
      EXPECT_TRUE(consecutiveFrom(next, first));
      ++moved;
    } else if (changed.size() == 1) {
      // One degree doubled or halved, on the aligned block around device 4.
      int64_t was = current.degrees[changed[0]], now = next.degrees[changed[0]];
      EXPECT_TRUE(now == 2 * was || 2 * now == was);
      int64_t size = next.numTasks();
      EXPECT_EQ(first, 4 / size * size);
      EXPECT_TRUE(consecutiveFrom(next, first));
      ++resized;
    } else {
      // A factor of two from one loop to another, on the same devices.
      ASSERT_EQ(changed.size(), 2u);
      EXPECT_EQ(next.numTasks(), 4);
      EXPECT_EQ(next.devices, current.devices);
      ++reshaped;
    }
  }
  EXPECT_GT(moved, 100);
  EXPECT_GT(resized, 100);
  EXPECT_GT(reshaped, 100);
  // More tasks than devices (four per device; halving a degree still
  // leaves two per device): every neighbour stays on valid devices.
  ParallelConfig crowded{{4, 4, 1}, {0, 0, 0, 0, 1, 1, 1, 1,
                                     2, 2, 2, 2, 3, 3, 3, 3}};
  for (int i = 0; i < 200; ++i) {
    ParallelConfig next = neighbourConfig(matmul, crowded, 4, rng);
    for (int64_t d : next.devices)
      ASSERT_TRUE(d >= 0 && d < 4) << "device " << d;
  }
  // A replicated op has no neighbour: a random config, valid for the op.
  for (int i = 0; i < 50; ++i) {
    ParallelConfig next = neighbourConfig(matmul, ParallelConfig{}, 16, rng);
    EXPECT_EQ(next.devices.size(),
              next.degrees.empty() ? next.devices.size()
                                   : static_cast<size_t>(next.numTasks()));
  }
}

} // namespace

TEST(ConfigSpace, ReshapesSplitOnlyWhereTheirBlocksAreContiguous) {
  // tensor.expand_shape [16, 8] -> [4, 4, 2, 4]: row r = 4 * i + j, column
  // c = 4 * h + k (loops i, j, h, k).
  OpNode expand;
  expand.opName = "tensor.expand_shape";
  expand.loopSizes = {4, 4, 2, 4};
  expand.loopKinds = {DimKind::Attribute, DimKind::Sample, DimKind::Attribute,
                      DimKind::Attribute};
  expand.overBatch = {false, false, false, false};
  NodeAccess input;
  input.tensor = 0;
  input.indices = {IndexExpr{{{0, 4}, {1, 1}}, 0, true},
                   IndexExpr{{{2, 4}, {3, 1}}, 0, true}};
  expand.accesses.push_back(input);
  // Split outer dimensions, or inner ones under fully split outer ones.
  EXPECT_TRUE(followableSplit(expand, {2, 1, 1, 1}));
  EXPECT_TRUE(followableSplit(expand, {1, 1, 2, 1}));
  EXPECT_TRUE(followableSplit(expand, {4, 2, 1, 1}));
  // Rows {0, 1, 4, 5, ...}: not a block.
  EXPECT_FALSE(followableSplit(expand, {1, 2, 1, 1}));
  EXPECT_FALSE(followableSplit(expand, {2, 2, 1, 1}));
  EXPECT_FALSE(followableSplit(expand, {1, 1, 1, 2}));
  // Other ops read through such maps as they are (a convolution's window).
  OpNode other = expand;
  other.opName = "linalg.generic";
  EXPECT_TRUE(followableSplit(other, {1, 2, 1, 1}));

  // Random configs and carried ones are followable: two tasks carried
  // from a matmul go to the outer row loop, not the sample loop j.
  std::mt19937_64 rng(7);
  for (int draw = 0; draw < 200; ++draw)
    EXPECT_TRUE(followableSplit(expand, randomConfig(expand, 8, rng).degrees));
  OpGraph g = unrolledLayers(1, 8, 16);
  std::optional<ParallelConfig> carried =
      carryConfig(ParallelConfig{{2, 1, 1}, {0, 1}}, g.nodes[0], expand);
  ASSERT_TRUE(carried);
  EXPECT_EQ(carried->degrees, (std::vector<int64_t>{2, 1, 1, 1}));
}

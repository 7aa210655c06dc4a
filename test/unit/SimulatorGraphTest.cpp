//===- SimulatorGraphTest.cpp - the simulator's op graph from IR ----------===//
//
// What the op graph learns from IR and how the simulator places it: reads
// that pass the adjoint through, torch-mlir's moves that move nothing,
// reductions whose partials cannot combine, parameters read on several
// devices, gradient sums of tensors with several readers, views of the
// step's inputs; the graph's JSON and its errors.
//
//===----------------------------------------------------------------------===//

#include "soap/machine/Machine.h"
#include "soap/search/Strategies.h"
#include "soap/sim/Simulator.h"

#include "SimulatorIR.h"
#include "TestMachines.h"

#include <gtest/gtest.h>

#include <optional>

using namespace soap;

namespace {

using test::loadMachine;
using test::SimulatorIR;

// The reads whose gradient the training step takes to be the result's
// adjoint itself: both operands of a residual add and the minuend of a
// subtraction, at the result's indexing map and type; not a broadcast
// bias, a subtrahend, a product's operand, a value read twice, nor a
// reduction's input. The flag survives the graph's JSON.
TEST_F(SimulatorIR, GradientIsAdjointMarksPassThroughReads) {
  OpGraph g = graphOf(R"mlir(
#m = affine_map<(d0, d1) -> (d0, d1)>
#b = affine_map<(d0, d1) -> (d1)>
#r = affine_map<(d0, d1) -> (d0)>
func.func @f(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %v: tensor<8xf32> {soap.param})
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %add = linalg.generic {indexing_maps = [#m, #m, #m], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %bias = linalg.generic {indexing_maps = [#m, #b, #m], iterator_types = ["parallel", "parallel"]}
      ins(%add, %v : tensor<4x8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %c, %a : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %sub = linalg.generic {indexing_maps = [#m, #m, #m], iterator_types = ["parallel", "parallel"]}
      ins(%bias, %add : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.subf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %twice = linalg.generic {indexing_maps = [#m, #m, #m], iterator_types = ["parallel", "parallel"]}
      ins(%sub, %x : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %a : f32
    %t = arith.mulf %s, %c : f32
    linalg.yield %t : f32
  } -> tensor<4x8xf32>
  %z = tensor.empty() : tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#m, #r], iterator_types = ["parallel", "reduction"]}
      ins(%twice : tensor<4x8xf32>) outs(%z : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %o, %a : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %add, %bias, %sub, %twice, %sum : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>
}
)mlir");
  // Per generic in order, the flags of its reads.
  auto flags = [](const OpGraph &graph) {
    std::vector<std::vector<bool>> all;
    for (const OpNode &n : graph.nodes) {
      std::vector<bool> reads;
      for (const NodeAccess &a : n.accesses)
        if (a.role == AccessRole::Read)
          reads.push_back(a.gradientIsAdjoint);
      all.push_back(reads);
    }
    return all;
  };
  std::vector<std::vector<bool>> expected = {{true, true},
                                             {true, false},
                                             {true, false},
                                             {false, false},
                                             {false, false}};
  EXPECT_EQ(flags(g), expected);
  std::string error;
  std::optional<OpGraph> back = OpGraph::fromJSON(g.toJSON(), error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(flags(*back), expected);
}

// torch-mlir's forms that cost nothing in the partitioned step: the
// weight's transpose before its matmul (owt places it where the matmul
// reads each block), an identity copy (erased by the training step's
// canonicalization: no node, its reader reads the source), and a count
// whose input gives only its shape (no edge, nothing moves).
TEST_F(SimulatorIR, TorchMlirTransposesCopiesAndCountsMoveNothing) {
  OpGraph g = graphOf(R"mlir(
#id = affine_map<(d0, d1) -> (d0, d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @loss(%x: tensor<8x16xf32>, %w: tensor<32x16xf32> {soap.param}) -> tensor<8x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<8x16xf32>
  %copy = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x16xf32>) outs(%e0 : tensor<8x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<8x16xf32>
  %e1 = tensor.empty() : tensor<16x32xf32>
  %wt = linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<32x16xf32>) outs(%e1 : tensor<16x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<16x32xf32>
  %e2 = tensor.empty() : tensor<8x32xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %y = linalg.matmul ins(%copy, %wt : tensor<8x16xf32>, tensor<16x32xf32>) outs(%f2 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %e3 = tensor.empty() : tensor<32xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<32xf32>) -> tensor<32xf32>
  %n = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%y : tensor<8x32xf32>) outs(%f3 : tensor<32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %one = arith.constant 1.0 : f32
    %s = arith.addf %o, %one : f32
    linalg.yield %s : f32
  } -> tensor<32xf32>
  %e4 = tensor.empty() : tensor<8x32xf32>
  %r = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%y, %n : tensor<8x32xf32>, tensor<32xf32>) outs(%e4 : tensor<8x32xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.divf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}
)mlir");
  // No node for the copy: the transpose, two fills, the matmul, the count
  // and the division.
  ASSERT_EQ(g.nodes.size(), 6u);
  int transpose = nodeOf(g, "linalg.generic"),
      matmul = nodeOf(g, "linalg.matmul");
  int count = nodeOf(g, "linalg.generic", 1);
  ASSERT_GE(transpose, 0);
  ASSERT_GE(matmul, 0);
  ASSERT_GE(count, 0);
  // The matmul reads the input argument itself.
  EXPECT_TRUE(g.tensors[g.nodes[matmul].accesses[0].tensor].isInput);
  // The count reads its input's shape only.
  EXPECT_EQ(g.nodes[count].accesses[0].role, AccessRole::Shape);
  EXPECT_FALSE(g.nodes[count].accesses[0].readsValue());

  Strategy s = owtStrategy(g, 2);
  // owt splits the matmul along its output features; the transpose
  // computes the same blocks of the transposed weight, on the same devices.
  EXPECT_EQ(s.configs[matmul].degrees, (std::vector<int64_t>{1, 2, 1}));
  EXPECT_EQ(s.configs[transpose].degrees, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(s.configs[transpose].devices, s.configs[matmul].devices);
  Machine machine = loadMachine("p100-4x4", 2);
  CostModel cost(machine);
  Simulator sim(g, cost);
  // Data parallel: the weight's gradient is all-reduced, and nothing else
  // moves (the count, replicated, needs nothing of the split product).
  SimReport dp = sim.simulate(dataParallelStrategy(g, 2));
  EXPECT_EQ(dp.totalCommBytes,
            Machine::allReduceBytesPerDevice(32 * 16 * 4, 2) * 2)
      << "data parallel moves the weight's gradient only";
}

TEST_F(SimulatorIR, SimulationIsDeterministic) {
  OpGraph g = graphOfFile("docs/examples/mlp.mlir");
  Machine machine = loadMachine("p100-4x4", 16);
  CostModel cost(machine);
  Strategy s = owtStrategy(g, 16);
  Simulator a(g, cost), b(g, cost);
  EXPECT_TRUE(a.simulate(s) == b.simulate(s));
  EXPECT_EQ(a.chromeTrace(), b.chromeTrace());
}

TEST_F(SimulatorIR, OpGraphJsonRoundTrip) {
  OpGraph g = graphOfFile("docs/examples/mlp.mlir");
  std::string text = g.toJSON();
  std::string error;
  std::optional<OpGraph> back = OpGraph::fromJSON(text, error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(back->toJSON(), text);
  // The simulator sees the same model.
  Machine machine = loadMachine("p100-4x4", 4);
  CostModel cost(machine);
  Simulator a(g, cost), b(*back, cost);
  Strategy s = owtStrategy(g, 4);
  EXPECT_TRUE(a.simulate(s) == b.simulate(s));
}

// A max that also yields its index: split along its reduction loop, its
// partial results could not be combined, so the partitioner runs it whole
// on every device, and the simulator places it so (the flag survives the
// graph's JSON); a plain max keeps its split.
TEST_F(SimulatorIR, UncombinablePartialsRunWhole) {
  OpGraph g = graphOf(R"mlir(
#map = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>
func.func @f(%x: tensor<4x8xf32>, %m: tensor<4x1xf32>, %i: tensor<4x1xi64>)
    -> (tensor<4x1xf32>, tensor<4x1xi64>, tensor<4x1xf32>) {
  %r:2 = linalg.generic {indexing_maps = [#map, #row, #row],
                         iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%m, %i : tensor<4x1xf32>, tensor<4x1xi64>) {
  ^bb0(%a: f32, %mx: f32, %ix: i64):
    %j = linalg.index 1 : index
    %jj = arith.index_cast %j : index to i64
    %y = arith.maximumf %a, %mx : f32
    %gt = arith.cmpf ogt, %a, %mx : f32
    %k = arith.select %gt, %jj, %ix : i64
    linalg.yield %y, %k : f32, i64
  } -> (tensor<4x1xf32>, tensor<4x1xi64>)
  %p = linalg.generic {indexing_maps = [#map, #row],
                       iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%m : tensor<4x1xf32>) {
  ^bb0(%a: f32, %mx: f32):
    %y = arith.maximumf %a, %mx : f32
    linalg.yield %y : f32
  } -> tensor<4x1xf32>
  return %r#0, %r#1, %p : tensor<4x1xf32>, tensor<4x1xi64>, tensor<4x1xf32>
}
)mlir");
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_TRUE(g.nodes[0].partialsUncombinable);
  EXPECT_FALSE(g.nodes[1].partialsUncombinable);
  EXPECT_TRUE(g.nodes[1].completesPartials);
  std::string error;
  std::optional<OpGraph> back = OpGraph::fromJSON(g.toJSON(), error);
  ASSERT_TRUE(back) << error;
  EXPECT_TRUE(back->nodes[0].partialsUncombinable);

  Machine machine = loadMachine("p100-4x4", 2);
  CostModel cost(machine);
  SimOptions inference{false};
  Strategy split = dataParallelStrategy(g, 2);
  ParallelConfig reduction{{1, 2}, {0, 1}};
  split.configs[0] = split.configs[1] = reduction;
  Strategy whole = split;
  whole.configs[0] = ParallelConfig{}; // replicated
  Simulator a(g, cost, inference), b(g, cost, inference);
  // The split max+index runs as the replicated one does; the plain max
  // keeps its split (its halves combined where it runs).
  EXPECT_TRUE(a.simulate(split) == b.simulate(whole));
}

// A weight read on two devices (model parallelism): the gradient of the
// second reader moves to the first's device, where the first reader's
// product accumulates into it (the training step's beta = 1), the update
// runs and the weight stays; the next step sends it to the second reader.
// No all-reduce, and no update on the second reader's device.
TEST_F(SimulatorIR, AParameterReadOnTwoDevicesLivesWhereItsFirstReaderIs) {
  OpGraph g = graphOf(R"mlir(
    func.func @f(%x: tensor<8x16xf32>, %w: tensor<16x16xf32> {soap.param},
                 %o: tensor<8x16xf32>) -> tensor<8x16xf32> {
      %y = linalg.matmul ins(%x, %w : tensor<8x16xf32>, tensor<16x16xf32>) outs(%o : tensor<8x16xf32>) -> tensor<8x16xf32>
      %m = linalg.matmul ins(%y, %w : tensor<8x16xf32>, tensor<16x16xf32>) outs(%o : tensor<8x16xf32>) -> tensor<8x16xf32>
      return %m : tensor<8x16xf32>
    })mlir");
  ASSERT_EQ(g.nodes.size(), 2u);
  Machine machine = loadMachine("p100-4x4", 2);
  CostModel cost(machine);
  Simulator sim(g, cost, SimOptions{/*training=*/true});
  Strategy s;
  s.numDevices = 2;
  ParallelConfig first{{1, 1, 1}, {0}}, second{{1, 1, 1}, {1}};
  s.configs = {first, second};
  SimReport owned = sim.simulate(s);
  std::vector<std::string> steps;
  for (const CommStep &step : sim.communication())
    steps.push_back(step.kind + " " + std::to_string(step.group[0]) + "->" +
                    std::to_string(step.group[1]) + " " +
                    std::to_string(step.bytes) + " " + step.what);
  std::sort(steps.begin(), steps.end());
  EXPECT_EQ(steps, (std::vector<std::string>{
                       "send 0->1 1024 parameter 'arg1' to its readers",
                       "send 0->1 512 forward edge linalg.matmul (-:4:12) -> "
                       "linalg.matmul (-:5:12)",
                       "send 1->0 1024 gradient of parameter 'arg1'",
                       "send 1->0 512 gradient edge linalg.matmul (-:5:12) -> "
                       "linalg.matmul (-:4:12)"}))
      << ::testing::PrintToString(steps);
  // Incremental changes agree with simulating from scratch.
  Simulator full(g, cost, SimOptions{/*training=*/true});
  s.configs = {second, second};
  EXPECT_TRUE(sim.simulateDelta(0, second) == full.simulate(s));
  EXPECT_TRUE(sim.communication().empty());
  s.configs = {first, second};
  EXPECT_TRUE(sim.simulateDelta(0, first) == full.simulate(s));
  EXPECT_TRUE(sim.undo());
  s.configs = {second, first};
  SimReport swapped = full.simulate(s);
  EXPECT_TRUE(sim.simulateDelta(1, first) == swapped);
}

// A pad whose tasks' parts of its source differ in shape (4 blocks of 2
// columns of 8, padded by one on each side: parts of 1, 2, 2 and 1
// columns), a config the partitioner does not follow: each device pads the
// block its producer holds when the producer splits only unpadded
// dimensions (nothing moves), else the pad runs whole everywhere (its
// source gathered). A change of the producer alone re-places the pad, and
// incremental changes agree with simulating from scratch.
TEST_F(SimulatorIR, APadThePartitionerCannotCutFollowsItsProducer) {
  OpGraph g = graphOf(R"mlir(
    #map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
    func.func @f(%x: tensor<4x4x6x6xf32> {soap.param}, %o: tensor<4x4x8x8xf32>) -> tensor<4x4x8x8xf32> {
      %zero = arith.constant 0.0 : f32
      %e = tensor.empty() : tensor<4x4x6x6xf32>
      %h = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
          ins(%x : tensor<4x4x6x6xf32>) outs(%e : tensor<4x4x6x6xf32>) {
      ^bb0(%a: f32, %b: f32):
        %y = arith.mulf %a, %a : f32
        linalg.yield %y : f32
      } -> tensor<4x4x6x6xf32>
      %p = tensor.pad %h low[0, 0, 1, 1] high[0, 0, 1, 1] {
      ^bb0(%i: index, %j: index, %k: index, %l: index):
        tensor.yield %zero : f32
      } : tensor<4x4x6x6xf32> to tensor<4x4x8x8xf32>
      %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
          ins(%p : tensor<4x4x8x8xf32>) outs(%o : tensor<4x4x8x8xf32>) {
      ^bb0(%a: f32, %b: f32):
        %y = arith.mulf %a, %a : f32
        linalg.yield %y : f32
      } -> tensor<4x4x8x8xf32>
      return %r : tensor<4x4x8x8xf32>
    })mlir");
  ASSERT_EQ(g.nodes.size(), 3u);
  ASSERT_EQ(g.nodes[1].opName, "tensor.pad");
  Machine machine = loadMachine("p100-4x4", 2);
  CostModel cost(machine);
  Simulator sim(g, cost, SimOptions{/*training=*/true});
  ParallelConfig channels{{1, 2, 1, 1}, {0, 1}}, rows{{1, 1, 2, 1}, {0, 1}};
  ParallelConfig columns{{1, 1, 1, 4}, {0, 1, 0, 1}};
  Strategy s;
  s.numDevices = 2;
  s.configs = {channels, columns, channels};
  sim.simulate(s);
  auto padSteps = [&] {
    std::vector<std::string> steps;
    for (const CommStep &step : sim.communication())
      if (step.what.find("tensor.pad") != std::string::npos)
        steps.push_back(step.kind + " " + std::to_string(step.bytes));
    std::sort(steps.begin(), steps.end());
    return steps;
  };
  EXPECT_TRUE(padSteps().empty()) << ::testing::PrintToString(padSteps());
  // The producer splits the rows, which the pad pads: the pad runs whole
  // on both devices, its source gathered there, and so is its gradient
  // (the interior of the reader's).
  Simulator full(g, cost, SimOptions{/*training=*/true});
  s.configs = {rows, columns, channels};
  EXPECT_TRUE(sim.simulateDelta(0, rows) == full.simulate(s));
  EXPECT_EQ(padSteps(),
            (std::vector<std::string>{"all_gather 2304", "all_gather 2304"}));
  s.configs = {channels, columns, channels};
  EXPECT_TRUE(sim.simulateDelta(0, channels) == full.simulate(s));
  EXPECT_TRUE(padSteps().empty());
}

// A tensor read by three ops: the backward adds each earlier reader's
// gradient to the sum so far, except a matmul's (it accumulates in place);
// the last reader's gradient starts the sum.
TEST_F(SimulatorIR, GradientSumsOfATensorWithSeveralReaders) {
  OpGraph g = graphOf(R"mlir(
    #id = affine_map<(d0, d1) -> (d0, d1)>
    func.func @f(%x: tensor<8x16xf32>, %w: tensor<16x16xf32> {soap.param},
                 %o: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) {
      %y = linalg.matmul ins(%x, %w : tensor<8x16xf32>, tensor<16x16xf32>) outs(%o : tensor<8x16xf32>) -> tensor<8x16xf32>
      %m = linalg.matmul ins(%y, %w : tensor<8x16xf32>, tensor<16x16xf32>) outs(%o : tensor<8x16xf32>) -> tensor<8x16xf32>
      %t = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
          ins(%y : tensor<8x16xf32>) outs(%o : tensor<8x16xf32>) {
      ^bb0(%a: f32, %b: f32):
        %r = arith.mulf %a, %a : f32
        linalg.yield %r : f32
      } -> tensor<8x16xf32>
      %e = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
          ins(%y : tensor<8x16xf32>) outs(%o : tensor<8x16xf32>) {
      ^bb0(%a: f32, %b: f32):
        %r = arith.addf %a, %a : f32
        linalg.yield %r : f32
      } -> tensor<8x16xf32>
      return %m, %t, %e : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>
    })mlir");
  ASSERT_EQ(g.nodes.size(), 4u);
  EXPECT_TRUE(g.nodes[0].accumulatedReads.empty());
  EXPECT_TRUE(g.nodes[1].accumulatedReads.empty()); // a matmul: in place
  EXPECT_EQ(g.nodes[2].accumulatedReads, std::vector<int>{0});
  EXPECT_TRUE(g.nodes[3].accumulatedReads.empty()); // the last reader

  Machine machine = loadMachine("p100-4x4", 4);
  CostModel cost(machine);
  OpGraph without = g;
  without.nodes[2].accumulatedReads.clear();
  // A task of half the batch adds half of y.
  std::vector<int64_t> half = {4, 16};
  EXPECT_DOUBLE_EQ(cost.backwardTime(g, 2, half, 0),
                   cost.backwardTime(without, 2, half, 0) +
                       cost.accumulateTime(4 * 16 * 4, 0));
  // With a profile, the add costs what the measured SGD update of as many
  // elements costs.
  ProfileDatabase db;
  db.record(ProfileDatabase::updateKey("sgd", 64, machine.deviceType().name),
            {3e-6, 0});
  CostModel profiled(machine, &db);
  EXPECT_DOUBLE_EQ(profiled.accumulateTime(64 * 4, 0), 3e-6);

  // A measured backward time adds the sums, unless it includes them
  // (soap-profile --program times the program's adds among the op's
  // backward kernels); the flag survives the database's JSON.
  std::string key = ProfileDatabase::key(g, 2, half, machine.deviceType().name);
  db.record(key, {1e-6, 5e-6});
  EXPECT_DOUBLE_EQ(profiled.backwardTime(g, 2, half, 0),
                   5e-6 + profiled.accumulateTime(4 * 16 * 4, 0));
  ProfileDatabase::Entry program{1e-6, 5e-6};
  program.includesGradientSums = true;
  db.record(key, program);
  std::string error;
  std::optional<ProfileDatabase> reloaded =
      ProfileDatabase::fromJSON(db.toJSON(), error);
  ASSERT_TRUE(reloaded) << error;
  CostModel fromProgram(machine, &*reloaded);
  EXPECT_DOUBLE_EQ(fromProgram.backwardTime(g, 2, half, 0), 5e-6);
}

TEST(OpGraphJson, ErrorsNameTheField) {
  std::string error;
  EXPECT_FALSE(OpGraph::fromJSON("{", error));
  EXPECT_EQ(error, "not valid JSON");
  EXPECT_FALSE(
      OpGraph::fromJSON(R"({"tensors": [], "nodes": [{"op": "x"}]})", error));
  EXPECT_EQ(error, "'nodes[0].class' is missing");
  EXPECT_FALSE(OpGraph::fromJSON(
      R"({"tensors": [{"name": "t", "shape": [4], "element_bytes": 4,
                       "producer": 3}], "nodes": []})",
      error));
  EXPECT_EQ(error, "tensor 0 ('t') has producer 3 out of range");
}

// A pad of the step's input runs whole on every device whatever its config
// says, as the partitioner runs views of values every device holds whole:
// a convolution that splits its rows reads its window there, and nothing
// moves. A pad of a computed (batch-split) value follows its config, and
// the rows the convolution reads move.
TEST_F(SimulatorIR, ViewsOfInputsRunWholeEverywhere) {
  OpGraph g = graphOf(R"mlir(
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @f(%x: tensor<4x3x8x8xf32>, %w: tensor<4x3x3x3xf32>)
    -> (tensor<4x4x8x8xf32>, tensor<4x4x8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<4x3x8x8xf32> to tensor<4x3x10x10xf32>
  %e = tensor.empty() : tensor<4x4x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4x8x8xf32>) -> tensor<4x4x8x8xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%p, %w : tensor<4x3x10x10xf32>, tensor<4x3x3x3xf32>) outs(%f : tensor<4x4x8x8xf32>) -> tensor<4x4x8x8xf32>
  %e1 = tensor.empty() : tensor<4x3x8x8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<4x3x8x8xf32>) outs(%e1 : tensor<4x3x8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<4x3x8x8xf32>
  %q = tensor.pad %r low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<4x3x8x8xf32> to tensor<4x3x10x10xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4x8x8xf32>) -> tensor<4x4x8x8xf32>
  %z = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%q, %w : tensor<4x3x10x10xf32>, tensor<4x3x3x3xf32>) outs(%f2 : tensor<4x4x8x8xf32>) -> tensor<4x4x8x8xf32>
  return %y, %z : tensor<4x4x8x8xf32>, tensor<4x4x8x8xf32>
}
)mlir");
  int pad = nodeOf(g, "tensor.pad"),
      conv = nodeOf(g, "linalg.conv_2d_nchw_fchw");
  int pad2 = nodeOf(g, "tensor.pad", 1),
      conv2 = nodeOf(g, "linalg.conv_2d_nchw_fchw", 1);
  ASSERT_GE(pad, 0);
  ASSERT_GE(conv2, 0);
  Machine machine = loadMachine("p100-4x4", 2);
  CostModel cost(machine);
  Simulator sim(g, cost, SimOptions{/*training=*/false});
  Strategy s = dataParallelStrategy(g, 2);
  // The convolutions split their output rows (n, f, oh, ow, c, kh, kw).
  for (int c : {conv, conv2}) {
    s.configs[c].degrees = {1, 1, 2, 1, 1, 1, 1};
    s.configs[c].devices = {0, 1};
  }
  ASSERT_EQ(s.configs[pad].degrees, (std::vector<int64_t>{2, 1, 1, 1}));
  ASSERT_EQ(s.configs[pad2].degrees, (std::vector<int64_t>{2, 1, 1, 1}));
  sim.simulate(s);
  std::vector<CommStep> steps = sim.communication();
  for (const CommStep &step : steps)
    EXPECT_EQ(step.what.find("(" + g.nodes[pad].location + ")"),
              std::string::npos)
        << step.kind << " " << step.what;
  bool padMoves = false;
  for (const CommStep &step : steps)
    padMoves |= step.what.find(g.nodes[pad2].location) != std::string::npos;
  EXPECT_TRUE(padMoves) << "the pad of a computed value follows its config";
}

} // namespace

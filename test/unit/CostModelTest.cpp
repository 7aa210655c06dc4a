//===- CostModelTest.cpp - the cost model and the profile database -------===//
//
// Op shards the profile did not measure, scaled from one it did; updates
// and collectives priced as training steps ran them; the optimizer update
// interpolated between measured sizes.
//
//===----------------------------------------------------------------------===//

#include "soap/cost/CostModel.h"
#include "soap/graph/Strategy.h"
#include "soap/machine/Machine.h"
#include "soap/search/Strategies.h"
#include "soap/sim/Simulator.h"

#include "SimulatorChecks.h"
#include "SimulatorIR.h"
#include "TestMachines.h"

#include <gtest/gtest.h>

using namespace soap;

namespace {

using test::loadMachine;
using test::SimulatorIR;

/// The first node of `g` that is an `opName` op, or -1.
int firstNodeOf(const OpGraph &g, const std::string &opName) {
  for (size_t n = 0; n < g.nodes.size(); ++n)
    if (g.nodes[n].opName == opName)
      return static_cast<int>(n);
  return -1;
}

// A shard the profile has no entry for takes the entry of another shard of
// the same op, scaled by the two shards' roofline ratio: the same number of
// tasks split along another loop first (the nearest in work), else the
// whole op; only an op with no measured shard gets the roofline.
TEST_F(SimulatorIR, MissingShardsScaleAMeasuredShardOfTheirOp) {
  OpGraph g = graphOfFile("docs/examples/mlp.mlir");
  int matmul = firstNodeOf(g, "linalg.matmul");
  ASSERT_GE(matmul, 0);
  const OpNode &node = g.nodes[matmul];
  ASSERT_EQ(node.loopSizes, (std::vector<int64_t>{64, 256, 784}));
  Machine machine = loadMachine("cpu-local", 2);
  const std::string kind = machine.deviceType().name;
  CostModel roofline(machine);
  std::vector<int64_t> whole = node.loopSizes, byBatch = {32, 256, 784},
                       byColumn = {64, 128, 784}, byFour = {16, 256, 784};
  ProfileDatabase db;
  db.record(ProfileDatabase::key(g, matmul, whole, kind), {8e-4, 2e-3});
  CostModel cost(machine, &db);
  auto scaledFrom = [&](const std::vector<int64_t> &from,
                        const std::vector<int64_t> &to) {
    return roofline.forwardTime(g, matmul, to, 0) /
           roofline.forwardTime(g, matmul, from, 0);
  };
  // From the whole op alone.
  EXPECT_DOUBLE_EQ(cost.forwardTime(g, matmul, byColumn, 0),
                   8e-4 * scaledFrom(whole, byColumn));
  EXPECT_DOUBLE_EQ(cost.forwardTime(g, matmul, byFour, 0),
                   8e-4 * scaledFrom(whole, byFour));
  // The batch-split shard (data parallelism's) is nearer a column split of
  // the same degree than the whole op is; the backward scales alike.
  db.record(ProfileDatabase::key(g, matmul, byBatch, kind), {5e-4, 1e-3});
  CostModel withBatch(machine, &db);
  EXPECT_DOUBLE_EQ(withBatch.forwardTime(g, matmul, byColumn, 0),
                   5e-4 * scaledFrom(byBatch, byColumn));
  EXPECT_DOUBLE_EQ(withBatch.backwardTime(g, matmul, byColumn, 0),
                   1e-3 * scaledFrom(byBatch, byColumn));
  EXPECT_DOUBLE_EQ(withBatch.forwardTime(g, matmul, byBatch, 0), 5e-4);
  // Coverage counts the scaled shard apart; an op without any measured
  // shard stays with the roofline.
  std::vector<ParallelConfig> configs(g.nodes.size());
  for (size_t n = 0; n < g.nodes.size(); ++n)
    configs[n] = ParallelConfig{
        std::vector<int64_t>(g.nodes[n].loopSizes.size(), 1), {0}};
  configs[matmul] = ParallelConfig{{1, 2, 1}, {0, 1}};
  ProfileCoverage coverage = profileCoverage(g, configs, db, kind);
  EXPECT_EQ(coverage.measured, 0);
  EXPECT_EQ(coverage.scaled, 1);
  EXPECT_GT(coverage.roofline, 0);
  EXPECT_EQ(coverage.rooflineByOp.count("linalg.matmul"), 1u);
}

// A shard that a program on as many ranks as the machine has devices ran
// (its "on xN" entry: a whole op under model parallelism, which the
// one-device program measured first) is priced by that entry; a machine of
// one device, or of another count, takes the plain entry.
TEST_F(SimulatorIR, ShardsRunOnAsManyRanksPriceTheirMachine) {
  OpGraph g = graphOfFile("docs/examples/mlp.mlir");
  int matmul = firstNodeOf(g, "linalg.matmul");
  ASSERT_GE(matmul, 0);
  std::vector<int64_t> whole = g.nodes[matmul].loopSizes;
  Machine one = loadMachine("cpu-local", 1), two = loadMachine("cpu-local", 2);
  const std::string kind = two.deviceType().name;
  std::string key = ProfileDatabase::key(g, matmul, whole, kind);
  ProfileDatabase db;
  db.record(key, {8e-4, 2e-3});
  db.record(ProfileDatabase::onRanksKey(key, 2), {9e-4, 2.5e-3});
  EXPECT_EQ(ProfileDatabase::onRanksKey(key, 2), key + " on x2");
  EXPECT_DOUBLE_EQ(CostModel(one, &db).forwardTime(g, matmul, whole, 0), 8e-4);
  EXPECT_DOUBLE_EQ(CostModel(two, &db).forwardTime(g, matmul, whole, 0), 9e-4);
  EXPECT_DOUBLE_EQ(CostModel(two, &db).backwardTime(g, matmul, whole, 1),
                   2.5e-3);
  ProfileDatabase onFour;
  onFour.record(key, {8e-4, 2e-3});
  onFour.record(ProfileDatabase::onRanksKey(key, 4), {9e-4, 2.5e-3});
  EXPECT_DOUBLE_EQ(CostModel(two, &onFour).forwardTime(g, matmul, whole, 0),
                   8e-4);
  // The ranks a step ran an entry's kernels on survive the JSON; a count
  // that is no positive integer is refused by name.
  ProfileDatabase::Entry onTwo{9e-4, 2.5e-3};
  onTwo.ranks = 2;
  db.record(ProfileDatabase::onRanksKey(key, 2), onTwo);
  std::string error;
  std::optional<ProfileDatabase> back =
      ProfileDatabase::fromJSON(db.toJSON(), error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(back->lookup(ProfileDatabase::onRanksKey(key, 2))->ranks, 2);
  EXPECT_EQ(back->lookup(key)->ranks, 1);
  EXPECT_FALSE(ProfileDatabase::fromJSON(
      R"({"entries": [{"key": "k", "forward_s": 1, "backward_s": 1, "ranks": 0}]})",
      error));
  EXPECT_NE(error.find("'entries[0].ranks' must be a positive number of ranks"),
            std::string::npos)
      << error;
  // Coverage counts it measured.
  std::vector<ParallelConfig> configs(g.nodes.size());
  for (size_t n = 0; n < g.nodes.size(); ++n)
    configs[n] = ParallelConfig{
        std::vector<int64_t>(g.nodes[n].loopSizes.size(), 1), {0}};
  EXPECT_EQ(profileCoverage(g, configs, db, kind).measured, 1);
}

// Updates and collectives that soap-profile --run timed in training steps
// price the simulator's: an update after an all-reduce over 2 devices from
// those timed after one (data parallelism's), an update without one from
// those timed without, and a collective at the ratio of the step's times
// of that kind to the machine's at the measured sizes.
TEST_F(SimulatorIR, InStepUpdatesAndCollectivesPriceTheStep) {
  OpGraph g = graphOfFile("docs/examples/mlp.mlir");
  Machine machine = loadMachine("cpu-local", 2);
  const std::string kind = machine.deviceType().name;
  ProfileDatabase alone;
  alone.record(ProfileDatabase::updateKey("sgd", 1000, kind), {1e-6, 0});
  ProfileDatabase synced = alone;
  synced.record(ProfileDatabase::updateKey("sgd", 1000, kind, 2), {1e-3, 0});
  ProfileDatabase local = alone;
  local.record(ProfileDatabase::updateKey("sgd", 1000, kind, 1), {1e-3, 0});
  CostModel aloneCost(machine, &alone), syncedCost(machine, &synced),
      localCost(machine, &local);
  EXPECT_DOUBLE_EQ(syncedCost.updateTime(4 * 1000, 0, 2), 1e-3);
  EXPECT_DOUBLE_EQ(syncedCost.updateTime(4 * 3000, 0, 2), 3e-3);
  EXPECT_DOUBLE_EQ(syncedCost.updateTime(4 * 1000, 0, 1), 1e-6);
  EXPECT_DOUBLE_EQ(localCost.updateTime(4 * 1000, 0, 1), 1e-3);

  // Data parallelism updates every parameter after an all-reduce; one
  // device updates them without.
  Strategy dp = dataParallelStrategy(g, 2);
  Strategy one = dataParallelStrategy(g, 1);
  double aloneDp = Simulator(g, aloneCost).simulate(dp).stepTime;
  double syncedDp = Simulator(g, syncedCost).simulate(dp).stepTime;
  double localDp = Simulator(g, localCost).simulate(dp).stepTime;
  EXPECT_DOUBLE_EQ(localDp, aloneDp);
  // Every update of the 4 parameters takes at least 1 ms now.
  EXPECT_GE(syncedDp, aloneDp + 4 * (1e-3 - 1e-6));
  Machine single = loadMachine("cpu-local", 1);
  CostModel singleSynced(single, &synced), singleLocal(single, &local),
      singleAlone(single, &alone);
  EXPECT_DOUBLE_EQ(Simulator(g, singleSynced).simulate(one).stepTime,
                   Simulator(g, singleAlone).simulate(one).stepTime);
  EXPECT_GE(Simulator(g, singleLocal).simulate(one).stepTime,
            Simulator(g, singleAlone).simulate(one).stepTime + 4 * 9e-4);

  // All-reduces: 2x the machine at 1 KB, 4x at 100 KB; between them the
  // ratio follows log bytes, beyond them the nearest's.
  std::vector<int> pair = {0, 1};
  auto machineTime = [&](CollectiveKind k, int64_t bytes) {
    return machine.collectiveCost(k, bytes, pair).time;
  };
  const CollectiveKind allReduce = CollectiveKind::AllReduce;
  ProfileDatabase slow = alone;
  slow.record(ProfileDatabase::collectiveKey(allReduce, 1000, kind, 2),
              {2 * machineTime(allReduce, 1000), 0});
  slow.record(ProfileDatabase::collectiveKey(allReduce, 100000, kind, 2),
              {4 * machineTime(allReduce, 100000), 0});
  CostModel slowCost(machine, &slow);
  EXPECT_DOUBLE_EQ(slowCost.collectiveTime(allReduce, 1000, pair),
                   2 * machineTime(allReduce, 1000));
  EXPECT_NEAR(slowCost.collectiveTime(allReduce, 10000, pair),
              3 * machineTime(allReduce, 10000), 1e-12);
  EXPECT_NEAR(slowCost.collectiveTime(allReduce, 10, pair),
              2 * machineTime(allReduce, 10), 1e-12);
  EXPECT_NEAR(slowCost.collectiveTime(allReduce, 1 << 24, pair),
              4 * machineTime(allReduce, 1 << 24), 1e-12);
  EXPECT_DOUBLE_EQ(aloneCost.collectiveTime(allReduce, 1 << 24, pair),
                   machineTime(allReduce, 1 << 24));
  EXPECT_GT(Simulator(g, slowCost).simulate(dp).stepTime, aloneDp);

  // Each kind of collective from its own in-step times: reduce-scatters
  // timed at 3x the machine's leave all-gathers and all-reduces alone.
  const CollectiveKind reduceScatter = CollectiveKind::ReduceScatter;
  ProfileDatabase scatters = alone;
  scatters.record(ProfileDatabase::collectiveKey(reduceScatter, 4096, kind, 2),
                  {3 * machineTime(reduceScatter, 4096), 0});
  // Another device kind's and malformed keys are not this curve's.
  scatters.record(
      ProfileDatabase::collectiveKey(reduceScatter, 4096, "other-core", 2),
      {1.0, 0});
  scatters.record("soap.reduce_scatter [x] " + kind + " in-step x2", {1.0, 0});
  scatters.record("soap.reduce_scatter [8] " + kind + " in-step x2y", {1.0, 0});
  CostModel scatterCost(machine, &scatters);
  EXPECT_NEAR(scatterCost.collectiveTime(reduceScatter, 1 << 20, pair),
              3 * machineTime(reduceScatter, 1 << 20), 1e-12);
  for (CollectiveKind other :
       {allReduce, CollectiveKind::AllGather, CollectiveKind::AllToAll})
    EXPECT_DOUBLE_EQ(scatterCost.collectiveTime(other, 1 << 20, pair),
                     machineTime(other, 1 << 20));
  // Nor groups of another size.
  Machine four = loadMachine("p100-4x4", 4);
  ProfileDatabase pairs;
  pairs.record(ProfileDatabase::collectiveKey(reduceScatter, 4096,
                                              four.deviceType().name, 2),
               {3 * four.collectiveCost(reduceScatter, 4096, pair).time, 0});
  CostModel fourCost(four, &pairs);
  std::vector<int> quad = {0, 1, 2, 3};
  EXPECT_DOUBLE_EQ(fourCost.collectiveTime(reduceScatter, 1 << 20, quad),
                   four.collectiveCost(reduceScatter, 1 << 20, quad).time);
  EXPECT_NEAR(fourCost.collectiveTime(reduceScatter, 1 << 20, pair),
              3 * four.collectiveCost(reduceScatter, 1 << 20, pair).time,
              1e-12);

  // The keys survive the database's JSON.
  std::string error;
  std::optional<ProfileDatabase> reloaded =
      ProfileDatabase::fromJSON(slow.toJSON(), error);
  ASSERT_TRUE(reloaded) << error;
  auto curves = reloaded->collectiveCurves(allReduce, kind);
  ASSERT_EQ(curves.size(), 1u);
  EXPECT_EQ(curves[2].size(), 2u);
  EXPECT_TRUE(reloaded->collectiveCurves(reduceScatter, kind).empty());
  auto scatterCurves = scatters.collectiveCurves(reduceScatter, kind);
  ASSERT_EQ(scatterCurves.size(), 1u);
  EXPECT_EQ(scatterCurves[2].size(), 1u);
}

// A weight that a transpose reads (torch-mlir's linear layers: x * w^T):
// the lowering moves the transpose of its gradient ahead of the
// all-reduce, so the update reads what the all-reduce made, and the
// simulator prices it as soap-profile timed such updates (after an
// all-reduce over the devices), through the transpose's backward task. A
// change of the product's config (whether it leaves partial sums) changes
// that price: delta simulations agree with full ones.
TEST_F(SimulatorIR, AnUpdateAfterATransposeOfAnAllReducedGradient) {
  OpGraph g = graphOf(R"mlir(
func.func @linear(%x: tensor<8x16xf32>, %w: tensor<32x16xf32> {soap.param})
    -> tensor<8x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x32xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(i, j) -> (j, i)>,
                                        affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<32x16xf32>) outs(%e : tensor<16x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<16x32xf32>
  %o = tensor.empty() : tensor<8x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%o : tensor<8x32xf32>) -> tensor<8x32xf32>
  %y = linalg.matmul ins(%x, %t : tensor<8x16xf32>, tensor<16x32xf32>)
                     outs(%f : tensor<8x32xf32>) -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}
)mlir");
  Machine machine = loadMachine("cpu-local", 2);
  const std::string kind = machine.deviceType().name;
  ProfileDatabase db;
  db.record(ProfileDatabase::updateKey("sgd", 512, kind, 1), {1e-6, 0});
  db.record(ProfileDatabase::updateKey("sgd", 512, kind, 2), {1e-3, 0});
  CostModel cost(machine, &db);
  // Data parallelism: each device's product leaves partial sums of the
  // weight's gradient, all-reduced, then transposed back: the update
  // after an all-reduce over 2 devices.
  double dp = Simulator(g, cost).simulate(dataParallelStrategy(g, 2)).stepTime;
  EXPECT_GE(dp, 1e-3);
  // The product split along the weight's rows: each device holds its
  // rows' complete gradient, and nothing all-reduces it.
  Strategy rows = dataParallelStrategy(g, 2);
  int product = static_cast<int>(g.nodes.size()) - 1;
  ASSERT_EQ(g.nodes[product].opName, "linalg.matmul");
  rows.configs[product] = ParallelConfig{{1, 2, 1}, {0, 1}};
  ASSERT_FALSE(rows.validate(g)) << *rows.validate(g);
  SimReport full = Simulator(g, cost).simulate(rows);
  EXPECT_LT(full.stepTime, 1e-3);
  // The product's change alone reprices the update.
  Simulator delta(g, cost);
  delta.simulate(dataParallelStrategy(g, 2));
  SimReport changed = delta.simulateDelta(product, rows.configs[product]);
  EXPECT_TRUE(changed == full)
      << changed.stepTime << " s, " << full.stepTime << " s from scratch";
  test::checkDeltaEqualsFull(g, machine, 300, 5, true, &db);
}

// The optimizer update from soap-profile's measured sizes: linear between
// two measured element counts, the smallest size's time below them, the
// largest size's time per element above them, the roofline without any.
TEST(CostModel, UpdateTimeInterpolatesMeasuredSizes) {
  Machine machine = test::loadMachine("cpu-local", 2);
  const std::string kind = machine.deviceType().name;
  ProfileDatabase db;
  db.record(ProfileDatabase::updateKey("momentum", 1000, kind), {2e-6, 0});
  db.record(ProfileDatabase::updateKey("momentum", 3000, kind), {4e-6, 0});
  db.record(ProfileDatabase::updateKey("sgd", 1000, kind), {1.0, 0});
  CostModel cost(machine, &db, Optimizer::Momentum);
  EXPECT_DOUBLE_EQ(cost.updateTime(4 * 2000, 0), 3e-6);
  EXPECT_DOUBLE_EQ(cost.updateTime(4 * 10, 0), 2e-6);
  EXPECT_DOUBLE_EQ(cost.updateTime(4 * 6000, 0), 8e-6);
  CostModel adam(machine, &db, Optimizer::Adam);
  CostModel roofline(machine, nullptr, Optimizer::Adam);
  EXPECT_DOUBLE_EQ(adam.updateTime(4 * 2000, 0),
                   roofline.updateTime(4 * 2000, 0));
}

} // namespace

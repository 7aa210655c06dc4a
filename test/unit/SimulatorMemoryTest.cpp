//===- SimulatorMemoryTest.cpp - the simulator's memory from liveness -----===//
//
// Memory of a data-parallel MLP, the timeline's points and peaks, a
// collective's result kept for the backward pass, and copies the CPU
// lowering folds into products (and what they cost where it cannot).
//
//===----------------------------------------------------------------------===//

#include "soap/machine/Machine.h"
#include "soap/search/Strategies.h"
#include "soap/sim/Simulator.h"

#include "SimulatorIR.h"
#include "TestMachines.h"

#include <gtest/gtest.h>

using namespace soap;

namespace {

using test::loadMachine;
using test::SimulatorIR;

TEST_F(SimulatorIR, DataParallelMemory) {
  OpGraph g = graphOfFile("docs/examples/mlp.mlir");
  Machine machine = loadMachine("p100-4x4", 4);
  CostModel cost(machine); // SGD: no optimizer state
  Simulator sim(g, cost);
  SimReport r = sim.simulate(dataParallelStrategy(g, 4));
  // Every rank holds the parameters twice (the step's arguments and
  // results) and the inputs whole (x: 64x784, labels: 64x10), the step's
  // argument types; the gradients, all-reduced at the updates, are all
  // alive when the backward pass ends.
  int64_t params = g.parameterBytes();
  int64_t inputs = (64 * 784 + 64 * 10) * 4;
  ASSERT_EQ(r.devicePeakMemory.size(), 4u);
  for (int64_t bytes : r.devicePeakMemory) {
    EXPECT_GE(bytes, 3 * params + inputs);
    // Each all-reduce writes into its gradient's buffer (no result buffer
    // on top); at most the batch-split outputs of every op (a quarter of 64
    // rows of at most 256 floats each, 22 ops) besides.
    EXPECT_LE(bytes, 3 * params + inputs + 22 * 16 * 256 * 4);
  }
  EXPECT_EQ(r.devicePeakMemory[0], r.devicePeakMemory[3]);
}

// The timeline: a point per op's forward and backward work and one for
// the updates; its largest sums are the report's peaks; buffers are freed
// after their last use, so a forward pass holds less than all of its
// outputs at once, and a training step more than its state.
TEST_F(SimulatorIR, MemoryTimelineFromLiveness) {
  OpGraph g = graphOfFile("docs/examples/mlp.mlir");
  Machine machine = loadMachine("p100-4x4", 2);
  CostModel cost(machine);
  for (bool training : {true, false}) {
    SCOPED_TRACE(training ? "training" : "forward");
    Simulator sim(g, cost, SimOptions{training});
    SimReport r = sim.simulate(dataParallelStrategy(g, 2));
    std::vector<MemoryPoint> timeline = sim.memoryTimeline();
    ASSERT_EQ(timeline.size(), 2 * g.nodes.size() + 1);
    EXPECT_EQ(timeline.back().what, "updates");
    EXPECT_EQ(timeline.front().what.rfind("forward ", 0), 0u);
    for (int d = 0; d < 2; ++d) {
      int64_t peak = 0;
      for (const MemoryPoint &point : timeline) {
        ASSERT_EQ(point.bytes.size(), 2u);
        EXPECT_GT(point.bytes[d], 0);
        peak = std::max(peak, point.bytes[d]);
      }
      EXPECT_EQ(peak, r.devicePeakMemory[d]);
    }
    int64_t state = 0, outputs = 0;
    for (const GraphTensor &t : g.tensors)
      if (t.producer < 0)
        state += t.bytes();
      else
        outputs += t.bytes() / 2; // split along the batch, or smaller
    if (training)
      EXPECT_GT(r.devicePeakMemory[0], 2 * g.parameterBytes());
    else
      EXPECT_LT(r.devicePeakMemory[0], state + outputs);
  }
}

// A reader that gets its operand through a collective keeps the
// collective's result for its backward work (the partitioned program's
// backward ops read it again), and the producer's block serves the
// collective alone: h = x w1 split by columns, all-gathered whole for
// y = h w2 (split by columns too), whose weight gradient reads h again.
TEST_F(SimulatorIR, GatheredOperandKeptForBackwardInsteadOfItsBlock) {
  OpGraph g = graphOf(R"mlir(
#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> ()>
func.func @f(%x: tensor<8x16xf32>, %w1: tensor<16x64xf32> {soap.param},
             %w2: tensor<64x32xf32> {soap.param}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8x64xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x64xf32>) outs(%f1 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %e2 = tensor.empty() : tensor<8x32xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %y = linalg.matmul ins(%h, %w2 : tensor<8x64xf32>, tensor<64x32xf32>) outs(%f2 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %e3 = tensor.empty() : tensor<f32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["reduction", "reduction"]}
      ins(%y : tensor<8x32xf32>) outs(%f3 : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}
)mlir");
  int first = nodeOf(g, "linalg.matmul"),
      second = nodeOf(g, "linalg.matmul", 1);
  int loss = nodeOf(g, "linalg.generic");
  ASSERT_GE(second, 0);
  ASSERT_GE(loss, 0);
  Machine machine = loadMachine("p100-4x4", 2);
  CostModel cost(machine);
  Simulator sim(g, cost);
  Strategy s = dataParallelStrategy(g, 2);
  for (int n : {first, second}) {
    s.configs[n].degrees = {1, 2, 1}; // (m, n, k): output columns
    s.configs[n].devices = {0, 1};
  }
  // The loss sums y's columns where they are (partial sums).
  s.configs[loss].degrees = {1, 2};
  s.configs[loss].devices = {0, 1};
  sim.simulate(s);
  bool gathered = false;
  for (const CommStep &step : sim.communication())
    gathered |= step.kind == "all_gather";
  ASSERT_TRUE(gathered) << "the second product reads h whole";
  std::vector<MemoryPoint> timeline = sim.memoryTimeline();
  // From the first product's forward work to the loss's: h's block (8x32
  // floats) is gone, the gathered h (8x64) and y's block (8x16) have come,
  // the loss (one float) too.
  int64_t change = timeline[loss].bytes[0] - timeline[first].bytes[0];
  EXPECT_EQ(change, (8 * 64 - 8 * 32 + 8 * 16 + 1) * 4);
}

// A weight transposed and broadcast along the batch for a batch_matmul
// with the input data, as torch-mlir writes a linear layer on a 3-D input.
// The CPU lowering folds the copies into the product, which reads the
// weight itself: the copies hold no buffer. The product's backward work
// computes the weight's gradient only (the input data carries none), so
// it keeps no operand that is not state anyway.
static const char *kBroadcastWeight = R"mlir(
#in = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#out = affine_map<(d0, d1, d2) -> ()>
func.func @f(%x: tensor<8x16x32xf32>, %w: tensor<64x32xf32> {soap.param}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<32x64xf32>
  %t = linalg.transpose ins(%w : tensor<64x32xf32>) outs(%et : tensor<32x64xf32>) permutation = [1, 0]
  %eb = tensor.empty() : tensor<8x32x64xf32>
  %b = linalg.broadcast ins(%t : tensor<32x64xf32>) outs(%eb : tensor<8x32x64xf32>) dimensions = [0]
  %ey = tensor.empty() : tensor<8x16x64xf32>
  %fy = linalg.fill ins(%zero : f32) outs(%ey : tensor<8x16x64xf32>) -> tensor<8x16x64xf32>
  %y = linalg.batch_matmul ins(%x, %b : tensor<8x16x32xf32>, tensor<8x32x64xf32>) outs(%fy : tensor<8x16x64xf32>) -> tensor<8x16x64xf32>
  %el = tensor.empty() : tensor<f32>
  %fl = linalg.fill ins(%zero : f32) outs(%el : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["reduction", "reduction", "reduction"]}
      ins(%y : tensor<8x16x64xf32>) outs(%fl : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}
)mlir";

TEST_F(SimulatorIR, CopiesFoldedIntoAProductHoldNothing) {
  OpGraph g = graphOf(kBroadcastWeight);
  int transpose = nodeOf(g, "linalg.transpose"),
      broadcast = nodeOf(g, "linalg.broadcast"),
      product = nodeOf(g, "linalg.batch_matmul"),
      loss = nodeOf(g, "linalg.generic");
  ASSERT_GE(loss, 0);
  EXPECT_TRUE(g.nodes[transpose].relayoutCopy);
  EXPECT_TRUE(g.nodes[broadcast].relayoutCopy);
  EXPECT_FALSE(g.nodes[product].relayoutCopy);
  // The product keeps x for the weight's gradient, not the broadcast
  // weight: x's gradient is not computed.
  int x = -1, copy = -1;
  for (size_t a = 0; a < g.nodes[product].accesses.size(); ++a) {
    int t = g.nodes[product].accesses[a].tensor;
    if (g.tensors[t].producer < 0)
      x = static_cast<int>(a);
    else if (g.tensors[t].producer == broadcast)
      copy = static_cast<int>(a);
  }
  ASSERT_GE(x, 0);
  ASSERT_GE(copy, 0);
  EXPECT_TRUE(g.keepsForBackward(product, x));
  EXPECT_FALSE(g.keepsForBackward(product, copy));
  // The loss's gradient reads nothing of y again (a sum).
  Machine machine = loadMachine("p100-4x4", 1);
  CostModel cost(machine);
  Simulator sim(g, cost);
  sim.simulate(dataParallelStrategy(g, 1));
  std::vector<MemoryPoint> timeline = sim.memoryTimeline();
  // From before the copies to the loss's forward work: y (8x16x64) and
  // the loss; no transposed (32x64) or broadcast (8x32x64) copy.
  int64_t y = 8 * 16 * 64 * 4;
  EXPECT_EQ(timeline[loss].bytes[0] - timeline[transpose].bytes[0], y + 4);
  EXPECT_EQ(timeline[broadcast].bytes[0], timeline[transpose].bytes[0]);
}

/// kBroadcastWeight's graph and ops, and its strategies on 2 devices.
struct BroadcastWeight {
  OpGraph g;
  int broadcast, product, loss;
  explicit BroadcastWeight(OpGraph graph)
      : g(std::move(graph)),
        broadcast(SimulatorIR::nodeOf(g, "linalg.broadcast")),
        product(SimulatorIR::nodeOf(g, "linalg.batch_matmul")),
        loss(SimulatorIR::nodeOf(g, "linalg.generic")) {}
  /// Data parallelism: each product reads the batch rows its broadcast
  /// makes.
  Strategy data() const { return dataParallelStrategy(g, 2); }
  /// The broadcast split by batch, the product by columns: an all_to_all
  /// between them, whose source the partitioned program makes; the loss
  /// sums y's columns where they are.
  Strategy moved() const {
    Strategy s = data();
    s.configs[product].degrees = {1, 1, 2, 1}; // (b, m, n, k)
    s.configs[broadcast].degrees = {2, 1, 1};
    s.configs[loss].degrees = {1, 1, 2};
    return s;
  }
};

TEST_F(SimulatorIR, AFoldedCopyIsMadeWhereAReshardMovesIt) {
  BroadcastWeight net(graphOf(kBroadcastWeight));
  const OpGraph &g = net.g;
  int broadcast = net.broadcast, product = net.product, loss = net.loss;
  ASSERT_GE(loss, 0);
  Machine machine = loadMachine("p100-4x4", 2);
  CostModel cost(machine);
  Simulator sim(g, cost);
  sim.simulate(net.moved());
  bool allToAll = false;
  for (const CommStep &step : sim.communication())
    allToAll |= step.kind == "all_to_all";
  ASSERT_TRUE(allToAll);
  std::vector<MemoryPoint> timeline = sim.memoryTimeline();
  // The broadcast's block (4x32x64) over its forward work, then the
  // all_to_all's result (8x32x32) for the product's forward work alone (it
  // keeps no operand for its backward work).
  int64_t block = 4 * 32 * 64 * 4, received = 8 * 32 * 32 * 4;
  int64_t before = timeline[broadcast - 1].bytes[0];
  EXPECT_EQ(timeline[broadcast].bytes[0] - before, block);
  int64_t yBlock = 8 * 16 * 32 * 4;
  EXPECT_EQ(timeline[product].bytes[0] - before, block + received + yBlock);
  // After the product: the block and the received data are gone.
  EXPECT_EQ(timeline[loss].bytes[0] - before, yBlock + 4);
}

// The same copy priced from a profile database: folded into the product
// that reads its blocks where it makes them, it costs its plain entry
// (zero: soap-profile --program found no kernel of it); moved by the
// all_to_all, it runs as a kernel of its own and costs its entry whose key
// ends in " made". A change of the product's config alone rebuilds the
// copy in a delta simulation.
TEST_F(SimulatorIR, AMovedCopyTakesItsMadeEntry) {
  BroadcastWeight net(graphOf(kBroadcastWeight));
  const OpGraph &g = net.g;
  int broadcast = net.broadcast, product = net.product, loss = net.loss;
  ASSERT_GE(loss, 0);
  Machine machine = loadMachine("p100-4x4", 2);
  const std::string &kind = machine.deviceType().name;
  std::vector<int64_t> half = {4, 32, 64}; // split by batch
  std::string plainKey = ProfileDatabase::key(g, broadcast, half, kind);
  std::string madeKey =
      ProfileDatabase::key(g, broadcast, half, kind, /*madeCopy=*/true);
  EXPECT_EQ(madeKey, plainKey + " made");
  // Only relayout copies have such keys.
  EXPECT_EQ(ProfileDatabase::key(g, product, {8, 16, 64, 32}, kind, true),
            ProfileDatabase::key(g, product, {8, 16, 64, 32}, kind));
  ProfileDatabase::Entry made;
  made.forward = 1e-3;
  made.backward = 2e-3;
  ProfileDatabase withMade, folded;
  for (ProfileDatabase *db : {&withMade, &folded}) {
    db->record(plainKey, ProfileDatabase::Entry());
    db->record(madeKey, db == &withMade ? made : ProfileDatabase::Entry());
  }
  CostModel costWithMade(machine, &withMade), costFolded(machine, &folded);

  Strategy data = net.data(), moved = net.moved();
  ASSERT_EQ(data.configs[broadcast].degrees, moved.configs[broadcast].degrees);
  Simulator a(g, costWithMade), b(g, costFolded);
  // Folded: the made entry is not taken.
  SimReport aData = a.simulate(data), bData = b.simulate(data);
  EXPECT_TRUE(aData == bData);
  // Moved: the broadcast's forward and backward work on each device.
  SimReport aMoved = a.simulate(moved), bMoved = b.simulate(moved);
  for (int d = 0; d < 2; ++d)
    EXPECT_NEAR(aMoved.deviceBusy[d] - bMoved.deviceBusy[d], 3e-3, 1e-9);

  // The product's and the loss's configs change, not the copy's.
  Simulator delta(g, costWithMade);
  delta.simulate(data);
  SimReport incremental = delta.simulateDelta(
      {{product, moved.configs[product]}, {loss, moved.configs[loss]}});
  EXPECT_TRUE(incremental == aMoved);
  EXPECT_TRUE(delta.simulateDelta({{product, data.configs[product]},
                                   {loss, data.configs[loss]}}) == aData);
}

} // namespace

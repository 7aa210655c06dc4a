//===- SimulatorTest.cpp - the execution simulator ------------------------===//
//
// Hand-computed cases, the data-parallel traffic formula, and delta
// simulation == full simulation on thousands of random config changes
// (SimulatorZooTest.cpp: across the zoo; SimulatorMemoryTest.cpp: memory
// from liveness; the cost model's profile entries: CostModelTest.cpp).
//
//===----------------------------------------------------------------------===//

#include "soap/machine/Machine.h"
#include "soap/search/ConfigSpace.h"
#include "soap/search/Strategies.h"
#include "soap/sim/Simulator.h"

#include "SimulatorChecks.h"
#include "SimulatorIR.h"
#include "TestMachines.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <optional>
#include <tuple>

using namespace soap;

namespace {

/// Two devices in one node joined by a mesh link of 1 GB/s and 1 us; the
/// device does 1 TFLOP/s, reads memory at 1 GB/s, launches in 1 us.
constexpr const char *kTwoDevices = R"json({
  "name": "two",
  "device_types": {"T": {"peak_flops": {"f32": 1e12}, "memory_bandwidth": 1e9,
                         "memory_bytes": 1000000000, "launch_overhead": 1e-6}},
  "device_type": "T", "nodes": 1, "devices_per_node": 2,
  "intra_node": {"topology": "mesh", "bandwidth": 1e9, "latency": 1e-6}
})json";

Machine parseMachine(const char *text) {
  std::string error;
  std::optional<Machine> machine = Machine::parse(text, error);
  EXPECT_TRUE(machine) << error;
  return *machine;
}

using test::checkDeltaEqualsFull;
using test::loadMachine;

IndexExpr loop(unsigned l) {
  IndexExpr e;
  e.terms.push_back({l, 1});
  return e;
}

/// x -> A -> t -> B -> y, elementwise over 8 f32 (1 FLOP per element).
OpGraph chain() {
  OpGraph g;
  g.tensors = {{"x", {8}, 4, "f32", false, true, -1},
               {"t", {8}, 4, "f32", false, false, 0},
               {"y", {8}, 4, "f32", false, false, 1}};
  for (int n = 0; n < 2; ++n) {
    OpNode node;
    node.opName = n == 0 ? "A" : "B";
    node.loopSizes = {8};
    node.loopNames = {"d0"};
    node.loopKinds = {DimKind::Sample};
    node.flopsPerIteration = 1;
    node.accesses = {{n, {loop(0)}, AccessRole::Read, false},
                     {n + 1, {loop(0)}, AccessRole::Write, false}};
    g.nodes.push_back(node);
  }
  return g;
}

ParallelConfig onDevice(int device) { return {{1}, {device}}; }

TEST(Simulator, TwoOpsOnTwoDevicesOverOneLink) {
  Machine machine = parseMachine(kTwoDevices);
  CostModel cost(machine);
  OpGraph g = chain();
  Strategy s;
  s.numDevices = 2;
  s.configs = {onDevice(0), onDevice(1)};
  Simulator sim(g, cost, SimOptions{/*training=*/false});
  SimReport r = sim.simulate(s);
  // Each op: 1 us launch + max(8 FLOP / 1e12, 64 bytes / 1e9 = 64 ns).
  double op = 1e-6 + 64e-9;
  // The 32 bytes of t cross the link: 1 us + 32 ns.
  double transfer = 1e-6 + 32e-9;
  EXPECT_DOUBLE_EQ(r.stepTime, op + transfer + op);
  EXPECT_DOUBLE_EQ(r.deviceBusy[0], op);
  EXPECT_DOUBLE_EQ(r.deviceBusy[1], op);
  EXPECT_EQ(r.totalCommBytes, 32);
  EXPECT_EQ(r.numTasks, 3);

  // On one device there is nothing to move.
  s.configs = {onDevice(1), onDevice(1)};
  SimReport local = sim.simulate(s);
  EXPECT_DOUBLE_EQ(local.stepTime, 2 * op);
  EXPECT_EQ(local.totalCommBytes, 0);
  EXPECT_DOUBLE_EQ(local.deviceBusy[0], 0);
}

TEST(Simulator, SplitOpsRunInParallel) {
  Machine machine = parseMachine(kTwoDevices);
  CostModel cost(machine);
  OpGraph g = chain();
  Strategy s;
  s.numDevices = 2;
  ParallelConfig split{{2}, {0, 1}};
  s.configs = {split, split};
  Simulator sim(g, cost, SimOptions{/*training=*/false});
  SimReport r = sim.simulate(s);
  // Halves stay on their devices: 4 elements, 32 bytes per task.
  double half = 1e-6 + 32e-9;
  EXPECT_DOUBLE_EQ(r.stepTime, 2 * half);
  EXPECT_EQ(r.totalCommBytes, 0);
}

TEST(Simulator, FifoQueueOnALink) {
  // Both halves of A's output go to device 1: the two transfers share the
  // link and run one after the other.
  Machine machine = parseMachine(kTwoDevices);
  CostModel cost(machine);
  OpGraph g = chain();
  Strategy s;
  s.numDevices = 2;
  s.configs = {ParallelConfig{{2}, {0, 0}}, onDevice(1)};
  Simulator sim(g, cost, SimOptions{/*training=*/false});
  SimReport r = sim.simulate(s);
  double half = 1e-6 + 32e-9;      // each half of A on device 0
  double transfer = 1e-6 + 16e-9;  // 16 bytes each
  double whole = 1e-6 + 64e-9;     // B
  // A's halves end at half and 2*half; the first transfer runs
  // [half, half+transfer], the second waits for its data: [2*half, ...].
  EXPECT_DOUBLE_EQ(r.stepTime, 2 * half + transfer + whole);
  EXPECT_EQ(r.totalCommBytes, 32);
}

// Each rank runs its ops in the program's order: device 0's first op (A)
// waits for device 1's B, and its second op (C), whose operand is ready
// from the start, runs after A, as the executable runs it, not in B's
// time.
TEST(Simulator, RanksRunTheirOpsInProgramOrder) {
  Machine machine = parseMachine(kTwoDevices);
  CostModel cost(machine);
  OpGraph g;
  // x -> B -> t -> A -> y; z -> C -> w; 1000 f32 each.
  g.tensors = {{"x", {1000}, 4, "f32", false, true, -1},
               {"t", {1000}, 4, "f32", false, false, 0},
               {"y", {1000}, 4, "f32", false, false, 1},
               {"z", {1000}, 4, "f32", false, true, -1},
               {"w", {1000}, 4, "f32", false, false, 2}};
  for (auto [name, in, out] : std::vector<std::tuple<const char *, int, int>>{
           {"B", 0, 1}, {"A", 1, 2}, {"C", 3, 4}}) {
    OpNode node;
    node.opName = name;
    node.loopSizes = {1000};
    node.loopNames = {"d0"};
    node.loopKinds = {DimKind::Sample};
    node.flopsPerIteration = 1;
    node.accesses = {{in, {loop(0)}, AccessRole::Read, false},
                     {out, {loop(0)}, AccessRole::Write, false}};
    g.nodes.push_back(node);
  }
  Strategy s;
  s.numDevices = 2;
  s.configs = {onDevice(1), onDevice(0), onDevice(0)};
  Simulator sim(g, cost, SimOptions{/*training=*/false});
  // Each op: 1 us launch + 8000 bytes at 1 GB/s; t: 1 us + 4000 bytes.
  double op = 1e-6 + 8e-6, transfer = 1e-6 + 4e-6;
  EXPECT_DOUBLE_EQ(sim.simulate(s).stepTime, op + transfer + op + op);
  // C first in the program: it runs during B.
  s.configs = {onDevice(0), onDevice(1), onDevice(0)};
  EXPECT_DOUBLE_EQ(sim.simulate(s).stepTime, op + transfer + op);
  // Delta simulations agree.
  EXPECT_DOUBLE_EQ(
      sim.simulateDelta({{0, onDevice(1)}, {1, onDevice(0)}}).stepTime,
      op + transfer + op + op);
}

TEST(Simulator, MeasuredCollectivesPriceReshards) {
  // kTwoDevices with the times soap-profile --mpi would have measured for
  // libsoaprt's collectives over both devices.
  std::string text = kTwoDevices;
  text.insert(text.rfind('}'),
              R"json(, "collectives": {"measured": {"ranks": 2,
                  "all_gather": [[32, 5e-6], [64, 6e-6]],
                  "broadcast": [[32, 7e-6]]}})json");
  Machine machine = parseMachine(text.c_str());
  CostModel cost(machine);
  OpGraph g = chain();
  Strategy s;
  s.numDevices = 2;
  Simulator sim(g, cost, SimOptions{/*training=*/false});
  double half = 1e-6 + 32e-9, whole = 1e-6 + 64e-9;
  // A split over both devices, B replicated reads all of t on both: the
  // partitioner gathers t (lib/layout plans an all-gather of 32 bytes), 5 us
  // as measured instead of the link's 1 us + 16 ns.
  s.configs = {ParallelConfig{{2}, {0, 1}}, ParallelConfig{}};
  SimReport gathered = sim.simulate(s);
  EXPECT_DOUBLE_EQ(gathered.stepTime, half + 5e-6 + whole);
  EXPECT_EQ(gathered.totalCommBytes, 32); // 16 bytes to each device
  // A whole on device 0: only device 1 lacks t, which it receives point to
  // point (the link's 1 us + 32 ns), as the partitioner sends it.
  s.configs = {onDevice(0), ParallelConfig{}};
  EXPECT_DOUBLE_EQ(sim.simulate(s).stepTime, whole + 1e-6 + 32e-9 + whole);
  // The same through a delta simulation.
  EXPECT_DOUBLE_EQ(sim.simulateDelta(0, ParallelConfig{{2}, {0, 1}}).stepTime,
                   gathered.stepTime);
}

TEST(Simulator, MeasuredSendRecvPricesTransfers) {
  // kTwoDevices with libsoaprt's send and receive measured: A whole on
  // device 0, B replicated; device 1 receives t (32 bytes) in 4 us, as
  // measured, instead of the link's 1 us + 32 ns.
  std::string text = kTwoDevices;
  text.insert(text.rfind('}'),
              R"json(, "collectives": {"measured": {"ranks": 2,
                  "send_recv": [[16, 3e-6], [48, 5e-6]]}})json");
  Machine machine = parseMachine(text.c_str());
  CostModel cost(machine);
  OpGraph g = chain();
  Strategy s;
  s.numDevices = 2;
  s.configs = {onDevice(0), ParallelConfig{}};
  Simulator sim(g, cost, SimOptions{/*training=*/false});
  double whole = 1e-6 + 64e-9;
  EXPECT_DOUBLE_EQ(sim.simulate(s).stepTime, whole + 4e-6 + whole);
}

//===----------------------------------------------------------------------===//
// From IR
//===----------------------------------------------------------------------===//

using test::SimulatorIR;

TEST_F(SimulatorIR, DataParallelTrafficIsTheRingAllReduce) {
  OpGraph g = graphOfFile("docs/examples/mlp.mlir");
  for (int devices : {2, 4, 8, 16}) {
    Machine machine = loadMachine("p100-4x4", devices);
    CostModel cost(machine);
    Simulator sim(g, cost);
    Strategy dp = dataParallelStrategy(g, devices);
    // Every op is split by batch; the final mean over the batch leaves
    // partial sums on each device, completed by an all-reduce of 4 bytes.
    SimReport r = sim.simulate(dp);
    int64_t expected = 0;
    for (const GraphTensor &t : g.tensors)
      if (t.isParameter && t.producer < 0)
        expected += Machine::allReduceBytesPerDevice(t.bytes(), devices) *
                    devices;
    int64_t loss = Machine::allReduceBytesPerDevice(4, devices) * devices;
    EXPECT_EQ(r.totalCommBytes, expected + loss) << devices << " devices";
    EXPECT_EQ(expected, 2 * (devices - 1) * g.parameterBytes() / devices *
                            devices)
        << "ring all-reduce moves 2(n-1)/n of the parameters per device";
  }
}

} // namespace

/// Random config changes, each simulated incrementally and from scratch.
void test::checkDeltaEqualsFull(const OpGraph &g, const Machine &machine,
                                int changes, uint64_t seed, bool training,
                                const ProfileDatabase *profile) {
  CostModel cost(machine, profile);
  SimOptions options{training};
  Simulator delta(g, cost, options);
  Simulator full(g, cost, options);
  std::mt19937_64 rng(seed);
  int devices = machine.numDevices();
  delta.simulate(dataParallelStrategy(g, devices));
  for (int i = 0; i < changes; ++i) {
    int node = std::uniform_int_distribution<int>(0, g.nodes.size() - 1)(rng);
    ParallelConfig config = randomConfig(g.nodes[node], devices, rng);
    ParallelConfig previous = delta.strategy().configs[node];
    SimReport incremental;
    if (i % 5 == 4) {
      // Several ops at once (the first one twice: the last config wins).
      std::vector<std::pair<int, ParallelConfig>> changes = {{node, config}};
      for (int k = 0; k < 3; ++k) {
        int other =
            std::uniform_int_distribution<int>(0, g.nodes.size() - 1)(rng);
        changes.emplace_back(other,
                             randomConfig(g.nodes[other], devices, rng));
      }
      changes.emplace_back(node, config);
      previous = delta.strategy().configs[node];
      incremental = delta.simulateDelta(changes);
    } else {
      incremental = delta.simulateDelta(node, config);
    }
    ASSERT_FALSE(delta.strategy().validate(g)) << *delta.strategy().validate(g);
    SimReport scratch = full.simulate(delta.strategy());
    ASSERT_TRUE(incremental == scratch)
        << "change " << i << " (node " << node << "): delta "
        << incremental.stepTime << " s, " << incremental.numTasks
        << " tasks; full " << scratch.stepTime << " s, " << scratch.numTasks
        << " tasks";
    // Every third change is taken back (as the search does with rejected
    // proposals); the next change then starts from the restored state.
    if (i % 3 == 2 && i % 5 != 4) {
      Strategy before = delta.strategy();
      before.configs[node] = previous;
      ASSERT_TRUE(delta.undo());
      ASSERT_FALSE(delta.undo()) << "only one change can be undone";
      ASSERT_EQ(delta.strategy().toJSON(g), before.toJSON(g));
    }
  }
  // After all that, re-applying a config (a no-op change) still agrees.
  SimReport last = delta.simulateDelta(0, delta.strategy().configs[0]);
  ASSERT_TRUE(last == full.simulate(delta.strategy()));
}

namespace {

TEST_F(SimulatorIR, DeltaEqualsFullOnTheMlp) {
  OpGraph g = graphOfFile("docs/examples/mlp.mlir");
  checkDeltaEqualsFull(g, loadMachine("p100-4x4", 4), 1500, 1, true);
  checkDeltaEqualsFull(g, loadMachine("k80-16x4", 8), 500, 2, false);
}

TEST_F(SimulatorIR, DeltaEqualsFullWithMeasuredCollectives) {
  // Four CPU ranks whose collectives were measured: reshards are priced by
  // the collective they become, which depends on both ends of an edge.
  OpGraph g = graphOfFile("docs/examples/mlp.mlir");
  MachineSpec spec = loadMachine("cpu-local", 2).spec();
  spec.devicesPerNode = 4;
  MeasuredCollectives measured;
  measured.ranks = 4;
  for (CollectiveKind kind : collectiveKinds())
    measured.times[kind] = {{64, 2e-6}, {65536, 40e-6}, {1 << 20, 500e-6}};
  spec.collectives.measured = measured;
  std::string error;
  std::optional<Machine> machine = Machine::create(spec, error);
  ASSERT_TRUE(machine) << error;
  checkDeltaEqualsFull(g, *machine, 600, 3, true);
}

TEST_F(SimulatorIR, DeltaEqualsFullOnACnn) {
  OpGraph g = graphOf(R"mlir(
func.func @cnn(%x: tensor<8x3x16x16xf32>, %k1: tensor<8x3x3x3xf32> {soap.param},
               %k2: tensor<8x8x3x3xf32> {soap.param},
               %w: tensor<128x10xf32> {soap.param}) -> tensor<8x10xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zero : f32
  } : tensor<8x3x16x16xf32> to tensor<8x3x18x18xf32>
  %o1 = tensor.empty() : tensor<8x8x8x8xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%o1 : tensor<8x8x8x8xf32>) -> tensor<8x8x8x8xf32>
  %c1 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
          ins(%p, %k1 : tensor<8x3x18x18xf32>, tensor<8x3x3x3xf32>) outs(%f1 : tensor<8x8x8x8xf32>) -> tensor<8x8x8x8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%c1 : tensor<8x8x8x8xf32>) outs(%o1 : tensor<8x8x8x8xf32>) {
  ^bb0(%i: f32, %o: f32):
    %m = arith.maximumf %i, %zero : f32
    linalg.yield %m : f32
  } -> tensor<8x8x8x8xf32>
  %o2 = tensor.empty() : tensor<8x8x6x6xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%o2 : tensor<8x8x6x6xf32>) -> tensor<8x8x6x6xf32>
  %c2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
          ins(%r, %k2 : tensor<8x8x8x8xf32>, tensor<8x8x3x3xf32>) outs(%f2 : tensor<8x8x6x6xf32>) -> tensor<8x8x6x6xf32>
  %win = tensor.empty() : tensor<3x3xf32>
  %o3 = tensor.empty() : tensor<8x8x2x2xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%o3 : tensor<8x8x2x2xf32>) -> tensor<8x8x2x2xf32>
  %pool = linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<3> : tensor<2xi64>}
          ins(%c2, %win : tensor<8x8x6x6xf32>, tensor<3x3xf32>) outs(%f3 : tensor<8x8x2x2xf32>) -> tensor<8x8x2x2xf32>
  %flat = tensor.collapse_shape %pool [[0], [1, 2, 3]] : tensor<8x8x2x2xf32> into tensor<8x32xf32>
  %cat = tensor.concat dim(1) %flat, %flat, %flat, %flat : (tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x128xf32>
  %o4 = tensor.empty() : tensor<8x10xf32>
  %f4 = linalg.fill ins(%zero : f32) outs(%o4 : tensor<8x10xf32>) -> tensor<8x10xf32>
  %y = linalg.matmul ins(%cat, %w : tensor<8x128xf32>, tensor<128x10xf32>) outs(%f4 : tensor<8x10xf32>) -> tensor<8x10xf32>
  return %y : tensor<8x10xf32>
}
)mlir");
  checkDeltaEqualsFull(g, loadMachine("p100-4x4", 16), 1500, 3, true);
  checkDeltaEqualsFull(g, loadMachine("h100-4x8", 32), 500, 4, true);
}

// Biases broadcast into the inits of matmuls: an init's gradient comes
// from the reader of its op's result (Simulator::adjointReaders), so a
// change of that reader's config rebuilds the bias broadcast's edges; an
// in-place gradient chain through a matmul of several tasks per device; a
// weight's chain through a product with partial sums; a view of a
// replicated op's result (it runs whole where its operand is: a change of
// the op to or from replicated rebuilds the view's readers' edges); a
// replicated op's gradient sum with an addend of several tasks on a device;
// a broadcast's gradient joined on the device of its tasks; a weight whose
// last reader has several tasks on a device; a residual add whose
// operands' gradients share the copies their reshards made, a reshape
// whose adjoint a replicated reader makes whole everywhere, and readers
// through an erased identity copy, whose gradients add up first.
TEST_F(SimulatorIR, DeltaEqualsFullWithBiasInitsAndChains) {
  for (const char *file :
       {"test/Passes/partition/Inputs/bias-init-adjoint.mlir",
        "test/Passes/partition/Inputs/in-place-chain-slots.mlir",
        "test/Passes/partition/Inputs/param-chain-partial.mlir",
        "test/Passes/partition/Inputs/replicated-view.mlir",
        "test/Passes/partition/Inputs/replicated-pieces.mlir",
        "test/Passes/partition/Inputs/broadcast-pieces.mlir",
        "test/Passes/partition/Inputs/param-last-pieces.mlir",
        "test/Passes/partition/Inputs/replicated-beside-pieces.mlir",
        "test/Passes/partition/Inputs/shared-adjoint.mlir",
        "test/Passes/partition/Inputs/copy-readers-sum.mlir"}) {
    OpGraph g = graphOfFile(file);
    ASSERT_FALSE(g.nodes.empty()) << file;
    checkDeltaEqualsFull(g, loadMachine("p100-4x4", 2), 800, 5, true);
    checkDeltaEqualsFull(g, loadMachine("p100-4x4", 4), 800, 6, true);
  }
}

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
  EXPECT_FALSE(OpGraph::fromJSON(R"({"tensors": [], "nodes": [{"op": "x"}]})",
                                 error));
  EXPECT_EQ(error, "'nodes[0].class' is missing");
  EXPECT_FALSE(OpGraph::fromJSON(
      R"({"tensors": [{"name": "t", "shape": [4], "element_bytes": 4,
                       "producer": 3}], "nodes": []})",
      error));
  EXPECT_EQ(error, "tensor 0 ('t') has producer 3 out of range");
}

} // namespace

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

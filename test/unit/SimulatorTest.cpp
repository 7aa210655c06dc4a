//===- SimulatorTest.cpp - the execution simulator ------------------------===//
//
// Hand-computed cases, the data-parallel traffic formula, and delta
// simulation == full simulation on thousands of random config changes
// (SimulatorGraphTest.cpp: the op graph from IR; SimulatorZooTest.cpp:
// across the zoo; SimulatorMemoryTest.cpp: memory from liveness; the cost
// model's profile entries: CostModelTest.cpp).
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

} // namespace

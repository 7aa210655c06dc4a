//===- MachineTest.cpp - routes, collective costs, machine files ----------===//
//
// Small machines with round numbers (MachineTestSpecs.h), so every
// expected time below can be checked by hand against the formulas of
// docs/machines.md; and the machine files of machines/. Malformed files
// and measured tables: MachineSpecTest.cpp.
//
//===----------------------------------------------------------------------===//

#include "MachineTestSpecs.h"

#include "soap/machine/Machine.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>

using namespace soap;
using namespace soap::testing;
using json = nlohmann::json;

#ifndef SOAP_SOURCE_DIR
#error "SOAP_SOURCE_DIR must point at the source tree (machines/)"
#endif

namespace {

Machine build(MachineSpec spec,
              CollectiveAlgorithm algorithm = CollectiveAlgorithm::Ring,
              Hierarchy hierarchy = Hierarchy::Flat) {
  spec.collectives.algorithm = algorithm;
  spec.collectives.hierarchical = hierarchy;
  std::string error;
  std::optional<Machine> machine = Machine::create(spec, error);
  EXPECT_TRUE(machine) << error;
  return *machine;
}

template <typename Links>
std::vector<std::string> linkNames(const Machine &m, const Links &ids) {
  std::vector<std::string> names;
  for (LinkId id : ids)
    names.push_back(m.link(id).name);
  return names;
}

using Names = std::vector<std::string>;

//===----------------------------------------------------------------------===//
// Routes and point-to-point transfers
//===----------------------------------------------------------------------===//

TEST(MachineRoute, SwitchUsesTheSendersAndTheReceiversPorts) {
  Machine m = build(clusterSpec(IntraNodeTopology::Switch, 1, 4));
  EXPECT_EQ(m.links().size(), 8u); // an out-port and an in-port per device
  EXPECT_EQ(linkNames(m, m.route(0, 1)),
            (Names{"node0/d0->switch", "node0/switch->d1"}));
  EXPECT_EQ(linkNames(m, m.route(1, 0)),
            (Names{"node0/d1->switch", "node0/switch->d0"}));
  // Half of the latency on each port: the route's latency is the file's.
  EXPECT_DOUBLE_EQ(m.transferTime(1'000'000'000, 0, 1), 1e-6 + 0.1);
}

TEST(MachineRoute, MeshHasALinkPerOrderedPair) {
  Machine m = build(clusterSpec(IntraNodeTopology::Mesh, 1, 4));
  EXPECT_EQ(m.links().size(), 12u);
  EXPECT_EQ(linkNames(m, m.route(0, 1)), (Names{"node0/d0->d1"}));
  EXPECT_EQ(linkNames(m, m.route(1, 0)), (Names{"node0/d1->d0"}));
  EXPECT_EQ(linkNames(m, m.route(3, 2)), (Names{"node0/d3->d2"}));
  EXPECT_DOUBLE_EQ(m.transferTime(1'000'000'000, 3, 2), 1e-6 + 0.1);
}

TEST(MachineRoute, BusIsSharedByEveryPairOfTheNode) {
  Machine m = build(clusterSpec(IntraNodeTopology::Bus, 2, 4));
  EXPECT_EQ(m.route(0, 1), m.route(2, 3));
  EXPECT_EQ(linkNames(m, m.route(0, 1)), (Names{"node0/bus"}));
  EXPECT_EQ(linkNames(m, m.route(5, 4)), (Names{"node1/bus"}));
  EXPECT_DOUBLE_EQ(m.transferTime(1'000'000'000, 0, 1), 1e-6 + 0.1);
}

TEST(MachineRoute, AcrossNodesThroughBothNics) {
  Machine m = build(clusterSpec(IntraNodeTopology::Switch, 2, 4));
  EXPECT_EQ(m.numDevices(), 8);
  EXPECT_EQ(m.numNodes(), 2);
  EXPECT_EQ(m.nodeOf(5), 1);
  EXPECT_EQ(m.links().size(), 20u); // per node: 8 ports + NIC out and in
  EXPECT_EQ(linkNames(m, m.route(1, 6)),
            (Names{"node0/nic0->net", "node1/net->nic0"}));
  // 4 us one way + 1 GB at 5 GB/s.
  EXPECT_DOUBLE_EQ(m.transferTime(1'000'000'000, 1, 6), 4e-6 + 0.2);
}

TEST(MachineRoute, DeviceUsesNicOfItsLocalIndex) {
  Machine m = build(clusterSpec(IntraNodeTopology::Switch, 2, 4, 4));
  EXPECT_EQ(m.nicOf(5), 1);
  EXPECT_EQ(linkNames(m, m.route(1, 6)),
            (Names{"node0/nic1->net", "node1/net->nic2"}));
  Machine two = build(clusterSpec(IntraNodeTopology::Switch, 2, 4, 2));
  EXPECT_EQ(two.nicOf(2), 0);
  EXPECT_EQ(two.nicOf(7), 1);
}

TEST(MachineRoute, SameDeviceIsFree) {
  Machine m = build(clusterSpec(IntraNodeTopology::Mesh, 2, 2));
  EXPECT_TRUE(m.route(3, 3).empty());
  EXPECT_EQ(m.transferTime(1 << 20, 3, 3), 0);
}

TEST(MachineRoute, ConcurrentTransfersShareLinks) {
  Machine m = build(clusterSpec(IntraNodeTopology::Switch, 2, 4));
  // Both leave node 0 through its one NIC.
  Machine::StepCost step = m.concurrentStep({{0, 4}, {1, 5}, {2, 3}});
  EXPECT_DOUBLE_EQ(step.bandwidth, kNicBandwidth / 2);
  EXPECT_DOUBLE_EQ(step.latency, kNicLatency);
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

const std::vector<int> kNode = {0, 1, 2, 3};
const std::vector<int> kSixteen = {0, 1, 2,  3,  4,  5,  6,  7,
                                   8, 9, 10, 11, 12, 13, 14, 15};

TEST(MachineAllReduce, RingInsideASwitchNode) {
  Machine m = build(clusterSpec(IntraNodeTopology::Switch, 1, 4));
  // 2(n-1)/n * B / bw + 2(n-1) * latency, every hop on its own ports.
  EXPECT_DOUBLE_EQ(m.allReduceTime(400'000'000, kNode),
                   2.0 * 3 / 4 * 4e8 / 10e9 + 6 * 1e-6);
  EXPECT_EQ(Machine::allReduceBytesPerDevice(400'000'000, 4), 600'000'000);
}

TEST(MachineAllReduce, RingOnABusSharesItAmongTheHops) {
  Machine m = build(clusterSpec(IntraNodeTopology::Bus, 1, 4));
  // Four hops at a time on one bus: 2.5 GB/s each.
  EXPECT_DOUBLE_EQ(m.allReduceTime(400'000'000, kNode),
                   2.0 * 3 / 4 * 4e8 / 2.5e9 + 6 * 1e-6);
}

TEST(MachineAllReduce, TreeInsideANode) {
  // Heap order: 1 and 2 both send to 0 (0's in-port is shared), then 0
  // sends to both; depth 2.
  Machine onSwitch = build(clusterSpec(IntraNodeTopology::Switch, 1, 4),
                           CollectiveAlgorithm::Tree);
  EXPECT_DOUBLE_EQ(onSwitch.allReduceTime(400'000'000, kNode),
                   2 * 2 * 1e-6 + 2 * 4e8 / 5e9);
  Machine onMesh = build(clusterSpec(IntraNodeTopology::Mesh, 1, 4),
                         CollectiveAlgorithm::Tree);
  EXPECT_DOUBLE_EQ(onMesh.allReduceTime(400'000'000, kNode),
                   2 * 2 * 1e-6 + 2 * 4e8 / 10e9);
  EXPECT_EQ(
      onMesh.collectiveCost(CollectiveKind::AllReduce, 8, kNode).algorithm,
      "tree");
}

TEST(MachineAllReduce, AutoPicksTheFasterOfRingAndTree) {
  Machine m = build(clusterSpec(IntraNodeTopology::Switch, 1, 4),
                    CollectiveAlgorithm::Auto);
  CollectiveCost large =
      m.collectiveCost(CollectiveKind::AllReduce, 400'000'000, kNode);
  EXPECT_EQ(large.algorithm, "ring");
  EXPECT_DOUBLE_EQ(large.time, 2.0 * 3 / 4 * 4e8 / 10e9 + 6 * 1e-6);
  // 1000 bytes: ring 6.15 us, tree 4.4 us.
  CollectiveCost small =
      m.collectiveCost(CollectiveKind::AllReduce, 1000, kNode);
  EXPECT_EQ(small.algorithm, "tree");
  EXPECT_DOUBLE_EQ(small.time, 2 * 2 * 1e-6 + 2 * 1000 / 5e9);
}

TEST(MachineAllReduce, SixteenAcrossNodesFlatRing) {
  Machine m = build(clusterSpec(IntraNodeTopology::Switch, 4, 4));
  // The ring crosses each node boundary once: slowest hop is a NIC.
  EXPECT_DOUBLE_EQ(m.allReduceTime(1'600'000'000, kSixteen),
                   2.0 * 15 / 16 * 1.6e9 / 5e9 + 30 * 4e-6);
  EXPECT_EQ(Machine::allReduceBytesPerDevice(1'600'000'000, 16), 3'000'000'000);
}

TEST(MachineAllReduce, SixteenAcrossNodesHierarchical) {
  // Reduce-scatter in each node, all-reduce of B/4 between nodes (four
  // rings, one per local position, sharing each node's single NIC), then
  // all-gather in each node.
  Machine m = build(clusterSpec(IntraNodeTopology::Switch, 4, 4),
                    CollectiveAlgorithm::Ring, Hierarchy::Hierarchical);
  double inside = 3.0 / 4 * 1.6e9 / 10e9 + 3 * 1e-6;
  double between = 2.0 * 3 / 4 * 4e8 / (5e9 / 4) + 6 * 4e-6;
  CollectiveCost cost =
      m.collectiveCost(CollectiveKind::AllReduce, 1'600'000'000, kSixteen);
  EXPECT_EQ(cost.algorithm, "hierarchical ring");
  EXPECT_DOUBLE_EQ(cost.time, inside + between + inside);
}

TEST(MachineAllReduce, HierarchicalWithANicPerDevice) {
  Machine m = build(clusterSpec(IntraNodeTopology::Switch, 4, 4, 4),
                    CollectiveAlgorithm::Ring, Hierarchy::Hierarchical);
  double inside = 3.0 / 4 * 1.6e9 / 10e9 + 3 * 1e-6;
  double between = 2.0 * 3 / 4 * 4e8 / 5e9 + 6 * 4e-6;
  EXPECT_DOUBLE_EQ(m.allReduceTime(1'600'000'000, kSixteen),
                   inside + between + inside);
}

TEST(MachineAllReduce, HierarchicalTree) {
  // Between nodes a tree per local position, each on its own NIC; node 0's
  // NIC receives from two children.
  Machine m = build(clusterSpec(IntraNodeTopology::Switch, 4, 4, 4),
                    CollectiveAlgorithm::Tree, Hierarchy::Hierarchical);
  double inside = 3.0 / 4 * 1.6e9 / 10e9 + 3 * 1e-6;
  double between = 2 * 2 * 4e-6 + 2 * 4e8 / 2.5e9;
  CollectiveCost cost =
      m.collectiveCost(CollectiveKind::AllReduce, 1'600'000'000, kSixteen);
  EXPECT_EQ(cost.algorithm, "hierarchical tree");
  EXPECT_DOUBLE_EQ(cost.time, inside + between + inside);
}

TEST(MachineAllReduce, AutoHierarchyPicksTheFasterSchedule) {
  double flat = 2.0 * 15 / 16 * 1.6e9 / 5e9 + 30 * 4e-6; // 0.60012 s
  // One NIC per node: hierarchical takes 0.72003 s, flat wins.
  Machine oneNic = build(clusterSpec(IntraNodeTopology::Switch, 4, 4),
                         CollectiveAlgorithm::Ring, Hierarchy::Auto);
  CollectiveCost a =
      oneNic.collectiveCost(CollectiveKind::AllReduce, 1'600'000'000, kSixteen);
  EXPECT_EQ(a.algorithm, "ring");
  EXPECT_DOUBLE_EQ(a.time, flat);
  // A NIC per device: hierarchical takes 0.36003 s.
  Machine rail = build(clusterSpec(IntraNodeTopology::Switch, 4, 4, 4),
                       CollectiveAlgorithm::Ring, Hierarchy::Auto);
  CollectiveCost b =
      rail.collectiveCost(CollectiveKind::AllReduce, 1'600'000'000, kSixteen);
  EXPECT_EQ(b.algorithm, "hierarchical ring");
  EXPECT_LT(b.time, flat);
}

TEST(MachineAllReduce, UnevenGroupAcrossNodesRunsFlat) {
  Machine m = build(clusterSpec(IntraNodeTopology::Switch, 2, 4),
                    CollectiveAlgorithm::Ring, Hierarchy::Hierarchical);
  CollectiveCost cost =
      m.collectiveCost(CollectiveKind::AllReduce, 400'000'000, {4, 0, 1, 2});
  EXPECT_EQ(cost.algorithm, "ring");
  EXPECT_DOUBLE_EQ(cost.time, 2.0 * 3 / 4 * 4e8 / 5e9 + 6 * 4e-6);
}

TEST(MachineAllReduce, TrivialGroupsCostNothing) {
  Machine m = build(clusterSpec(IntraNodeTopology::Switch, 1, 4));
  EXPECT_EQ(m.allReduceTime(1 << 20, {2}), 0);
  EXPECT_EQ(m.allReduceTime(1 << 20, {}), 0);
  EXPECT_EQ(Machine::allReduceBytesPerDevice(1 << 20, 1), 0);
}

TEST(MachineAllReduce, BytesPerDeviceRoundsDown) {
  // Data-parallel gradient traffic of 1000 bytes over 3 devices.
  EXPECT_EQ(Machine::allReduceBytesPerDevice(1000, 3), 1333);
  EXPECT_EQ(Machine::allGatherBytesPerDevice(1000, 3), 666);
  EXPECT_EQ(Machine::reduceScatterBytesPerDevice(1200, 4), 900);
  EXPECT_EQ(Machine::allToAllBytesPerDevice(1200, 4), 900);
}

TEST(MachineCollectives, AllGatherAndReduceScatterRing) {
  Machine m = build(clusterSpec(IntraNodeTopology::Switch, 1, 4),
                    CollectiveAlgorithm::Tree); // no tree for these
  double ring = 3.0 / 4 * 4e8 / 10e9 + 3 * 1e-6;
  EXPECT_DOUBLE_EQ(m.allGatherTime(400'000'000, kNode), ring);
  EXPECT_DOUBLE_EQ(m.reduceScatterTime(400'000'000, kNode), ring);
}

TEST(MachineCollectives, HierarchicalAllGather) {
  Machine m = build(clusterSpec(IntraNodeTopology::Switch, 4, 4),
                    CollectiveAlgorithm::Ring, Hierarchy::Hierarchical);
  // Between nodes: gather B/4 among each local position (NIC shared by 4),
  // then B inside each node.
  EXPECT_DOUBLE_EQ(m.allGatherTime(1'600'000'000, kSixteen),
                   (3.0 / 4 * 4e8 / 1.25e9 + 3 * 4e-6) +
                       (3.0 / 4 * 1.6e9 / 10e9 + 3 * 1e-6));
}

TEST(MachineCollectives, BroadcastChainAndTree) {
  // Root 2: chain 2 -> 3 -> 0 -> 1; tree 2 -> {3, 0}, 3 -> 1.
  const std::vector<int> group = {2, 0, 1, 3};
  Machine ring = build(clusterSpec(IntraNodeTopology::Switch, 1, 4));
  EXPECT_DOUBLE_EQ(ring.broadcastTime(400'000'000, group), 4e8 / 10e9 + 3e-6);
  Machine tree = build(clusterSpec(IntraNodeTopology::Switch, 1, 4),
                       CollectiveAlgorithm::Tree);
  EXPECT_DOUBLE_EQ(tree.broadcastTime(400'000'000, group), 4e8 / 5e9 + 2e-6);
  Machine autoAlgorithm = build(clusterSpec(IntraNodeTopology::Switch, 1, 4),
                                CollectiveAlgorithm::Auto);
  EXPECT_EQ(autoAlgorithm.collectiveCost(CollectiveKind::Broadcast, 1000, group)
                .algorithm,
            "tree");
  EXPECT_DOUBLE_EQ(autoAlgorithm.broadcastTime(1000, group), 1000 / 5e9 + 2e-6);
}

TEST(MachineCollectives, AllToAllPairwise) {
  Machine onSwitch = build(clusterSpec(IntraNodeTopology::Switch, 1, 4));
  // Three steps, each moving B/4 per device on its own ports.
  EXPECT_DOUBLE_EQ(onSwitch.allToAllTime(400'000'000, kNode),
                   3 * (1e-6 + 1e8 / 10e9));
  Machine onBus = build(clusterSpec(IntraNodeTopology::Bus, 1, 4));
  EXPECT_DOUBLE_EQ(onBus.allToAllTime(400'000'000, kNode),
                   3 * (1e-6 + 1e8 / 2.5e9));
}

TEST(MachineCollectives, AllToAllAcrossNodesSharesTheNic) {
  // Nodes {0, 1} and {2, 3}, one NIC each. Steps 1 and 3 put one transfer
  // on each NIC; step 2 sends both devices of a node across.
  Machine m = build(clusterSpec(IntraNodeTopology::Switch, 2, 2),
                    CollectiveAlgorithm::Ring, Hierarchy::Hierarchical);
  CollectiveCost cost =
      m.collectiveCost(CollectiveKind::AllToAll, 400'000'000, kNode);
  EXPECT_EQ(cost.algorithm, "pairwise");
  EXPECT_DOUBLE_EQ(cost.time, (4e-6 + 1e8 / 5e9) + (4e-6 + 1e8 / 2.5e9) +
                                  (4e-6 + 1e8 / 5e9));
}

TEST(MachineCollectives, LinksOfAGroup) {
  Machine onSwitch = build(clusterSpec(IntraNodeTopology::Switch, 2, 4));
  EXPECT_EQ(linkNames(onSwitch, onSwitch.collectiveLinks({0, 1})),
            (Names{"node0/d0->switch", "node0/switch->d0", "node0/d1->switch",
                   "node0/switch->d1"}));
  EXPECT_EQ(linkNames(onSwitch, onSwitch.collectiveLinks({0, 4})),
            (Names{"node0/nic0->net", "node0/net->nic0", "node1/nic0->net",
                   "node1/net->nic0"}));
  Machine onMesh = build(clusterSpec(IntraNodeTopology::Mesh, 1, 4));
  EXPECT_EQ(onMesh.collectiveLinks({0, 1, 2}).size(), 6u);
}

//===----------------------------------------------------------------------===//
// Machine files
//===----------------------------------------------------------------------===//

Machine loadMachine(const std::string &name) {
  std::string error;
  std::optional<Machine> machine = Machine::load(
      std::string(SOAP_SOURCE_DIR) + "/machines/" + name + ".json", error);
  EXPECT_TRUE(machine) << error;
  return machine ? *machine
                 : build(clusterSpec(IntraNodeTopology::Switch, 1, 1));
}

TEST(MachineFiles, EveryFileLoads) {
  int count = 0;
  for (const auto &entry : std::filesystem::directory_iterator(
           std::string(SOAP_SOURCE_DIR) + "/machines")) {
    if (entry.path().extension() != ".json")
      continue;
    std::string error;
    std::optional<Machine> machine = Machine::load(entry.path(), error);
    ASSERT_TRUE(machine) << error;
    EXPECT_EQ(machine->name() + ".json", entry.path().filename().string());
    ++count;
  }
  EXPECT_GE(count, 5);
}

TEST(MachineFiles, P100Cluster) {
  Machine m = loadMachine("p100-4x4");
  EXPECT_EQ(m.numDevices(), 16);
  EXPECT_EQ(m.numNodes(), 4);
  EXPECT_EQ(m.devicesPerNode(), 4);
  EXPECT_EQ(m.spec().intraNode->topology, IntraNodeTopology::Mesh);
  EXPECT_EQ(m.spec().interNode->nicsPerNode, 1);
  EXPECT_DOUBLE_EQ(m.spec().interNode->bandwidth, 12.5e9); // 100 Gb/s
  EXPECT_DOUBLE_EQ(m.deviceType().peakFlopsFor("f32"), 10.6e12);
  EXPECT_DOUBLE_EQ(m.deviceType().peakFlopsFor("f16"), 21.2e12);
}

TEST(MachineFiles, K80Cluster) {
  Machine m = loadMachine("k80-16x4");
  EXPECT_EQ(m.numDevices(), 64);
  EXPECT_EQ(m.numNodes(), 16);
  EXPECT_EQ(m.spec().intraNode->topology, IntraNodeTopology::Bus);
  EXPECT_DOUBLE_EQ(m.spec().interNode->bandwidth, 7e9); // 56 Gb/s
  // No f16 arithmetic: falls back to the f32 peak.
  EXPECT_EQ(m.deviceType().peakFlopsFor("f16"),
            m.deviceType().peakFlopsFor("f32"));
}

TEST(MachineFiles, H100Node) {
  Machine m = loadMachine("h100-8");
  EXPECT_EQ(m.numDevices(), 8);
  EXPECT_EQ(m.numNodes(), 1);
  EXPECT_EQ(m.spec().intraNode->topology, IntraNodeTopology::Switch);
  EXPECT_FALSE(m.spec().interNode);
  EXPECT_DOUBLE_EQ(m.deviceType().peakFlopsFor("bf16"), 989.4e12);
}

TEST(MachineFiles, H100Cluster) {
  Machine m = loadMachine("h100-4x8");
  EXPECT_EQ(m.numDevices(), 32);
  EXPECT_EQ(m.numNodes(), 4);
  EXPECT_EQ(m.spec().interNode->nicsPerNode, 8);
  EXPECT_DOUBLE_EQ(m.spec().interNode->bandwidth, 50e9); // 400 Gb/s
  EXPECT_EQ(m.nicOf(13), 5);
  // Data parallel over all 32 GPUs goes hierarchical: one ring per NIC.
  EXPECT_EQ(m.collectiveCost(CollectiveKind::AllReduce, int64_t(1) << 30,
                             [] {
                               std::vector<int> all(32);
                               for (int i = 0; i < 32; ++i)
                                 all[i] = i;
                               return all;
                             }())
                .algorithm,
            "hierarchical ring");
}

TEST(MachineFiles, LocalCpu) {
  // `soap-profile --mpi` rewrites this file with what it measures on the
  // machine at hand (ranks, overheads), so only its shape is fixed.
  Machine m = loadMachine("cpu-local");
  EXPECT_GE(m.numDevices(), 1);
  EXPECT_EQ(m.numNodes(), 1);
  EXPECT_NE(m.spec().description.find("soap-profile"), std::string::npos);
  EXPECT_GE(m.deviceType().launchOverhead, 0);
  EXPECT_LT(m.deviceType().launchOverhead, 1e-3);
}

TEST(MachineFiles, WithDevicesTakesTheFirstOnes) {
  Machine m = loadMachine("p100-4x4");
  std::string error;
  std::optional<Machine> four = m.withDevices(4, error);
  ASSERT_TRUE(four) << error;
  EXPECT_EQ(four->numDevices(), 4);
  EXPECT_EQ(four->numNodes(), 1);
  EXPECT_EQ(four->links().size(), 12u); // mesh only, no NICs
  std::optional<Machine> six = m.withDevices(6, error);
  ASSERT_TRUE(six) << error;
  EXPECT_EQ(six->numNodes(), 2);
  // 12 mesh links on node 0, 2 on node 1, NIC out and in on each node.
  EXPECT_EQ(six->links().size(), 18u);
  EXPECT_EQ(linkNames(*six, six->route(5, 0)),
            (Names{"node1/nic0->net", "node0/net->nic0"}));
}

TEST(MachineFiles, WithDevicesBeyondTheMachine) {
  Machine m = loadMachine("p100-4x4");
  std::string error;
  EXPECT_FALSE(m.withDevices(17, error));
  EXPECT_EQ(error, "devices=17 is out of range: machine 'p100-4x4' has 16 "
                   "devices (4 nodes x 4)");
  EXPECT_FALSE(m.withDevices(0, error));
}

TEST(MachineFiles, WrittenSpecReadsBack) {
  Machine m = loadMachine("h100-4x8");
  std::string text = machineSpecToJson(m.spec());
  std::string error;
  std::optional<MachineSpec> again = parseMachineSpec(text, error);
  ASSERT_TRUE(again) << error;
  EXPECT_EQ(machineSpecToJson(*again), text);
  EXPECT_EQ(again->interNode->nicsPerNode, 8);
  EXPECT_EQ(again->deviceTypes.at("H100").memoryBytes,
            m.deviceType().memoryBytes);
}

} // namespace

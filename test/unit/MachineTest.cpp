//===- MachineTest.cpp - routes, collective costs, machine files ----------===//
//
// Small machines with round numbers, so every expected time below can be
// checked by hand against the formulas of docs/machines.md: links of
// 10 GB/s and 1 us inside a node, NICs of 5 GB/s and 4 us (one way) between
// nodes.
//
//===----------------------------------------------------------------------===//

#include "soap/machine/Machine.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace soap;
using json = nlohmann::json;

#ifndef SOAP_SOURCE_DIR
#error "SOAP_SOURCE_DIR must point at the source tree (machines/)"
#endif

namespace {

constexpr double kIntraBandwidth = 10e9;
constexpr double kIntraLatency = 1e-6;
constexpr double kNicBandwidth = 5e9;
constexpr double kNicLatency = 4e-6;

MachineSpec clusterSpec(IntraNodeTopology topology, int nodes,
                        int devicesPerNode, int nicsPerNode = 1) {
  MachineSpec spec;
  spec.name = "test";
  DeviceType gpu;
  gpu.name = "G";
  gpu.peakFlops = {{"f32", 1e12}, {"f16", 4e12}};
  gpu.memoryBandwidth = 1e11;
  gpu.memoryBytes = int64_t(1) << 30;
  gpu.launchOverhead = 5e-6;
  gpu.efficiency = {{"matmul", 0.5}};
  spec.deviceTypes["G"] = gpu;
  spec.deviceType = "G";
  spec.nodes = nodes;
  spec.devicesPerNode = devicesPerNode;
  spec.intraNode = IntraNodeSpec{topology, kIntraBandwidth, kIntraLatency};
  if (nodes > 1)
    spec.interNode = InterNodeSpec{nicsPerNode, kNicBandwidth, kNicLatency};
  return spec;
}

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

//===----------------------------------------------------------------------===//
// Malformed descriptions: one test per message
//===----------------------------------------------------------------------===//

json validMachine() {
  return json::parse(R"({
    "name": "small",
    "device_types": {
      "P100": {
        "peak_flops": {"f32": 10.6e12, "f16": 21.2e12},
        "memory_bandwidth": 732e9,
        "memory_bytes": 17179869184,
        "launch_overhead": 5e-6,
        "efficiency": {"matmul": 0.7}
      }
    },
    "device_type": "P100",
    "nodes": 2,
    "devices_per_node": 4,
    "intra_node": {"topology": "mesh", "bandwidth": 20e9, "latency": 2e-6},
    "inter_node": {"nics_per_node": 1, "bandwidth": 12.5e9, "latency": 5e-6},
    "collectives": {"algorithm": "auto", "hierarchical": true}
  })");
}

std::string parseError(const std::string &text) {
  std::string error;
  std::optional<Machine> machine = Machine::parse(text, error);
  EXPECT_FALSE(machine);
  return error;
}

std::string parseError(const json &j) { return parseError(j.dump()); }

TEST(MachineParse, ValidDescriptionParses) {
  std::string error;
  std::optional<Machine> m = Machine::parse(validMachine().dump(), error);
  ASSERT_TRUE(m) << error;
  EXPECT_EQ(m->numDevices(), 8);
  EXPECT_EQ(m->spec().collectives.hierarchical, Hierarchy::Hierarchical);
  EXPECT_DOUBLE_EQ(m->deviceType().efficiencyFor("matmul"), 0.7);
  EXPECT_DOUBLE_EQ(m->deviceType().efficiencyFor("conv"), 1.0);
}

TEST(MachineParse, InvalidJsonGivesThePosition) {
  std::string error = parseError(std::string("{\n  \"name\": \"x\",\n}"));
  EXPECT_EQ(error.rfind("invalid JSON: parse error at line 3, column 1", 0), 0u)
      << error;
}

TEST(MachineParse, NotAnObject) {
  EXPECT_EQ(parseError(std::string("[1, 2]")),
            "a machine description must be a JSON object, got array");
}

TEST(MachineParse, MissingField) {
  json j = validMachine();
  j.erase("name");
  EXPECT_EQ(parseError(j), "missing field 'name'");
}

TEST(MachineParse, MissingNestedField) {
  json j = validMachine();
  j["inter_node"].erase("bandwidth");
  EXPECT_EQ(parseError(j), "missing field 'inter_node.bandwidth'");
}

TEST(MachineParse, NegativeBandwidth) {
  json j = validMachine();
  j["inter_node"]["bandwidth"] = -3;
  EXPECT_EQ(parseError(j),
            "'inter_node.bandwidth' must be a positive number (bytes/s), got "
            "-3");
}

TEST(MachineParse, NegativeLatency) {
  json j = validMachine();
  j["intra_node"]["latency"] = -1e-6;
  EXPECT_EQ(parseError(j), "'intra_node.latency' must be a non-negative "
                           "number (seconds), got -1e-06");
}

TEST(MachineParse, WrongType) {
  json j = validMachine();
  j["nodes"] = "4";
  EXPECT_EQ(parseError(j),
            "'nodes' must be a positive integer (count), got \"4\"");
}

TEST(MachineParse, FractionalCount) {
  json j = validMachine();
  j["devices_per_node"] = 2.5;
  EXPECT_EQ(parseError(j),
            "'devices_per_node' must be a positive integer (count), got 2.5");
}

TEST(MachineParse, UnknownField) {
  json j = validMachine();
  j["intra_node"]["bandwith"] = 1e9;
  EXPECT_EQ(parseError(j), "unknown field 'intra_node.bandwith' (expected one "
                           "of: topology, bandwidth, latency)");
}

TEST(MachineParse, UnknownTopLevelField) {
  json j = validMachine();
  j["node"] = 2;
  EXPECT_EQ(parseError(j).rfind("unknown field 'node' (expected one of: name, "
                                "description, device_types",
                                0),
            0u);
}

TEST(MachineParse, UnknownDeviceType) {
  json j = validMachine();
  j["device_type"] = "V100";
  EXPECT_EQ(parseError(j), "'device_type' names 'V100' which is not among "
                           "device_types [P100]");
}

TEST(MachineParse, UnknownDtype) {
  json j = validMachine();
  j["device_types"]["P100"]["peak_flops"]["fp32"] = 1e12;
  EXPECT_EQ(parseError(j),
            "unknown field 'device_types.P100.peak_flops.fp32' (expected one "
            "of: f64, f32, tf32, f16, bf16, f8, i8)");
}

TEST(MachineParse, PeakWithoutF32) {
  json j = validMachine();
  j["device_types"]["P100"]["peak_flops"].erase("f32");
  EXPECT_EQ(parseError(j), "'device_types.P100.peak_flops' must give 'f32' "
                           "(the peak every other element type falls back "
                           "to)");
}

TEST(MachineParse, EfficiencyAboveOne) {
  json j = validMachine();
  j["device_types"]["P100"]["efficiency"]["matmul"] = 1.5;
  EXPECT_EQ(parseError(j), "'device_types.P100.efficiency.matmul' must be a "
                           "number in (0, 1], got 1.5");
}

TEST(MachineParse, UnknownOpClass) {
  json j = validMachine();
  j["device_types"]["P100"]["efficiency"]["gemm"] = 0.5;
  EXPECT_EQ(parseError(j),
            "unknown field 'device_types.P100.efficiency.gemm' (expected one "
            "of: matmul, conv, elementwise, reduction, data_movement)");
}

TEST(MachineParse, MemoryBytesMustBeAnInteger) {
  json j = validMachine();
  j["device_types"]["P100"]["memory_bytes"] = 1.5e3 + 0.25;
  EXPECT_EQ(parseError(j), "'device_types.P100.memory_bytes' must be a "
                           "positive integer (bytes), got 1500.25");
  // A whole number written with an exponent is fine.
  j["device_types"]["P100"]["memory_bytes"] = 16e9;
  std::string error;
  std::optional<Machine> m = Machine::parse(j.dump(), error);
  ASSERT_TRUE(m) << error;
  EXPECT_EQ(m->deviceType().memoryBytes, 16'000'000'000);
}

TEST(MachineParse, BadTopology) {
  json j = validMachine();
  j["intra_node"]["topology"] = "ring";
  EXPECT_EQ(parseError(j), "'intra_node.topology' must be one of \"switch\", "
                           "\"mesh\", \"bus\", got \"ring\"");
}

TEST(MachineParse, BadAlgorithm) {
  json j = validMachine();
  j["collectives"]["algorithm"] = "fastest";
  EXPECT_EQ(parseError(j), "'collectives.algorithm' must be one of \"ring\", "
                           "\"tree\", \"auto\", got \"fastest\"");
}

TEST(MachineParse, BadHierarchical) {
  json j = validMachine();
  j["collectives"]["hierarchical"] = "yes";
  EXPECT_EQ(parseError(j), "'collectives.hierarchical' must be true, false "
                           "or \"auto\", got \"yes\"");
}

TEST(MachineParse, InterNodeRequiredForSeveralNodes) {
  json j = validMachine();
  j.erase("inter_node");
  EXPECT_EQ(parseError(j),
            "missing field 'inter_node' (required when nodes > 1)");
}

TEST(MachineParse, IntraNodeRequiredForSeveralDevices) {
  json j = validMachine();
  j.erase("intra_node");
  EXPECT_EQ(parseError(j), "missing field 'intra_node' (required when "
                           "devices_per_node > 1)");
}

TEST(MachineParse, MoreNicsThanDevices) {
  json j = validMachine();
  j["inter_node"]["nics_per_node"] = 5;
  EXPECT_EQ(parseError(j),
            "'inter_node.nics_per_node' is 5, more than devices_per_node "
            "(4); device i uses NIC i % nics_per_node, so the extra NICs "
            "would carry nothing");
}

TEST(MachineParse, TooManyDevices) {
  json j = validMachine();
  j["devices_per_node"] = 1000000;
  j["intra_node"]["topology"] = "switch";
  EXPECT_EQ(parseError(j),
            "nodes * devices_per_node is " +
                std::to_string(j["nodes"].get<int64_t>() * 1000000) +
                ", more than the 65536 devices SOAP "
                "simulates");
}

TEST(MachineParse, MeshTooLarge) {
  json j = validMachine();
  j["nodes"] = 1;
  j.erase("inter_node");
  j["devices_per_node"] = 2048;
  j["intra_node"]["topology"] = "mesh";
  EXPECT_EQ(parseError(j), "a full mesh of 2048 devices per node has more "
                           "links than SOAP simulates (at most 1024 devices "
                           "per meshed node)");
}

// A large machine of switched nodes builds no per-pair tables: a search
// on 4 of its devices loads it at once.
TEST(MachineParse, LargeSwitchedNodeLoads) {
  json j = validMachine();
  j["nodes"] = 1;
  j.erase("inter_node");
  j["devices_per_node"] = 65536;
  j["intra_node"]["topology"] = "switch";
  std::string error;
  std::optional<Machine> machine = Machine::parse(j.dump(), error);
  ASSERT_TRUE(machine) << error;
  EXPECT_EQ(machine->numDevices(), 65536);
  std::optional<Machine> four = machine->withDevices(4, error);
  ASSERT_TRUE(four) << error;
  EXPECT_EQ(four->numDevices(), 4);
}

TEST(MachineParse, SectionMustBeAnObject) {
  json j = validMachine();
  j["intra_node"] = 20e9;
  EXPECT_EQ(parseError(j), "'intra_node' must be an object, got number");
}

TEST(MachineParse, CreateChecksSpecsBuiltInCode) {
  MachineSpec spec = clusterSpec(IntraNodeTopology::Switch, 2, 4);
  spec.interNode->latency = -1;
  std::string error;
  EXPECT_FALSE(Machine::create(spec, error));
  EXPECT_EQ(error, "'inter_node.latency' must be a non-negative number "
                   "(seconds), got -1");
}

TEST(MachineLoad, ErrorsNameTheFile) {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("soap-machine-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string path = (dir / "x.json").string();
  json j = validMachine();
  j["inter_node"]["bandwidth"] = -3;
  std::ofstream(path) << j.dump(2);
  std::string error;
  EXPECT_FALSE(Machine::load(path, error));
  EXPECT_EQ(error, path + ": 'inter_node.bandwidth' must be a positive "
                          "number (bytes/s), got -3");
  std::filesystem::remove_all(dir);
}

TEST(MachineLoad, MissingFile) {
  std::string error;
  EXPECT_FALSE(Machine::load("/nonexistent/m.json", error));
  EXPECT_EQ(error, "/nonexistent/m.json: cannot open the file: No such file "
                   "or directory");
}


//===----------------------------------------------------------------------===//
// Measured collectives (machine files written by soap-profile --mpi)
//===----------------------------------------------------------------------===//

/// validMachine() with measured all-gather times for groups of 4.
json withMeasuredAllGather() {
  json j = validMachine();
  j["collectives"]["measured"] = {
      {"ranks", 4},
      {"all_gather", {{1024, 2e-6}, {4096, 5e-6}, {16384, 20e-6}}}};
  return j;
}

TEST(MachineMeasured, InterpolatesBetweenAndBeyondThePoints) {
  std::string error;
  std::optional<Machine> m = Machine::parse(withMeasuredAllGather().dump(), error);
  ASSERT_TRUE(m) << error;
  std::vector<int> four = {0, 1, 2, 3};
  auto time = [&](int64_t bytes) {
    return m->collectiveCost(CollectiveKind::AllGather, bytes, four);
  };
  EXPECT_EQ(time(4096).algorithm, "measured");
  EXPECT_DOUBLE_EQ(time(4096).time, 5e-6);
  EXPECT_DOUBLE_EQ(time(2560).time, 3.5e-6);   // halfway from 1 KiB to 4 KiB
  EXPECT_DOUBLE_EQ(time(100).time, 2e-6);      // below: the smallest point
  EXPECT_DOUBLE_EQ(time(28672).time, 35e-6);   // above: the last slope
  EXPECT_DOUBLE_EQ(time(0).time, 0);
  // Other kinds, other group sizes and groups across nodes keep the
  // alpha-beta formulas.
  EXPECT_NE(m->collectiveCost(CollectiveKind::AllReduce, 4096, four).algorithm,
            "measured");
  EXPECT_NE(time(4096).time,
            m->collectiveCost(CollectiveKind::AllGather, 4096, {0, 1}).time);
  EXPECT_NE(m->collectiveCost(CollectiveKind::AllGather, 4096, {0, 1, 4, 5})
                .algorithm,
            "measured");
  EXPECT_FALSE(m->measuredCollectiveTime(CollectiveKind::AllGather, 4096, 2));
}

TEST(MachineMeasured, TransfersWithinANodeTakeTheMeasuredSendRecv) {
  json j = withMeasuredAllGather();
  j["collectives"]["measured"]["send_recv"] = {{64, 3e-6}, {65600, 13e-6}};
  std::string error;
  std::optional<Machine> m = Machine::parse(j.dump(), error);
  ASSERT_TRUE(m) << error;
  EXPECT_EQ(m->measuredTransferTime(0, 1, 64), 3e-6);
  EXPECT_DOUBLE_EQ(*m->measuredTransferTime(3, 1, 32832), 8e-6); // halfway
  // Across nodes and within one device: the links' latency and bandwidth.
  EXPECT_FALSE(m->measuredTransferTime(0, 4, 64));
  EXPECT_FALSE(m->measuredTransferTime(2, 2, 64));
  // A file without the table.
  m = Machine::parse(withMeasuredAllGather().dump(), error);
  ASSERT_TRUE(m) << error;
  EXPECT_FALSE(m->measuredTransferTime(0, 1, 64));
}

TEST(MachineMeasured, WrittenSpecReadsBack) {
  std::string error;
  json j = withMeasuredAllGather();
  j["collectives"]["measured"]["send_recv"] = {{64, 3e-6}, {65600, 13e-6}};
  std::optional<MachineSpec> spec = parseMachineSpec(j.dump(), error);
  ASSERT_TRUE(spec) << error;
  std::string text = machineSpecToJson(*spec);
  std::optional<MachineSpec> again = parseMachineSpec(text, error);
  ASSERT_TRUE(again) << error;
  EXPECT_EQ(machineSpecToJson(*again), text);
  ASSERT_TRUE(again->collectives.measured);
  EXPECT_EQ(again->collectives.measured->ranks, 4);
  EXPECT_EQ(again->collectives.measured->times.at(CollectiveKind::AllGather)
                .size(),
            3u);
  EXPECT_EQ(again->collectives.measured->sendRecv.size(), 2u);
}

TEST(MachineMeasured, RanksBeyondANode) {
  json j = withMeasuredAllGather();
  j["collectives"]["measured"]["ranks"] = 8;
  EXPECT_EQ(parseError(j), "'collectives.measured.ranks' must be an integer "
                           "in [2, devices_per_node = 4], got 8");
}

TEST(MachineMeasured, BytesMustIncrease) {
  json j = withMeasuredAllGather();
  j["collectives"]["measured"]["all_gather"][1][0] = 512;
  EXPECT_EQ(parseError(j), "'collectives.measured.all_gather' must list "
                           "increasing byte counts: 512 follows 1024");
}

TEST(MachineMeasured, SendRecvBytesMustIncrease) {
  json j = withMeasuredAllGather();
  j["collectives"]["measured"]["send_recv"] = {{64, 3e-6}, {64, 4e-6}};
  EXPECT_EQ(parseError(j), "'collectives.measured.send_recv' must list "
                           "increasing byte counts: 64 follows 64");
}

TEST(MachineMeasured, MalformedPoint) {
  json j = withMeasuredAllGather();
  j["collectives"]["measured"]["all_gather"][0] = {1024};
  EXPECT_EQ(parseError(j), "'collectives.measured.all_gather[0]' must be a "
                           "[bytes, seconds] pair, got [1024]");
  j = withMeasuredAllGather();
  j["collectives"]["measured"]["all_gather"][0] = {1024, -1};
  EXPECT_EQ(parseError(j), "'collectives.measured.all_gather[0]' must be "
                           "[bytes >= 1, seconds > 0], got [1024, -1]");
}

TEST(MachineMeasured, UnknownKind) {
  json j = withMeasuredAllGather();
  j["collectives"]["measured"]["allgather"] = json::array();
  EXPECT_EQ(parseError(j).rfind("unknown field "
                                "'collectives.measured.allgather' (expected "
                                "one of: ranks, all_reduce",
                                0),
            0u);
}

} // namespace

//===- MachineSpecTest.cpp - malformed machine files, measured tables ----===//
//
// One test per message a malformed machine file gets, and the tables of
// measured collectives and transfers (soap-profile --mpi) a file carries.
//
//===----------------------------------------------------------------------===//

#include "MachineTestSpecs.h"

#include "soap/machine/Machine.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace soap;
using namespace soap::testing;
using json = nlohmann::json;

namespace {

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
  std::optional<Machine> m =
      Machine::parse(withMeasuredAllGather().dump(), error);
  ASSERT_TRUE(m) << error;
  std::vector<int> four = {0, 1, 2, 3};
  auto time = [&](int64_t bytes) {
    return m->collectiveCost(CollectiveKind::AllGather, bytes, four);
  };
  EXPECT_EQ(time(4096).algorithm, "measured");
  EXPECT_DOUBLE_EQ(time(4096).time, 5e-6);
  EXPECT_DOUBLE_EQ(time(2560).time, 3.5e-6); // halfway from 1 KiB to 4 KiB
  EXPECT_DOUBLE_EQ(time(100).time, 2e-6);    // below: the smallest point
  EXPECT_DOUBLE_EQ(time(28672).time, 35e-6); // above: the last slope
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
  EXPECT_EQ(
      again->collectives.measured->times.at(CollectiveKind::AllGather).size(),
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

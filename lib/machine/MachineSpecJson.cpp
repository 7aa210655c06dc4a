//===- MachineSpecJson.cpp - machine files: reading and writing JSON -----===//
//
// Every error names the field by its path in the file ('inter_node.latency')
// and says what is wrong with the value it found. Unknown keys are errors so
// that a misspelt field is not silently ignored.
//
//===----------------------------------------------------------------------===//

#include "soap/machine/Machine.h"

#include "SpecText.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

namespace soap {

using namespace spec_text;

using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;

static const char *jsonTypeName(const json &value) {
  return value.type_name(); // "null", "object", "array", "string", ...
}

//===----------------------------------------------------------------------===//
// Reading JSON
//===----------------------------------------------------------------------===//

namespace {
/// Type checks on JSON values; values are checked by validateMachineSpec.
class Reader {
public:
  std::string error;

  bool object(const json &value, const std::string &path,
              const std::vector<std::string> &allowed) {
    if (!value.is_object())
      return fail(fieldName(path) + " must be an object, got " +
                  jsonTypeName(value));
    return keysAmong(value, path, allowed);
  }

  bool keysAmong(const json &value, const std::string &path,
                 const std::vector<std::string> &allowed) {
    for (auto it = value.begin(); it != value.end(); ++it)
      if (std::find(allowed.begin(), allowed.end(), it.key()) == allowed.end())
        return fail("unknown field " + fieldName(childPath(path, it.key())) +
                    " (expected one of: " + joined(allowed, ", ") + ")");
    return true;
  }

  /// The member `key` of `parent`, or null (with an error) when missing.
  const json *member(const json &parent, const std::string &parentPath,
                     const std::string &key, bool required = true) {
    auto it = parent.find(key);
    if (it != parent.end())
      return &*it;
    if (required)
      fail("missing field " + fieldName(childPath(parentPath, key)));
    return nullptr;
  }

  bool number(const json &value, const std::string &path, const char *what,
              double &out) {
    if (!value.is_number())
      return fail(fieldName(path) + " must be " + what + ", got " +
                  value.dump());
    out = value.get<double>();
    return true;
  }

  /// An integer; 1.6e10 is accepted when it has no fractional part.
  bool integer(const json &value, const std::string &path, const char *what,
               int64_t lo, int64_t hi, int64_t &out) {
    if (value.is_number_integer()) {
      // Unsigned values above INT64_MAX read as huge: compare as unsigned.
      if (value.is_number_unsigned() &&
          value.get<uint64_t>() > static_cast<uint64_t>(hi))
        return fail(fieldName(path) + " must be " + what + ", got " +
                    value.dump());
      int64_t v = value.get<int64_t>();
      if (v < lo || v > hi)
        return fail(fieldName(path) + " must be " + what + ", got " +
                    value.dump());
      out = v;
      return true;
    }
    if (value.is_number_float()) {
      double v = value.get<double>();
      if (std::isfinite(v) && std::floor(v) == v && v >= double(lo) &&
          v <= double(hi)) {
        out = static_cast<int64_t>(v);
        return true;
      }
    }
    return fail(fieldName(path) + " must be " + what + ", got " + value.dump());
  }

  bool string(const json &value, const std::string &path, std::string &out) {
    if (!value.is_string())
      return fail(fieldName(path) + " must be a string, got " + value.dump());
    out = value.get<std::string>();
    return true;
  }

  bool fail(std::string message) {
    if (error.empty())
      error = std::move(message);
    return false;
  }
};
} // namespace

static constexpr int64_t kMaxInt = std::numeric_limits<int>::max();
static constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();

static bool readNumberMap(Reader &r, const json &value, const std::string &path,
                          const char *what,
                          std::map<std::string, double> &out) {
  if (!value.is_object())
    return r.fail(fieldName(path) + " must be an object, got " +
                  jsonTypeName(value));
  for (auto it = value.begin(); it != value.end(); ++it) {
    double number = 0;
    if (!r.number(it.value(), childPath(path, it.key()), what, number))
      return false;
    out[it.key()] = number;
  }
  return true;
}

static bool readDeviceType(Reader &r, const json &value,
                           const std::string &path, DeviceType &type) {
  if (!r.object(value, path,
                {"description", "peak_flops", "memory_bandwidth",
                 "memory_bytes", "launch_overhead", "overlaps_communication",
                 "efficiency"}))
    return false;
  if (const json *v = r.member(value, path, "description", false))
    if (!r.string(*v, childPath(path, "description"), type.description))
      return false;
  const json *peak = r.member(value, path, "peak_flops");
  if (!peak || !readNumberMap(r, *peak, childPath(path, "peak_flops"),
                              "a positive number (FLOP/s)", type.peakFlops))
    return false;
  const json *bandwidth = r.member(value, path, "memory_bandwidth");
  if (!bandwidth ||
      !r.number(*bandwidth, childPath(path, "memory_bandwidth"),
                "a positive number (bytes/s)", type.memoryBandwidth))
    return false;
  const json *bytes = r.member(value, path, "memory_bytes");
  if (!bytes ||
      !r.integer(*bytes, childPath(path, "memory_bytes"),
                 "a positive integer (bytes)", 1, kMaxInt64, type.memoryBytes))
    return false;
  const json *launch = r.member(value, path, "launch_overhead");
  if (!launch ||
      !r.number(*launch, childPath(path, "launch_overhead"),
                "a non-negative number (seconds)", type.launchOverhead))
    return false;
  if (const json *v = r.member(value, path, "overlaps_communication", false)) {
    if (!v->is_boolean())
      return r.fail("'" + childPath(path, "overlaps_communication") +
                    "' must be true or false, got " + v->dump());
    type.overlapsCommunication = v->get<bool>();
  }
  if (const json *v = r.member(value, path, "efficiency", false))
    if (!readNumberMap(r, *v, childPath(path, "efficiency"),
                       "a number in (0, 1]", type.efficiency))
      return false;
  return true;
}

static bool readIntraNode(Reader &r, const json &value, IntraNodeSpec &out) {
  const std::string path = "intra_node";
  if (!r.object(value, path, {"topology", "bandwidth", "latency"}))
    return false;
  const json *topology = r.member(value, path, "topology");
  if (!topology)
    return false;
  std::string name;
  if (!r.string(*topology, "intra_node.topology", name))
    return false;
  if (name == "switch")
    out.topology = IntraNodeTopology::Switch;
  else if (name == "mesh")
    out.topology = IntraNodeTopology::Mesh;
  else if (name == "bus")
    out.topology = IntraNodeTopology::Bus;
  else
    return r.fail("'intra_node.topology' must be one of \"switch\", \"mesh\", "
                  "\"bus\", got " +
                  topology->dump());
  const json *bandwidth = r.member(value, path, "bandwidth");
  const json *latency = bandwidth ? r.member(value, path, "latency") : nullptr;
  return latency &&
         r.number(*bandwidth, "intra_node.bandwidth",
                  "a positive number (bytes/s)", out.bandwidth) &&
         r.number(*latency, "intra_node.latency",
                  "a non-negative number (seconds)", out.latency);
}

static bool readInterNode(Reader &r, const json &value, InterNodeSpec &out) {
  const std::string path = "inter_node";
  if (!r.object(value, path, {"nics_per_node", "bandwidth", "latency"}))
    return false;
  const json *nics = r.member(value, path, "nics_per_node");
  const json *bandwidth = nics ? r.member(value, path, "bandwidth") : nullptr;
  const json *latency = bandwidth ? r.member(value, path, "latency") : nullptr;
  int64_t nicCount = 0;
  if (!latency ||
      !r.integer(*nics, "inter_node.nics_per_node",
                 "a positive integer (count)", 1, kMaxInt, nicCount))
    return false;
  out.nicsPerNode = static_cast<int>(nicCount);
  return r.number(*bandwidth, "inter_node.bandwidth",
                  "a positive number (bytes/s)", out.bandwidth) &&
         r.number(*latency, "inter_node.latency",
                  "a non-negative number (seconds)", out.latency);
}

static bool readMeasured(Reader &r, const json &value,
                         MeasuredCollectives &out) {
  const std::string path = "collectives.measured";
  std::vector<std::string> allowed = {"ranks"};
  for (CollectiveKind kind : collectiveKinds())
    allowed.push_back(collectiveName(kind));
  allowed.push_back("send_recv");
  if (!r.object(value, path, allowed))
    return false;
  const json *ranks = r.member(value, path, "ranks");
  int64_t count = 0;
  if (!ranks || !r.integer(*ranks, path + ".ranks", "an integer >= 2 (count)",
                           2, 1 << 20, count))
    return false;
  out.ranks = static_cast<int>(count);
  auto readCurve = [&](const char *name,
                       std::vector<std::pair<int64_t, double>> &points) {
    const json *table = r.member(value, path, name, false);
    if (!table)
      return true;
    std::string tablePath = path + "." + name;
    const char *what = "a list of [bytes, seconds] pairs";
    if (!table->is_array())
      return r.fail("'" + tablePath + "' must be " + what + ", got " +
                    table->dump());
    for (size_t i = 0; i < table->size(); ++i) {
      const json &point = (*table)[i];
      std::string pointPath = tablePath + "[" + std::to_string(i) + "]";
      if (!point.is_array() || point.size() != 2)
        return r.fail("'" + pointPath +
                      "' must be a [bytes, seconds] pair, "
                      "got " +
                      point.dump());
      int64_t bytes = 0;
      double seconds = 0;
      if (!r.integer(point[0], pointPath + "[0]", "a positive integer (bytes)",
                     1, std::numeric_limits<int64_t>::max(), bytes) ||
          !r.number(point[1], pointPath + "[1]", "a positive number (seconds)",
                    seconds))
        return false;
      points.emplace_back(bytes, seconds);
    }
    return true;
  };
  for (CollectiveKind kind : collectiveKinds())
    if (r.member(value, path, collectiveName(kind), false) &&
        !readCurve(collectiveName(kind), out.times[kind]))
      return false;
  return readCurve("send_recv", out.sendRecv);
}

static bool readCollectives(Reader &r, const json &value, CollectiveSpec &out) {
  const std::string path = "collectives";
  if (!r.object(value, path, {"algorithm", "hierarchical", "measured"}))
    return false;
  if (const json *measured = r.member(value, path, "measured", false)) {
    out.measured.emplace();
    if (!readMeasured(r, *measured, *out.measured))
      return false;
  }
  if (const json *algorithm = r.member(value, path, "algorithm", false)) {
    std::string name;
    if (!r.string(*algorithm, "collectives.algorithm", name))
      return false;
    if (name == "ring")
      out.algorithm = CollectiveAlgorithm::Ring;
    else if (name == "tree")
      out.algorithm = CollectiveAlgorithm::Tree;
    else if (name == "auto")
      out.algorithm = CollectiveAlgorithm::Auto;
    else
      return r.fail("'collectives.algorithm' must be one of \"ring\", "
                    "\"tree\", \"auto\", got " +
                    algorithm->dump());
  }
  if (const json *hierarchical = r.member(value, path, "hierarchical", false)) {
    if (hierarchical->is_boolean())
      out.hierarchical =
          hierarchical->get<bool>() ? Hierarchy::Hierarchical : Hierarchy::Flat;
    else if (*hierarchical == "auto")
      out.hierarchical = Hierarchy::Auto;
    else
      return r.fail("'collectives.hierarchical' must be true, false or "
                    "\"auto\", got " +
                    hierarchical->dump());
  }
  return true;
}

/// nlohmann's messages start with "[json.exception.parse_error.101] ".
static std::string withoutExceptionId(const std::string &what) {
  if (!what.empty() && what.front() == '[') {
    size_t end = what.find("] ");
    if (end != std::string::npos)
      return what.substr(end + 2);
  }
  return what;
}

static bool readSpec(Reader &r, const json &root, MachineSpec &spec) {
  if (!root.is_object())
    return r.fail(std::string("a machine description must be a JSON object, "
                              "got ") +
                  jsonTypeName(root));
  if (!r.keysAmong(root, "",
                   {"name", "description", "device_types", "device_type",
                    "nodes", "devices_per_node", "intra_node", "inter_node",
                    "collectives"}))
    return false;

  const json *name = r.member(root, "", "name");
  if (!name || !r.string(*name, "name", spec.name))
    return false;
  if (const json *v = r.member(root, "", "description", false))
    if (!r.string(*v, "description", spec.description))
      return false;

  const json *types = r.member(root, "", "device_types");
  if (!types)
    return false;
  if (!types->is_object())
    return r.fail(std::string("'device_types' must be an object, got ") +
                  jsonTypeName(*types));
  for (auto it = types->begin(); it != types->end(); ++it) {
    DeviceType type;
    type.name = it.key();
    if (!readDeviceType(r, it.value(), "device_types." + it.key(), type))
      return false;
    spec.deviceTypes[it.key()] = std::move(type);
  }

  const json *deviceType = r.member(root, "", "device_type");
  if (!deviceType || !r.string(*deviceType, "device_type", spec.deviceType))
    return false;

  int64_t count = 0;
  const json *nodes = r.member(root, "", "nodes");
  if (!nodes || !r.integer(*nodes, "nodes", "a positive integer (count)", 1,
                           kMaxInt, count))
    return false;
  spec.nodes = static_cast<int>(count);
  const json *perNode = r.member(root, "", "devices_per_node");
  if (!perNode || !r.integer(*perNode, "devices_per_node",
                             "a positive integer (count)", 1, kMaxInt, count))
    return false;
  spec.devicesPerNode = static_cast<int>(count);

  if (const json *v = r.member(root, "", "intra_node", false)) {
    spec.intraNode.emplace();
    if (!readIntraNode(r, *v, *spec.intraNode))
      return false;
  }
  if (const json *v = r.member(root, "", "inter_node", false)) {
    spec.interNode.emplace();
    if (!readInterNode(r, *v, *spec.interNode))
      return false;
  }
  if (const json *v = r.member(root, "", "collectives", false))
    if (!readCollectives(r, *v, spec.collectives))
      return false;
  return true;
}

std::optional<MachineSpec> parseMachineSpec(const std::string &jsonText,
                                            std::string &error) {
  json root;
  try {
    root = json::parse(jsonText);
  } catch (const json::exception &e) {
    error = "invalid JSON: " + withoutExceptionId(e.what());
    return std::nullopt;
  }
  Reader r;
  MachineSpec spec;
  bool ok = false;
  try {
    ok = readSpec(r, root, spec);
  } catch (const json::exception &e) {
    // Not expected: every access is type-checked first.
    r.fail("invalid machine description: " + withoutExceptionId(e.what()));
  }
  if (!ok) {
    error = r.error;
    return std::nullopt;
  }
  if (std::optional<std::string> problem = validateMachineSpec(spec)) {
    error = *problem;
    return std::nullopt;
  }
  return spec;
}

//===----------------------------------------------------------------------===//
// Writing JSON
//===----------------------------------------------------------------------===//

std::string machineSpecToJson(const MachineSpec &spec) {
  ordered_json root;
  root["name"] = spec.name;
  if (!spec.description.empty())
    root["description"] = spec.description;
  ordered_json types = ordered_json::object();
  for (const auto &[name, type] : spec.deviceTypes) {
    ordered_json t;
    if (!type.description.empty())
      t["description"] = type.description;
    ordered_json peak = ordered_json::object();
    for (const std::string &dtype : machineDtypes()) // canonical order
      if (type.peakFlops.count(dtype))
        peak[dtype] = type.peakFlops.at(dtype);
    t["peak_flops"] = peak;
    t["memory_bandwidth"] = type.memoryBandwidth;
    t["memory_bytes"] = type.memoryBytes;
    t["launch_overhead"] = type.launchOverhead;
    if (!type.overlapsCommunication)
      t["overlaps_communication"] = false;
    if (!type.efficiency.empty()) {
      ordered_json efficiency = ordered_json::object();
      for (const std::string &opClass : machineOpClasses())
        if (type.efficiency.count(opClass))
          efficiency[opClass] = type.efficiency.at(opClass);
      t["efficiency"] = efficiency;
    }
    types[name] = t;
  }
  root["device_types"] = types;
  root["device_type"] = spec.deviceType;
  root["nodes"] = spec.nodes;
  root["devices_per_node"] = spec.devicesPerNode;
  if (spec.intraNode)
    root["intra_node"] = {{"topology", topologyName(spec.intraNode->topology)},
                          {"bandwidth", spec.intraNode->bandwidth},
                          {"latency", spec.intraNode->latency}};
  if (spec.interNode)
    root["inter_node"] = {{"nics_per_node", spec.interNode->nicsPerNode},
                          {"bandwidth", spec.interNode->bandwidth},
                          {"latency", spec.interNode->latency}};
  ordered_json hierarchical = "auto";
  if (spec.collectives.hierarchical != Hierarchy::Auto)
    hierarchical = spec.collectives.hierarchical == Hierarchy::Hierarchical;
  root["collectives"] = {
      {"algorithm", algorithmName(spec.collectives.algorithm)},
      {"hierarchical", hierarchical}};
  if (const std::optional<MeasuredCollectives> &m = spec.collectives.measured) {
    ordered_json measured;
    measured["ranks"] = m->ranks;
    for (const auto &[kind, points] : m->times) {
      ordered_json table = ordered_json::array();
      for (const auto &[bytes, seconds] : points)
        table.push_back({bytes, seconds});
      measured[collectiveName(kind)] = table;
    }
    if (!m->sendRecv.empty()) {
      ordered_json table = ordered_json::array();
      for (const auto &[bytes, seconds] : m->sendRecv)
        table.push_back({bytes, seconds});
      measured["send_recv"] = table;
    }
    root["collectives"]["measured"] = measured;
  }
  return root.dump(2) + "\n";
}

} // namespace soap

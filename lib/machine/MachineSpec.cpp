//===- MachineSpec.cpp - machine files: reading, checking, writing --------===//
//
// Every error names the field by its path in the file ('inter_node.latency')
// and says what is wrong with the value it found. Unknown keys are errors so
// that a misspelt field is not silently ignored.
//
//===----------------------------------------------------------------------===//

#include "soap/machine/Machine.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace soap {

using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;

const std::vector<std::string> &machineDtypes() {
  static const std::vector<std::string> dtypes = {"f64",  "f32", "tf32", "f16",
                                                  "bf16", "f8",  "i8"};
  return dtypes;
}

const std::vector<std::string> &machineOpClasses() {
  static const std::vector<std::string> classes = {
      "matmul", "conv", "elementwise", "reduction", "data_movement"};
  return classes;
}

double DeviceType::peakFlopsFor(const std::string &dtype) const {
  auto it = peakFlops.find(dtype);
  if (it == peakFlops.end())
    it = peakFlops.find("f32");
  return it == peakFlops.end() ? 0 : it->second;
}

double DeviceType::efficiencyFor(const std::string &opClass) const {
  auto it = efficiency.find(opClass);
  return it == efficiency.end() ? 1.0 : it->second;
}

const char *topologyName(IntraNodeTopology topology) {
  switch (topology) {
  case IntraNodeTopology::Switch:
    return "switch";
  case IntraNodeTopology::Mesh:
    return "mesh";
  case IntraNodeTopology::Bus:
    return "bus";
  }
  return "switch";
}

const char *algorithmName(CollectiveAlgorithm algorithm) {
  switch (algorithm) {
  case CollectiveAlgorithm::Ring:
    return "ring";
  case CollectiveAlgorithm::Tree:
    return "tree";
  case CollectiveAlgorithm::Auto:
    return "auto";
  }
  return "auto";
}

const char *hierarchyName(Hierarchy hierarchy) {
  switch (hierarchy) {
  case Hierarchy::Flat:
    return "flat";
  case Hierarchy::Hierarchical:
    return "hierarchical";
  case Hierarchy::Auto:
    return "auto";
  }
  return "auto";
}

const std::vector<CollectiveKind> &collectiveKinds() {
  static const std::vector<CollectiveKind> kinds = {
      CollectiveKind::AllReduce, CollectiveKind::AllGather,
      CollectiveKind::ReduceScatter, CollectiveKind::Broadcast,
      CollectiveKind::AllToAll};
  return kinds;
}

double interpolateCurve(const std::vector<std::pair<int64_t, double>> &points,
                        double x, bool extendSlope) {
  assert(!points.empty() && "a curve needs at least one point");
  auto above = std::lower_bound(
      points.begin(), points.end(), x,
      [](const std::pair<int64_t, double> &p, double v) { return p.first < v; });
  if (above == points.begin())
    return above->second;
  if (above == points.end()) {
    const auto &last = points.back();
    if (!extendSlope || points.size() == 1)
      return last.second * x / double(last.first);
    const auto &previous = points[points.size() - 2];
    double slope =
        (last.second - previous.second) / double(last.first - previous.first);
    return std::max(last.second + slope * (x - double(last.first)), 0.0);
  }
  const auto &below = *(above - 1);
  double f = (x - double(below.first)) / double(above->first - below.first);
  return below.second + f * (above->second - below.second);
}

std::optional<double>
MeasuredCollectives::interpolate(CollectiveKind kind, int64_t bytes) const {
  auto found = times.find(kind);
  if (found == times.end() || found->second.empty())
    return std::nullopt;
  if (bytes <= 0)
    return 0.0;
  return interpolateCurve(found->second, double(bytes), /*extendSlope=*/true);
}

const char *collectiveName(CollectiveKind kind) {
  switch (kind) {
  case CollectiveKind::AllReduce:
    return "all_reduce";
  case CollectiveKind::AllGather:
    return "all_gather";
  case CollectiveKind::ReduceScatter:
    return "reduce_scatter";
  case CollectiveKind::Broadcast:
    return "broadcast";
  case CollectiveKind::AllToAll:
    return "all_to_all";
  }
  return "all_reduce";
}

//===----------------------------------------------------------------------===//
// Messages
//===----------------------------------------------------------------------===//

/// Shortest decimal form that reads back as the same double.
static std::string formatNumber(double value) {
  char buffer[64];
  for (int precision = 15; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value)
      break;
  }
  return buffer;
}

static std::string joined(const std::vector<std::string> &names,
                          const char *separator) {
  std::string out;
  for (const std::string &name : names) {
    if (!out.empty())
      out += separator;
    out += name;
  }
  return out;
}

static std::string fieldName(const std::string &path) {
  return "'" + path + "'";
}

static std::string childPath(const std::string &parent,
                             const std::string &key) {
  return parent.empty() ? key : parent + "." + key;
}

static const char *jsonTypeName(const json &value) {
  return value.type_name(); // "null", "object", "array", "string", ...
}

//===----------------------------------------------------------------------===//
// Checking values (shared by parsing and by specs built in C++)
//===----------------------------------------------------------------------===//

namespace {
/// Collects the first problem found.
class Checker {
public:
  std::optional<std::string> problem;

  bool positive(double value, const std::string &path, const char *unit) {
    if (std::isfinite(value) && value > 0)
      return true;
    return fail(fieldName(path) + " must be a positive number (" + unit +
                "), got " + formatNumber(value));
  }
  bool nonNegative(double value, const std::string &path, const char *unit) {
    if (std::isfinite(value) && value >= 0)
      return true;
    return fail(fieldName(path) + " must be a non-negative number (" + unit +
                "), got " + formatNumber(value));
  }
  bool fraction(double value, const std::string &path) {
    if (std::isfinite(value) && value > 0 && value <= 1)
      return true;
    return fail(fieldName(path) + " must be a number in (0, 1], got " +
                formatNumber(value));
  }
  bool positiveInt(int64_t value, const std::string &path, const char *unit) {
    if (value > 0)
      return true;
    return fail(fieldName(path) + " must be a positive integer (" + unit +
                "), got " + std::to_string(value));
  }
  bool known(const std::string &key, const std::string &parent,
             const std::vector<std::string> &allowed) {
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end())
      return true;
    return fail("unknown field " + fieldName(childPath(parent, key)) +
                " (expected one of: " + joined(allowed, ", ") + ")");
  }
  bool fail(std::string message) {
    if (!problem)
      problem = std::move(message);
    return false;
  }
};
} // namespace

static void checkDeviceType(Checker &c, const DeviceType &type,
                            const std::string &path) {
  std::string peakPath = childPath(path, "peak_flops");
  for (const auto &[dtype, flops] : type.peakFlops)
    if (!c.known(dtype, peakPath, machineDtypes()) ||
        !c.positive(flops, childPath(peakPath, dtype), "FLOP/s"))
      return;
  if (!type.peakFlops.count("f32")) {
    c.fail(fieldName(peakPath) + " must give 'f32' (the peak every other "
                                 "element type falls back to)");
    return;
  }
  if (!c.positive(type.memoryBandwidth, childPath(path, "memory_bandwidth"),
                  "bytes/s") ||
      !c.positiveInt(type.memoryBytes, childPath(path, "memory_bytes"),
                     "bytes") ||
      !c.nonNegative(type.launchOverhead, childPath(path, "launch_overhead"),
                     "seconds"))
    return;
  std::string efficiencyPath = childPath(path, "efficiency");
  for (const auto &[opClass, fraction] : type.efficiency)
    if (!c.known(opClass, efficiencyPath, machineOpClasses()) ||
        !c.fraction(fraction, childPath(efficiencyPath, opClass)))
      return;
}

/// Why the measured (bytes, seconds) points at `path` are not a curve, if
/// they are not: at least one point, positive values, increasing bytes.
static std::optional<std::string>
checkMeasuredCurve(const std::string &path,
                   const std::vector<std::pair<int64_t, double>> &points) {
  if (points.empty())
    return "'" + path + "' must list at least one [bytes, seconds] point";
  for (size_t i = 0; i < points.size(); ++i) {
    if (points[i].first < 1 || !(points[i].second > 0) ||
        !std::isfinite(points[i].second))
      return "'" + path + "[" + std::to_string(i) +
             "]' must be [bytes >= 1, seconds > 0], got [" +
             std::to_string(points[i].first) + ", " +
             formatNumber(points[i].second) + "]";
    if (i > 0 && points[i].first <= points[i - 1].first)
      return "'" + path + "' must list increasing byte counts: " +
             std::to_string(points[i].first) + " follows " +
             std::to_string(points[i - 1].first);
  }
  return std::nullopt;
}

std::optional<std::string> validateMachineSpec(const MachineSpec &spec) {
  Checker c;
  if (spec.name.empty())
    return "'name' must be a non-empty string";
  if (spec.deviceTypes.empty())
    return "'device_types' must define at least one device type";
  for (const auto &[name, type] : spec.deviceTypes) {
    checkDeviceType(c, type, "device_types." + name);
    if (c.problem)
      return c.problem;
  }
  if (!spec.deviceTypes.count(spec.deviceType)) {
    std::vector<std::string> names;
    for (const auto &entry : spec.deviceTypes)
      names.push_back(entry.first);
    return "'device_type' names '" + spec.deviceType +
           "' which is not among device_types [" + joined(names, ", ") + "]";
  }
  if (!c.positiveInt(spec.nodes, "nodes", "count") ||
      !c.positiveInt(spec.devicesPerNode, "devices_per_node", "count"))
    return c.problem;
  // Bounds that keep a machine's tables small: the simulator keeps one
  // entry per device and, in a full mesh, per pair of a node's devices.
  constexpr int64_t kMaxMesh = 1024;
  if (static_cast<int64_t>(spec.nodes) * spec.devicesPerNode > kMaxDevices)
    return "nodes * devices_per_node is " +
           std::to_string(static_cast<int64_t>(spec.nodes) *
                          spec.devicesPerNode) +
           ", more than the " + std::to_string(kMaxDevices) +
           " devices SOAP simulates";
  if (spec.intraNode && spec.intraNode->topology == IntraNodeTopology::Mesh &&
      spec.devicesPerNode > kMaxMesh)
    return "a full mesh of " + std::to_string(spec.devicesPerNode) +
           " devices per node has more links than SOAP simulates (at most " +
           std::to_string(kMaxMesh) + " devices per meshed node)";

  if (spec.intraNode) {
    if (!c.positive(spec.intraNode->bandwidth, "intra_node.bandwidth",
                    "bytes/s") ||
        !c.nonNegative(spec.intraNode->latency, "intra_node.latency",
                       "seconds"))
      return c.problem;
  } else if (spec.devicesPerNode > 1) {
    return "missing field 'intra_node' (required when devices_per_node > 1)";
  }

  if (spec.interNode) {
    const InterNodeSpec &inter = *spec.interNode;
    if (!c.positiveInt(inter.nicsPerNode, "inter_node.nics_per_node",
                       "count") ||
        !c.positive(inter.bandwidth, "inter_node.bandwidth", "bytes/s") ||
        !c.nonNegative(inter.latency, "inter_node.latency", "seconds"))
      return c.problem;
    if (inter.nicsPerNode > spec.devicesPerNode)
      return "'inter_node.nics_per_node' is " +
             std::to_string(inter.nicsPerNode) +
             ", more than devices_per_node (" +
             std::to_string(spec.devicesPerNode) +
             "); device i uses NIC i % nics_per_node, so the extra NICs "
             "would carry nothing";
  } else if (spec.nodes > 1) {
    return "missing field 'inter_node' (required when nodes > 1)";
  }
  if (const std::optional<MeasuredCollectives> &m = spec.collectives.measured) {
    if (m->ranks < 2 || m->ranks > spec.devicesPerNode)
      return "'collectives.measured.ranks' must be an integer in [2, "
             "devices_per_node = " +
             std::to_string(spec.devicesPerNode) + "], got " +
             std::to_string(m->ranks);
    for (const auto &[kind, points] : m->times)
      if (std::optional<std::string> error = checkMeasuredCurve(
              std::string("collectives.measured.") + collectiveName(kind),
              points))
        return error;
    if (!m->sendRecv.empty())
      if (std::optional<std::string> error =
              checkMeasuredCurve("collectives.measured.send_recv", m->sendRecv))
        return error;
  }
  return std::nullopt;
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
  if (!ranks || !r.integer(*ranks, path + ".ranks",
                           "an integer >= 2 (count)", 2, 1 << 20, count))
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
        return r.fail("'" + pointPath + "' must be a [bytes, seconds] pair, "
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

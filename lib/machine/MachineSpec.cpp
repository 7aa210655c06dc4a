//===- MachineSpec.cpp - machine files: names, curves and checking -------===//
//
// Every error names the field by its path in the file ('inter_node.latency')
// and says what is wrong with the value it found. Unknown keys are errors so
// that a misspelt field is not silently ignored.
//
//===----------------------------------------------------------------------===//

#include "soap/machine/Machine.h"

#include "SpecText.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace soap {

using namespace spec_text;

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

} // namespace soap

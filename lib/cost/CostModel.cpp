//===- CostModel.cpp - time of a task on a device -------------------------===//

#include "soap/cost/CostModel.h"
#include "soap/graph/Strategy.h"
#include "soap/machine/Machine.h"
#include "soap/support/AtomicFile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

using json = nlohmann::json;

namespace soap {

//===----------------------------------------------------------------------===//
// Profile database
//===----------------------------------------------------------------------===//

std::string ProfileDatabase::key(const OpGraph &graph, int node,
                                 const std::vector<int64_t> &shard,
                                 const std::string &deviceKind, bool madeCopy) {
  const OpNode &n = graph.nodes[node];
  std::ostringstream os;
  os << n.opName << ' ';
  std::string dtype = "none";
  os << '[';
  for (size_t a = 0; a < n.accesses.size(); ++a) {
    const NodeAccess &access = n.accesses[a];
    const GraphTensor &t = graph.tensors[access.tensor];
    if (a == 0)
      dtype = t.dtype;
    os << (a ? "," : "");
    for (size_t d = 0; d < access.indices.size(); ++d) {
      int64_t extent = n.partitionable
                           ? accessExtent(access.indices[d], shard, t.shape[d])
                           : t.shape[d];
      os << (d ? "x" : "") << extent;
    }
  }
  os << "] " << dtype << ' ' << deviceKind;
  if (madeCopy && n.relayoutCopy)
    os << " made";
  return os.str();
}

std::string ProfileDatabase::onRanksKey(const std::string &key, int ranks) {
  return key + " on x" + std::to_string(ranks);
}

bool ProfileDatabase::hasOnRanksEntries(int ranks) const {
  std::string suffix = onRanksKey("", ranks);
  return std::any_of(entries.begin(), entries.end(), [&](const auto &entry) {
    const std::string &key = entry.first;
    return key.size() > suffix.size() &&
           key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0;
  });
}

namespace {
std::string inStepSuffix(int group) {
  return group > 0 ? " in-step x" + std::to_string(group) : "";
}

/// The (count, seconds) points of the keys "<prefix><count><suffix>",
/// sorted.
std::vector<std::pair<int64_t, double>>
curveOf(const std::map<std::string, ProfileDatabase::Entry> &entries,
        const std::string &prefix, const std::string &suffix) {
  std::vector<std::pair<int64_t, double>> curve;
  for (auto it = entries.lower_bound(prefix);
       it != entries.end() && it->first.compare(0, prefix.size(), prefix) == 0;
       ++it) {
    const std::string &key = it->first;
    if (key.size() <= prefix.size() + suffix.size() ||
        key.compare(key.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    std::string count = key.substr(
        prefix.size(), key.size() - prefix.size() - suffix.size());
    char *end = nullptr;
    long long n = std::strtoll(count.c_str(), &end, 10);
    if (end && *end == '\0' && n > 0)
      curve.emplace_back(n, it->second.forward);
  }
  std::sort(curve.begin(), curve.end());
  return curve;
}
} // namespace

std::string ProfileDatabase::updateKey(const std::string &optimizer,
                                       int64_t elements,
                                       const std::string &deviceKind,
                                       int inStepGroup) {
  return "soap.update " + optimizer + " [" + std::to_string(elements) +
         "] f32 " + deviceKind + inStepSuffix(inStepGroup);
}

std::vector<std::pair<int64_t, double>>
ProfileDatabase::updateCurve(const std::string &optimizer,
                             const std::string &deviceKind,
                             int inStepGroup) const {
  return curveOf(entries, "soap.update " + optimizer + " [",
                 "] f32 " + deviceKind + inStepSuffix(inStepGroup));
}

std::string ProfileDatabase::collectiveKey(CollectiveKind kind, int64_t bytes,
                                           const std::string &deviceKind,
                                           int group) {
  return std::string("soap.") + collectiveName(kind) + " [" +
         std::to_string(bytes) + "] " + deviceKind + inStepSuffix(group);
}

std::map<int, std::vector<std::pair<int64_t, double>>>
ProfileDatabase::collectiveCurves(CollectiveKind kind,
                                  const std::string &deviceKind) const {
  std::map<int, std::vector<std::pair<int64_t, double>>> curves;
  std::string prefix = std::string("soap.") + collectiveName(kind) + " [";
  std::string middle = "] " + deviceKind + " in-step x";
  for (auto it = entries.lower_bound(prefix);
       it != entries.end() && it->first.compare(0, prefix.size(), prefix) == 0;
       ++it) {
    const std::string &key = it->first;
    size_t at = key.find(middle, prefix.size());
    if (at == std::string::npos)
      continue;
    char *end = nullptr;
    long long bytes = std::strtoll(key.c_str() + prefix.size(), &end, 10);
    if (end != key.c_str() + at || bytes <= 0)
      continue;
    long long group = std::strtoll(key.c_str() + at + middle.size(), &end, 10);
    if (*end != '\0' || group < 1)
      continue;
    curves[static_cast<int>(group)].emplace_back(bytes, it->second.forward);
  }
  for (auto &[group, curve] : curves)
    std::sort(curve.begin(), curve.end());
  return curves;
}

std::optional<ProfileDatabase::Entry>
ProfileDatabase::lookup(const std::string &key) const {
  auto it = entries.find(key);
  if (it == entries.end())
    return std::nullopt;
  return it->second;
}

void ProfileDatabase::record(const std::string &key, Entry entry) {
  entries[key] = entry;
}

std::string ProfileDatabase::toJSON() const {
  json j;
  j["version"] = 1;
  json list = json::array();
  for (const auto &[key, entry] : entries) {
    json e = {{"key", key},
              {"forward_s", entry.forward},
              {"backward_s", entry.backward}};
    if (entry.backwardEstimated)
      e["backward_estimated"] = true;
    if (entry.includesGradientSums)
      e["includes_gradient_sums"] = true;
    if (entry.ranks > 1)
      e["ranks"] = entry.ranks;
    list.push_back(std::move(e));
  }
  j["entries"] = list;
  return j.dump(1);
}

std::optional<ProfileDatabase>
ProfileDatabase::fromJSON(const std::string &text, std::string &error) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    error = "profile database: not valid JSON";
    return std::nullopt;
  }
  if (!j.contains("entries") || !j["entries"].is_array()) {
    error = "profile database: 'entries' must be an array";
    return std::nullopt;
  }
  ProfileDatabase db;
  for (size_t i = 0; i < j["entries"].size(); ++i) {
    const json &e = j["entries"][i];
    std::string path = "entries[" + std::to_string(i) + "]";
    if (!e.is_object() || !e.contains("key") || !e["key"].is_string()) {
      error = "profile database: '" + path + ".key' must be a string";
      return std::nullopt;
    }
    Entry entry;
    for (auto [field, out] : {std::pair<const char *, double *>{"forward_s", &entry.forward},
                              {"backward_s", &entry.backward}}) {
      if (!e.contains(field) || !e[field].is_number() ||
          e[field].get<double>() < 0) {
        error = "profile database: '" + path + "." + field +
                "' must be a non-negative number of seconds";
        return std::nullopt;
      }
      *out = e[field].get<double>();
    }
    for (auto [field, out] :
         {std::pair<const char *, bool *>{"backward_estimated",
                                          &entry.backwardEstimated},
          {"includes_gradient_sums", &entry.includesGradientSums}}) {
      if (!e.contains(field))
        continue;
      if (!e[field].is_boolean()) {
        error = "profile database: '" + path + "." + field +
                "' must be true or false";
        return std::nullopt;
      }
      *out = e[field].get<bool>();
    }
    if (e.contains("ranks")) {
      if (!e["ranks"].is_number_integer() || e["ranks"].get<int64_t>() < 1 ||
          e["ranks"].get<int64_t>() > 1 << 20) {
        error = "profile database: '" + path +
                ".ranks' must be a positive number of ranks";
        return std::nullopt;
      }
      entry.ranks = e["ranks"].get<int>();
    }
    db.entries[e["key"].get<std::string>()] = entry;
  }
  return db;
}

std::optional<ProfileDatabase> ProfileDatabase::load(const std::string &path,
                                                     std::string &error) {
  std::ifstream in(path);
  if (!in) {
    error = "cannot read profile database '" + path + "'";
    return std::nullopt;
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  auto db = fromJSON(buffer.str(), error);
  if (!db)
    error = path + ": " + error;
  return db;
}

bool ProfileDatabase::save(const std::string &path, std::string &error) const {
  return writeFileAtomically(path, toJSON() + "\n", error);
}

//===----------------------------------------------------------------------===//
// Cost model
//===----------------------------------------------------------------------===//

int optimizerStateCopies(Optimizer optimizer) {
  switch (optimizer) {
  case Optimizer::SGD:
    return 0;
  case Optimizer::Momentum:
    return 1;
  case Optimizer::Adam:
    return 2;
  }
  return 0;
}

const char *optimizerName(Optimizer optimizer) {
  switch (optimizer) {
  case Optimizer::SGD:
    return "sgd";
  case Optimizer::Momentum:
    return "momentum";
  case Optimizer::Adam:
    return "adam";
  }
  return "sgd";
}

std::optional<Optimizer> parseOptimizer(const std::string &name) {
  for (Optimizer o : {Optimizer::SGD, Optimizer::Momentum, Optimizer::Adam})
    if (name == optimizerName(o))
      return o;
  return std::nullopt;
}

CostModel::CostModel(const Machine &machine, const ProfileDatabase *profile,
                     Optimizer optimizer)
    : target(machine), profile(profile), optimizerKind(optimizer) {
  if (profile) {
    updateCurve = profile->updateCurve(optimizerName(optimizer),
                                       machine.deviceType().name);
    sgdCurve = profile->updateCurve(optimizerName(Optimizer::SGD),
                                    machine.deviceType().name);
    for (int group = 1; group <= machine.numDevices(); ++group) {
      auto updates = profile->updateCurve(optimizerName(optimizer),
                                          machine.deviceType().name, group);
      if (!updates.empty())
        inStepUpdates[group] = std::move(updates);
    }
    for (CollectiveKind kind : collectiveKinds())
      for (auto &[group, curve] :
           profile->collectiveCurves(kind, machine.deviceType().name))
        inStepCollectives[{kind, group}] = std::move(curve);
    onRanksEntries = machine.numDevices() > 1 &&
                     profile->hasOnRanksEntries(machine.numDevices());
  }
}

double CostModel::rooflineTime(double flops, double bytes,
                               const std::string &dtype, OpClass opClass,
                               int device) const {
  const DeviceType &type = target.deviceType();
  double peak = type.peakFlopsFor(dtype);
  double efficiency = type.efficiencyFor(opClassName(opClass));
  double computeTime = flops > 0 ? flops / (peak * efficiency) : 0;
  double memoryTime = bytes / type.memoryBandwidth;
  // Copies compute nothing: their efficiency is that of the bandwidth.
  if (opClass == OpClass::DataMovement)
    memoryTime /= efficiency;
  return type.launchOverhead + std::max(computeTime, memoryTime);
}

std::optional<ProfiledShard>
findProfiledShard(const OpGraph &graph, int node,
                  const std::vector<int64_t> &shard,
                  const ProfileDatabase &profile, const std::string &deviceKind,
                  bool madeCopy) {
  auto measured = [&](const std::vector<int64_t> &candidate) {
    return profile.lookup(
        ProfileDatabase::key(graph, node, candidate, deviceKind, madeCopy));
  };
  if (auto entry = measured(shard))
    return ProfiledShard{*entry, shard, true};
  const OpNode &n = graph.nodes[node];
  if (!n.partitionable || n.loopSizes.empty())
    return std::nullopt;
  // The same number of tasks with the split on one loop (the shards of
  // soap-profile's named strategies), then the whole op; the nearest in
  // work (iteration points; a gather's lookup loop is no work) wins, a
  // split on a loop `shard` splits too before another.
  LoopNest nest = n.loopNest(graph.tensors);
  auto work = [&](const std::vector<int64_t> &sizes) {
    return std::max(nest.points(sizes), 1.0);
  };
  int64_t degree = 1;
  for (size_t l = 0; l < n.loopSizes.size() && l < shard.size(); ++l)
    degree *= (n.loopSizes[l] + std::max<int64_t>(shard[l], 1) - 1) /
              std::max<int64_t>(shard[l], 1);
  std::vector<std::vector<int64_t>> candidates;
  if (degree > 1)
    for (size_t l = 0; l < n.loopSizes.size(); ++l)
      if (n.loopSizes[l] % degree == 0) {
        candidates.push_back(n.loopSizes);
        candidates.back()[l] /= degree;
      }
  candidates.push_back(n.loopSizes);
  std::optional<ProfiledShard> best;
  double bestScore = 0;
  for (const std::vector<int64_t> &candidate : candidates) {
    if (candidate == shard)
      continue;
    auto entry = measured(candidate);
    if (!entry)
      continue;
    double score = std::fabs(std::log(work(candidate) / work(shard)));
    for (size_t l = 0; l < candidate.size() && l < shard.size(); ++l)
      if (candidate[l] != n.loopSizes[l] && shard[l] == n.loopSizes[l])
        score += 0.01;
    if (!best || score < bestScore) {
      best = ProfiledShard{*entry, candidate, false};
      bestScore = score;
    }
  }
  return best;
}

ProfileCoverage profileCoverage(const OpGraph &graph,
                                const std::vector<ParallelConfig> &configs,
                                const ProfileDatabase &profile,
                                const std::string &deviceKind,
                                const std::vector<char> &madeCopies) {
  ProfileCoverage coverage;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const OpNode &node = graph.nodes[n];
    std::vector<int64_t> shard = n < configs.size()
                                     ? Strategy::shardOf(node, configs[n])
                                     : node.loopSizes;
    // As forwardTime prices it.
    bool made = n < madeCopies.size() && madeCopies[n];
    if (auto found = findProfiledShard(graph, static_cast<int>(n), shard,
                                       profile, deviceKind, made)) {
      ++(found->exact ? coverage.measured : coverage.scaled);
      continue;
    }
    ShardCost cost = shardCost(node.loopNest(graph.tensors), shard);
    if (cost.flops == 0 && cost.bytes() == 0)
      continue;
    ++coverage.roofline;
    ++coverage.rooflineByOp[node.opName];
  }
  return coverage;
}

static std::string nodeDtype(const OpGraph &graph, int node) {
  for (const NodeAccess &a : graph.nodes[node].accesses)
    return graph.tensors[a.tensor].dtype;
  return "f32";
}

std::optional<std::pair<ProfileDatabase::Entry, double>>
CostModel::profiled(const OpGraph &graph, int node,
                    const std::vector<int64_t> &shard, int device,
                    bool madeCopy) const {
  if (!profile)
    return std::nullopt;
  if (int ranks = target.numDevices(); onRanksEntries)
    if (std::optional<ProfileDatabase::Entry> entry =
            profile->lookup(ProfileDatabase::onRanksKey(
                ProfileDatabase::key(graph, node, shard,
                                     target.deviceType().name, madeCopy),
                ranks)))
      return std::make_pair(*entry, 1.0);
  std::optional<ProfiledShard> found = findProfiledShard(
      graph, node, shard, *profile, target.deviceType().name, madeCopy);
  if (!found)
    return std::nullopt;
  if (found->exact)
    return std::make_pair(found->entry, 1.0);
  // Another shard of the op: its times, scaled as the roofline scales
  // from that shard to this one.
  const OpNode &n = graph.nodes[node];
  LoopNest nest = n.loopNest(graph.tensors);
  auto roofline = [&](const std::vector<int64_t> &sizes) {
    ShardCost cost = shardCost(nest, sizes);
    return rooflineTime(cost.flops, cost.bytes(), nodeDtype(graph, node),
                        n.opClass, device);
  };
  double from = roofline(found->shard);
  double scale = from > 0 ? roofline(shard) / from : 1.0;
  return std::make_pair(found->entry, scale);
}

double CostModel::forwardTime(const OpGraph &graph, int node,
                              const std::vector<int64_t> &shard, int device,
                              bool madeCopy) const {
  const OpNode &n = graph.nodes[node];
  if (auto found = profiled(graph, node, shard, device, madeCopy))
    return found->first.forward * found->second;
  ShardCost cost = shardCost(n.loopNest(graph.tensors), shard);
  if (cost.flops == 0 && cost.bytes() == 0)
    return 0; // views and allocations launch no kernel
  return rooflineTime(cost.flops, cost.bytes(), nodeDtype(graph, node),
                      n.opClass, device);
}

int CostModel::gradientCount(const OpGraph &graph, int node) {
  const OpNode &n = graph.nodes[node];
  if (!n.needsBackward)
    return 0;
  int count = 0;
  for (const auto &[tensor, access] : graph.readTensors(node)) {
    const GraphTensor &t = graph.tensors[tensor];
    if (n.accesses[access].role != AccessRole::Read)
      continue;
    bool needsGradient = (t.isParameter && t.producer < 0) ||
                         (t.producer >= 0 &&
                          graph.nodes[t.producer].needsBackward);
    count += needsGradient;
  }
  return std::max(count, 1);
}

double CostModel::backwardTime(const OpGraph &graph, int node,
                               const std::vector<int64_t> &shard, int device,
                               bool madeCopy) const {
  const OpNode &n = graph.nodes[node];
  if (!n.needsBackward)
    return 0;
  // Built once, for the gradient sums and for the roofline.
  std::optional<LoopNest> nest;
  auto loopNest = [&]() -> const LoopNest & {
    if (!nest)
      nest = n.loopNest(graph.tensors);
    return *nest;
  };
  double sums = 0;
  for (int access : n.accumulatedReads) {
    const TensorAccess &a = loopNest().accesses[access];
    // An op that cannot be split (no loops) reads the whole tensor.
    int64_t bytes =
        n.loopSizes.empty()
            ? graph.tensors[n.accesses[access].tensor].bytes()
            : accessFootprint(loopNest(), a, shard) * a.elementBytes;
    sums += accumulateTime(bytes, device);
  }
  if (auto found = profiled(graph, node, shard, device, madeCopy))
    return found->first.backward * found->second +
           (found->first.includesGradientSums ? 0 : sums);
  ShardCost cost = shardCost(loopNest(), shard);
  if (cost.flops == 0 && cost.bytes() == 0)
    return sums;
  int gradients = gradientCount(graph, node);
  return rooflineTime(cost.flops * gradients, cost.bytes() * gradients,
                      nodeDtype(graph, node), n.opClass, device) +
         sums;
}

double CostModel::accumulateTime(int64_t bytes, int device) const {
  if (!sgdCurve.empty())
    return interpolateCurve(sgdCurve, static_cast<double>(bytes) / 4,
                            /*extendSlope=*/false);
  return rooflineTime(static_cast<double>(bytes) / 4,
                      3 * static_cast<double>(bytes), "f32",
                      OpClass::Elementwise, device);
}

double CostModel::updateTime(int64_t bytes, int device, int syncGroup) const {
  if (auto inStep = inStepUpdates.find(syncGroup);
      inStep != inStepUpdates.end())
    return interpolateCurve(inStep->second, static_cast<double>(bytes) / 4,
                            /*extendSlope=*/false);
  if (!updateCurve.empty())
    return interpolateCurve(updateCurve, static_cast<double>(bytes) / 4,
                            /*extendSlope=*/false);
  // Read the parameter, its gradient and the optimizer state; write the
  // parameter and the state.
  int state = optimizerStateCopies(optimizerKind);
  double traffic = static_cast<double>(bytes) * (3 + 2 * state);
  double flops = static_cast<double>(bytes) / 4 * (2 + 4 * state);
  return rooflineTime(flops, traffic, "f32", OpClass::Elementwise, device);
}

double CostModel::collectiveTime(CollectiveKind kind, int64_t bytes,
                                 const std::vector<int> &group) const {
  double time = target.collectiveCost(kind, bytes, group).time;
  auto inStep = inStepCollectives.find({kind, static_cast<int>(group.size())});
  if (inStep == inStepCollectives.end() || bytes <= 0)
    return time;
  // The in-step / machine ratio at each measured size, interpolated in log
  // bytes; the nearest one beyond them.
  auto ratioAt = [&](const std::pair<int64_t, double> &point) {
    double machineTime = target.collectiveCost(kind, point.first, group).time;
    return machineTime > 0 ? point.second / machineTime : 1.0;
  };
  const auto &points = inStep->second;
  auto above = std::lower_bound(points.begin(), points.end(), bytes,
                                [](const std::pair<int64_t, double> &p,
                                   int64_t v) { return p.first < v; });
  if (above == points.begin())
    return time * ratioAt(points.front());
  if (above == points.end())
    return time * ratioAt(points.back());
  const auto &below = *(above - 1);
  double f = std::log(static_cast<double>(bytes) / below.first) /
             std::log(static_cast<double>(above->first) / below.first);
  double low = ratioAt(below), high = ratioAt(*above);
  return time * (low + f * (high - low));
}

} // namespace soap

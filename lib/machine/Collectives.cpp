//===- Collectives.cpp - alpha-beta cost models of collectives ------------===//
//
// The formulas are those of docs/machines.md. Each schedule is a sequence of
// steps; a step is a set of transfers running at the same time, whose
// bandwidth is the slowest transfer's share of its links and whose latency is
// the largest route latency (Machine::concurrentStep).
//
//===----------------------------------------------------------------------===//

#include "soap/machine/Machine.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <map>

namespace soap {

namespace {

using Hops = std::vector<std::pair<int, int>>;
/// Groups that run the same schedule at the same time, all of one size.
using Groups = std::vector<std::vector<int>>;

/// member i -> member i+1, and the last back to the first.
Hops ringHops(const Groups &groups) {
  Hops hops;
  for (const std::vector<int> &g : groups)
    for (size_t i = 0; i < g.size(); ++i)
      hops.push_back({g[i], g[(i + 1) % g.size()]});
  return hops;
}

/// member i -> member i+1 (a pipeline from the first member).
Hops chainHops(const Groups &groups) {
  Hops hops;
  for (const std::vector<int> &g : groups)
    for (size_t i = 0; i + 1 < g.size(); ++i)
      hops.push_back({g[i], g[i + 1]});
  return hops;
}

/// A binary tree in heap order: the parent of member i is member (i-1)/2.
/// `up` gives child -> parent (reduce), otherwise parent -> child.
Hops treeHops(const Groups &groups, bool up) {
  Hops hops;
  for (const std::vector<int> &g : groups)
    for (size_t i = 1; i < g.size(); ++i) {
      int parent = g[(i - 1) / 2], child = g[i];
      hops.push_back(up ? std::make_pair(child, parent)
                        : std::make_pair(parent, child));
    }
  return hops;
}

/// Levels below the root of a heap-ordered binary tree of n members.
int treeDepth(size_t n) {
  int depth = 0;
  while ((size_t(2) << depth) <= n)
    ++depth;
  return depth; // floor(log2(n))
}

size_t groupSize(const Groups &groups) {
  return groups.empty() ? 0 : groups.front().size();
}

double ringAllReduce(const Machine &m, const Groups &groups, double bytes) {
  double n = double(groupSize(groups));
  if (n < 2)
    return 0;
  Machine::StepCost s = m.concurrentStep(ringHops(groups));
  return 2 * (n - 1) / n * bytes / s.bandwidth + 2 * (n - 1) * s.latency;
}

/// Reduce-scatter and all-gather by ring have the same cost.
double ringHalf(const Machine &m, const Groups &groups, double bytes) {
  double n = double(groupSize(groups));
  if (n < 2)
    return 0;
  Machine::StepCost s = m.concurrentStep(ringHops(groups));
  return (n - 1) / n * bytes / s.bandwidth + (n - 1) * s.latency;
}

double treeAllReduce(const Machine &m, const Groups &groups, double bytes) {
  size_t n = groupSize(groups);
  if (n < 2)
    return 0;
  Machine::StepCost up = m.concurrentStep(treeHops(groups, true));
  Machine::StepCost down = m.concurrentStep(treeHops(groups, false));
  double bandwidth = std::min(up.bandwidth, down.bandwidth);
  double latency = std::max(up.latency, down.latency);
  return 2 * treeDepth(n) * latency + 2 * bytes / bandwidth;
}

/// Groups are rooted at their first member.
double chainBroadcast(const Machine &m, const Groups &groups, double bytes) {
  double n = double(groupSize(groups));
  if (n < 2)
    return 0;
  Machine::StepCost s = m.concurrentStep(chainHops(groups));
  return bytes / s.bandwidth + (n - 1) * s.latency;
}

double treeBroadcast(const Machine &m, const Groups &groups, double bytes) {
  size_t n = groupSize(groups);
  if (n < 2)
    return 0;
  Machine::StepCost down = m.concurrentStep(treeHops(groups, false));
  return treeDepth(n) * down.latency + bytes / down.bandwidth;
}

/// Step s = 1..n-1: member i sends bytes/n to member (i + s) mod n.
double pairwiseAllToAll(const Machine &m, const std::vector<int> &group,
                        double bytes) {
  size_t n = group.size();
  double time = 0;
  for (size_t s = 1; s < n; ++s) {
    Hops hops;
    for (size_t i = 0; i < n; ++i)
      hops.push_back({group[i], group[(i + s) % n]});
    Machine::StepCost step = m.concurrentStep(hops);
    time += step.latency + bytes / double(n) / step.bandwidth;
  }
  return time;
}

CollectiveCost choose(CollectiveAlgorithm algorithm, double ring, double tree) {
  switch (algorithm) {
  case CollectiveAlgorithm::Ring:
    return {ring, "ring"};
  case CollectiveAlgorithm::Tree:
    return {tree, "tree"};
  case CollectiveAlgorithm::Auto:
    break;
  }
  return tree < ring ? CollectiveCost{tree, "tree"}
                     : CollectiveCost{ring, "ring"};
}

/// `g` rotated so that it starts at member `first`.
std::vector<int> rotatedTo(std::vector<int> g, int first) {
  auto it = std::find(g.begin(), g.end(), first);
  std::rotate(g.begin(), it, g.end());
  return g;
}

} // namespace

CollectiveCost Machine::collectiveCost(CollectiveKind kind, int64_t bytesIn,
                                       const std::vector<int> &group) const {
  std::vector<int> sorted = group;
  std::sort(sorted.begin(), sorted.end());
  bool valid =
      std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end() &&
      (sorted.empty() || (sorted.front() >= 0 && sorted.back() < numDevices_));
  assert(valid && "a collective's group must hold distinct devices");
  if (!valid)
    return {std::numeric_limits<double>::infinity(), "invalid group"};
  if (sorted.size() < 2)
    return {0, "none"};

  // Measured on this machine for groups of this size inside one node.
  if (nodeOf(sorted.front()) == nodeOf(sorted.back()))
    if (std::optional<double> measured =
            measuredCollectiveTime(kind, bytesIn, sorted.size()))
      return {*measured, "measured"};

  const double bytes = static_cast<double>(bytesIn);
  // Every byte an all-to-all sends between nodes crosses the NICs once
  // either way, so it always runs flat.
  if (kind == CollectiveKind::AllToAll)
    return flatCollective(kind, bytes, sorted, group.front());

  // Members per node, in device order.
  std::map<int, std::vector<int>> byNode;
  for (int d : sorted)
    byNode[nodeOf(d)].push_back(d);
  const size_t perNode = byNode.begin()->second.size();
  bool uniform = std::all_of(byNode.begin(), byNode.end(), [&](auto &entry) {
    return entry.second.size() == perNode;
  });
  const Hierarchy mode = spec_.collectives.hierarchical;
  if (byNode.size() < 2 || !uniform || mode == Hierarchy::Flat)
    return flatCollective(kind, bytes, sorted, group.front());
  CollectiveCost hierarchical =
      hierarchicalCollective(kind, bytes, byNode, group.front());
  if (mode == Hierarchy::Hierarchical)
    return hierarchical;
  CollectiveCost flat = flatCollective(kind, bytes, sorted, group.front());
  return hierarchical.time < flat.time ? hierarchical : flat;
}

CollectiveCost Machine::flatCollective(CollectiveKind kind, double bytes,
                                       const std::vector<int> &sorted,
                                       int root) const {
  const CollectiveAlgorithm algorithm = spec_.collectives.algorithm;
  const Groups flat = {sorted};
  switch (kind) {
  case CollectiveKind::AllReduce:
    return choose(algorithm, ringAllReduce(*this, flat, bytes),
                  treeAllReduce(*this, flat, bytes));
  case CollectiveKind::AllGather:
  case CollectiveKind::ReduceScatter:
    return {ringHalf(*this, flat, bytes), "ring"};
  case CollectiveKind::Broadcast: {
    const Groups rooted = {rotatedTo(sorted, root)};
    return choose(algorithm, chainBroadcast(*this, rooted, bytes),
                  treeBroadcast(*this, rooted, bytes));
  }
  case CollectiveKind::AllToAll:
    return {pairwiseAllToAll(*this, sorted, bytes), "pairwise"};
  }
  return {0, "none"};
}

CollectiveCost
Machine::hierarchicalCollective(CollectiveKind kind, double bytes,
                                const std::map<int, std::vector<int>> &byNode,
                                int root) const {
  const CollectiveAlgorithm algorithm = spec_.collectives.algorithm;
  // `inside` holds each node's members, `between` the members with the same
  // local position on every node (one group per position).
  const size_t perNode = byNode.begin()->second.size();
  Groups inside, between(perNode);
  for (const auto &entry : byNode) {
    inside.push_back(entry.second);
    for (size_t j = 0; j < perNode; ++j)
      between[j].push_back(entry.second[j]);
  }
  const double shard = bytes / double(perNode);
  switch (kind) {
  case CollectiveKind::AllReduce: {
    CollectiveCost across =
        choose(algorithm, ringAllReduce(*this, between, shard),
               treeAllReduce(*this, between, shard));
    return {ringHalf(*this, inside, bytes) + across.time +
                ringHalf(*this, inside, bytes),
            "hierarchical " + across.algorithm};
  }
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::AllGather:
    return {ringHalf(*this, inside, bytes) + ringHalf(*this, between, shard),
            "hierarchical ring"};
  case CollectiveKind::Broadcast: {
    // Between the nodes among the members at the root's position, starting
    // at the root's node; then inside every node from that member.
    const std::vector<int> &rootNode = byNode.at(nodeOf(root));
    size_t position =
        std::find(rootNode.begin(), rootNode.end(), root) - rootNode.begin();
    const Groups across = {rotatedTo(between[position], root)};
    Groups within;
    for (const std::vector<int> &members : inside)
      within.push_back(rotatedTo(members, members[position]));
    CollectiveCost first =
        choose(algorithm, chainBroadcast(*this, across, bytes),
               treeBroadcast(*this, across, bytes));
    CollectiveCost second =
        choose(algorithm, chainBroadcast(*this, within, bytes),
               treeBroadcast(*this, within, bytes));
    std::string name = "hierarchical " + first.algorithm;
    if (perNode > 1 && second.algorithm != first.algorithm)
      name += " (" + second.algorithm + " inside nodes)";
    return {first.time + second.time, name};
  }
  case CollectiveKind::AllToAll:
    break; // never hierarchical
  }
  return {0, "none"};
}

std::optional<double>
Machine::measuredCollectiveTime(CollectiveKind kind, int64_t bytes,
                                size_t groupSize) const {
  const std::optional<MeasuredCollectives> &m = spec_.collectives.measured;
  if (!m || static_cast<size_t>(m->ranks) != groupSize)
    return std::nullopt;
  return m->interpolate(kind, bytes);
}

std::optional<double> Machine::measuredTransferTime(int src, int dst,
                                                    int64_t bytes) const {
  const std::optional<MeasuredCollectives> &m = spec_.collectives.measured;
  if (!m || m->sendRecv.empty() || src == dst || nodeOf(src) != nodeOf(dst))
    return std::nullopt;
  if (bytes <= 0)
    return 0.0;
  return interpolateCurve(m->sendRecv, static_cast<double>(bytes),
                          /*extendSlope=*/true);
}

double Machine::allReduceTime(int64_t bytes,
                              const std::vector<int> &group) const {
  return collectiveCost(CollectiveKind::AllReduce, bytes, group).time;
}
double Machine::allGatherTime(int64_t bytes,
                              const std::vector<int> &group) const {
  return collectiveCost(CollectiveKind::AllGather, bytes, group).time;
}
double Machine::reduceScatterTime(int64_t bytes,
                                  const std::vector<int> &group) const {
  return collectiveCost(CollectiveKind::ReduceScatter, bytes, group).time;
}
double Machine::broadcastTime(int64_t bytes,
                              const std::vector<int> &group) const {
  return collectiveCost(CollectiveKind::Broadcast, bytes, group).time;
}
double Machine::allToAllTime(int64_t bytes,
                             const std::vector<int> &group) const {
  return collectiveCost(CollectiveKind::AllToAll, bytes, group).time;
}

/// floor(bytes * k / n) without overflow for any bytes that fits int64_t
/// and k < n * 2.
static int64_t scaledBytes(int64_t bytes, int64_t k, int64_t n) {
  if (n < 2 || bytes <= 0)
    return 0;
  return bytes / n * k + bytes % n * k / n;
}

int64_t Machine::allReduceBytesPerDevice(int64_t bytes, int n) {
  return scaledBytes(bytes, 2 * (int64_t(n) - 1), n);
}
int64_t Machine::allGatherBytesPerDevice(int64_t bytes, int n) {
  return scaledBytes(bytes, int64_t(n) - 1, n);
}
int64_t Machine::reduceScatterBytesPerDevice(int64_t bytes, int n) {
  return scaledBytes(bytes, int64_t(n) - 1, n);
}
int64_t Machine::allToAllBytesPerDevice(int64_t bytes, int n) {
  return scaledBytes(bytes, int64_t(n) - 1, n);
}

} // namespace soap

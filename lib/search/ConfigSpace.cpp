//===- ConfigSpace.cpp - the configs an op can take -----------------------===//

#include "soap/search/ConfigSpace.h"

#include <algorithm>
#include <deque>
#include <numeric>

namespace soap {

static std::vector<int64_t> divisors(int64_t n, int64_t limit) {
  std::vector<int64_t> result;
  for (int64_t d = 1; d <= std::min(n, limit); ++d)
    if (n % d == 0)
      result.push_back(d);
  return result;
}

bool followableSplit(const OpNode &node, const std::vector<int64_t> &degrees) {
  if ((node.opName != "tensor.expand_shape" &&
       node.opName != "tensor.collapse_shape") ||
      degrees.size() != node.loopSizes.size())
    return true;
  for (const NodeAccess &access : node.accesses)
    for (const IndexExpr &index : access.indices) {
      // The group's dimensions, outermost (largest coefficient) first.
      std::vector<IndexTerm> terms = index.terms;
      std::stable_sort(terms.begin(), terms.end(),
                       [](const IndexTerm &a, const IndexTerm &b) {
                         return a.coefficient > b.coefficient;
                       });
      bool cut = false;
      for (const IndexTerm &term : terms) {
        int64_t size = node.loopSizes[term.loop];
        int64_t part = size / degrees[term.loop];
        if (cut && part != size)
          return false;
        cut = cut || part != 1;
      }
    }
  return true;
}

static ParallelConfig drawConfig(const OpNode &node, int numDevices,
                                 std::mt19937_64 &rng) {
  std::uniform_int_distribution<int> percent(0, 99);
  if (!node.partitionable || percent(rng) < 5) {
    if (node.partitionable || percent(rng) < 50)
      return {}; // replicated
    ParallelConfig single;
    single.devices = {std::uniform_int_distribution<int>(0, numDevices - 1)(rng)};
    return single;
  }
  size_t numLoops = node.loopSizes.size();
  ParallelConfig config;
  config.degrees.assign(numLoops, 1);
  std::vector<size_t> loops(numLoops);
  std::iota(loops.begin(), loops.end(), 0);
  std::shuffle(loops.begin(), loops.end(), rng);
  int64_t tasks = 1;
  for (size_t l : loops) {
    std::vector<int64_t> options =
        divisors(node.loopSizes[l], numDevices / tasks);
    int64_t degree =
        options[std::uniform_int_distribution<size_t>(0, options.size() - 1)(rng)];
    config.degrees[l] = degree;
    tasks *= degree;
  }
  if (percent(rng) < 70) {
    // An aligned block of consecutive devices.
    int64_t blocks = std::max<int64_t>(1, numDevices / tasks);
    int64_t first =
        std::uniform_int_distribution<int64_t>(0, blocks - 1)(rng) * tasks;
    for (int64_t t = 0; t < tasks; ++t)
      config.devices.push_back((first + t) % numDevices);
  } else {
    // Any devices, possibly shared by several tasks.
    std::uniform_int_distribution<int> device(0, numDevices - 1);
    for (int64_t t = 0; t < tasks; ++t)
      config.devices.push_back(device(rng));
  }
  return config;
}

ParallelConfig randomConfig(const OpNode &node, int numDevices,
                            std::mt19937_64 &rng) {
  // A few draws; a reshape that no draw splits followably runs whole.
  for (int attempt = 0; attempt < 8; ++attempt) {
    ParallelConfig config = drawConfig(node, numDevices, rng);
    if (followableSplit(node, config.degrees))
      return config;
  }
  return {};
}

static ParallelConfig nextConfig(const OpNode &node,
                                 const ParallelConfig &current, int numDevices,
                                 std::mt19937_64 &rng);

ParallelConfig neighbourConfig(const OpNode &node,
                               const ParallelConfig &current, int numDevices,
                               std::mt19937_64 &rng) {
  ParallelConfig next = nextConfig(node, current, numDevices, rng);
  if (followableSplit(node, next.degrees))
    return next;
  return randomConfig(node, numDevices, rng);
}

static ParallelConfig nextConfig(const OpNode &node,
                                 const ParallelConfig &current, int numDevices,
                                 std::mt19937_64 &rng) {
  size_t numLoops = node.loopSizes.size();
  if (!node.partitionable || current.degrees.size() != numLoops ||
      current.devices.empty() || numLoops == 0)
    return randomConfig(node, numDevices, rng);
  auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  auto fits = [&](size_t l, int64_t degree) {
    return node.loopSizes[l] > 0 && node.loopSizes[l] % degree == 0;
  };
  int64_t tasks = current.numTasks();
  ParallelConfig next = current;
  switch (uniform(0, 2)) {
  case 0: { // The same split on another aligned block.
    int64_t blocks = numDevices / tasks;
    if (blocks < 2)
      break;
    // Any block but the one the op starts in.
    int64_t block = uniform(0, blocks - 2);
    if (block >= current.devices.front() / tasks)
      ++block;
    for (int64_t t = 0; t < tasks; ++t)
      next.devices[t] = block * tasks + t;
    return next;
  }
  case 1: { // One loop split twice as much, or half as much.
    size_t l = uniform(0, numLoops - 1);
    bool canGrow =
        2 * tasks <= numDevices && fits(l, 2 * current.degrees[l]);
    bool canShrink = current.degrees[l] % 2 == 0;
    if (canGrow && (!canShrink || uniform(0, 1)))
      next.degrees[l] *= 2;
    else if (canShrink)
      next.degrees[l] /= 2;
    else
      break;
    int64_t size = next.numTasks();
    if (size > numDevices) // a config sharing devices among its tasks
      break;
    int64_t first = std::min<int64_t>(current.devices.front() / size * size,
                                      numDevices - size);
    next.devices.resize(size);
    for (int64_t t = 0; t < size; ++t)
      next.devices[t] = first + t;
    return next;
  }
  default: { // A factor of two from one loop to another.
    std::vector<size_t> halvable, doublable;
    for (size_t l = 0; l < numLoops; ++l) {
      if (current.degrees[l] % 2 == 0)
        halvable.push_back(l);
      if (fits(l, 2 * current.degrees[l]))
        doublable.push_back(l);
    }
    if (halvable.empty())
      break;
    size_t from = halvable[uniform(0, halvable.size() - 1)];
    doublable.erase(std::remove(doublable.begin(), doublable.end(), from),
                    doublable.end());
    if (doublable.empty())
      break;
    size_t to = doublable[uniform(0, doublable.size() - 1)];
    next.degrees[from] /= 2;
    next.degrees[to] *= 2;
    return next;
  }
  }
  return randomConfig(node, numDevices, rng);
}

std::vector<Layer> layerGroups(const OpGraph &graph) {
  int numNodes = graph.nodes.size();
  // Union-find over parameter readers: readers of one parameter merge.
  std::vector<int> parent(numNodes, -1), readerOf(graph.tensors.size(), -1);
  auto find = [&](int n) {
    while (parent[n] != n)
      n = parent[n] = parent[parent[n]];
    return n;
  };
  for (int n = 0; n < numNodes; ++n) {
    if (!graph.nodes[n].partitionable)
      continue;
    for (const auto &[tensor, access] : graph.readTensors(n)) {
      const GraphTensor &t = graph.tensors[tensor];
      if (!t.isParameter || t.producer >= 0)
        continue;
      if (parent[n] < 0)
        parent[n] = n;
      if (readerOf[tensor] < 0) {
        readerOf[tensor] = n;
        continue;
      }
      int a = find(n), b = find(readerOf[tensor]);
      if (a != b)
        parent[std::max(a, b)] = std::min(a, b);
    }
  }
  // An elementwise reader right after a contraction that reads weights
  // (the bias add after a matmul or a convolution) belongs to its layer.
  for (int n = 0; n < numNodes; ++n) {
    if (parent[n] < 0 || isContraction(graph.nodes[n].opClass))
      continue;
    for (const auto &[tensor, access] : graph.readTensors(n)) {
      int p = graph.tensors[tensor].producer;
      if (p < 0 || parent[p] < 0 || !isContraction(graph.nodes[p].opClass))
        continue;
      int a = find(n), b = find(p);
      if (a != b)
        parent[std::max(a, b)] = std::min(a, b);
    }
  }
  // Multi-source breadth-first search from every reader over undirected
  // producer-consumer edges: each op joins the group that reaches it first.
  std::vector<std::vector<int>> neighbours(numNodes);
  std::vector<std::vector<int>> consumers = graph.consumers();
  for (int n = 0; n < numNodes; ++n)
    for (int c : consumers[n]) {
      neighbours[n].push_back(c);
      neighbours[c].push_back(n);
    }
  std::vector<int> root(numNodes, -1);
  std::deque<int> queue;
  for (int n = 0; n < numNodes; ++n)
    if (parent[n] >= 0) {
      root[n] = find(n);
      queue.push_back(n);
    }
  while (!queue.empty()) {
    int n = queue.front();
    queue.pop_front();
    for (int m : neighbours[n])
      if (root[m] < 0) {
        root[m] = root[n];
        queue.push_back(m);
      }
  }
  std::vector<int> index(numNodes, -1);
  std::vector<Layer> layers;
  for (int n = 0; n < numNodes; ++n) {
    if (root[n] < 0 || !graph.nodes[n].partitionable)
      continue;
    if (index[root[n]] < 0) {
      index[root[n]] = layers.size();
      layers.emplace_back();
    }
    Layer &layer = layers[index[root[n]]];
    layer.ops.push_back(n);
    if (parent[n] >= 0) // a parameter reader
      layer.readers.push_back(n);
  }
  return layers;
}

std::optional<ParallelConfig> carryConfig(const ParallelConfig &config,
                                          const OpNode &from,
                                          const OpNode &to) {
  if (config.degrees.empty() ||
      (to.loopSizes == from.loopSizes && to.loopKinds == from.loopKinds))
    return config;
  if (!to.partitionable)
    return std::nullopt;
  int64_t remaining = config.numTasks();
  ParallelConfig carried;
  carried.degrees.assign(to.loopSizes.size(), 1);
  carried.devices = config.devices;
  auto rank = [&](size_t l) {
    if (l < to.overBatch.size() && to.overBatch[l])
      return 0;
    switch (to.loopKinds[l]) {
    case DimKind::Sample:
      return 1;
    case DimKind::Attribute:
    case DimKind::Parameter:
      return 2;
    case DimKind::Reduction:
      return 3;
    }
    return 3;
  };
  std::vector<size_t> loops(to.loopSizes.size());
  std::iota(loops.begin(), loops.end(), 0);
  std::stable_sort(loops.begin(), loops.end(),
                   [&](size_t a, size_t b) { return rank(a) < rank(b); });
  for (size_t l : loops) {
    if (remaining == 1)
      break;
    if (to.loopSizes[l] <= 0)
      continue;
    int64_t degree = std::gcd(remaining, to.loopSizes[l]);
    carried.degrees[l] = degree;
    if (!followableSplit(to, carried.degrees)) {
      carried.degrees[l] = 1; // a reshape's inner dimension: the next loop
      continue;
    }
    remaining /= degree;
  }
  if (remaining != 1)
    return std::nullopt;
  return carried;
}

std::vector<ParallelConfig> enumerateConfigs(const OpNode &node,
                                             int numDevices) {
  std::vector<ParallelConfig> configs = {ParallelConfig{}}; // replicated
  size_t numLoops = node.partitionable ? node.loopSizes.size() : 0;
  std::vector<std::vector<int64_t>> degreeVectors = {{}};
  for (size_t l = 0; l < numLoops; ++l) {
    std::vector<std::vector<int64_t>> longer;
    for (const std::vector<int64_t> &prefix : degreeVectors) {
      int64_t tasks = 1;
      for (int64_t d : prefix)
        tasks *= d;
      for (int64_t d : divisors(node.loopSizes[l], numDevices / tasks)) {
        longer.push_back(prefix);
        longer.back().push_back(d);
      }
    }
    degreeVectors = std::move(longer);
  }
  for (const std::vector<int64_t> &degrees : degreeVectors) {
    if (!followableSplit(node, degrees))
      continue;
    ParallelConfig base{degrees, {}};
    int64_t tasks = base.numTasks();
    std::vector<int64_t> devices(tasks, 0);
    while (true) {
      configs.push_back({degrees, devices});
      size_t i = 0;
      while (i < devices.size() && ++devices[i] == numDevices)
        devices[i++] = 0;
      if (i == devices.size())
        break;
    }
  }
  return configs;
}

} // namespace soap

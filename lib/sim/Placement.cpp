//===- Placement.cpp - where an op's tasks run and what they touch --------===//
//
// Simulator::placement: an op's tasks under its config (or whole on every
// device where the partitioner runs it so), their devices and the region
// of each tensor each task touches; and the config a pad runs under when
// the partitioner cannot follow its own.
//
//===----------------------------------------------------------------------===//

#include "soap/sim/Simulator.h"

#include "SimulatorTasks.h"

#include <algorithm>
#include <map>
#include <set>

namespace soap {

/// Writes the region of `tensor` that `access` touches for the iterations
/// [lo, lo + shard) to `box` (one range per tensor dimension).
static void accessBox(const NodeAccess &access, const GraphTensor &tensor,
                      const std::vector<int64_t> &lo,
                      const std::vector<int64_t> &shard, Range *box) {
  for (size_t d = 0; d < access.indices.size(); ++d) {
    const IndexExpr &e = access.indices[d];
    int64_t size = tensor.shape[d];
    int64_t mn = e.constant, mx = e.constant;
    if (!e.isLinear || lo.empty()) {
      mn = 0;
      mx = size > 0 ? size - 1 : 0;
    } else {
      for (const IndexTerm &t : e.terms) {
        int64_t first = lo[t.loop], last = lo[t.loop] + shard[t.loop] - 1;
        if (t.coefficient >= 0) {
          mn += t.coefficient * first;
          mx += t.coefficient * last;
        } else {
          mn += t.coefficient * last;
          mx += t.coefficient * first;
        }
      }
      if (size > 0 && (mx < 0 || mn > size - 1)) {
        // Every index lies outside the tensor: the task reads none of it
        // (an empty box; see isEmpty).
        mn = 1;
        mx = 0;
      } else if (size > 0) {
        mn = std::clamp<int64_t>(mn, 0, size - 1);
        mx = std::clamp<int64_t>(mx, 0, size - 1);
      }
    }
    box[d] = {mn, mx};
  }
}

/// A pad's read of its source (none without one).
static const NodeAccess *padSource(const OpNode &n) {
  for (const NodeAccess &a : n.accesses)
    if (a.role == AccessRole::Read)
      return &a;
  return nullptr;
}

/// Whether `n`, a tensor.pad, has tasks under `config` that read none of
/// its source (blocks of padding alone) or, among the k-th tasks of the
/// devices (the partitioner's slots, each one local op), parts of the
/// source of different shapes: SpmdPartitioner::followConfig cannot cut
/// those, and the pad runs whole on every device.
static bool padPartsDiffer(const OpGraph &graph, const OpNode &n,
                           const ParallelConfig &config) {
  if (n.opName != "tensor.pad" || !n.partitionable)
    return false;
  const NodeAccess *source = padSource(n);
  if (!source)
    return false;
  const GraphTensor &tensor = graph.tensors[source->tensor];
  std::vector<int64_t> shard = config.shardSizes(n.loopSizes);
  std::vector<int64_t> lo(n.loopSizes.size());
  std::vector<Range> box(source->indices.size());
  // Per slot, the shape of its tasks' parts.
  std::vector<std::vector<int64_t>> slotShape;
  std::map<int64_t, size_t> tasksOn; // per device, its tasks so far
  for (int64_t t = 0; t < config.numTasks(); ++t) {
    std::vector<int64_t> coords = config.taskCoordinates(t);
    for (size_t l = 0; l < lo.size(); ++l)
      lo[l] = coords[l] * shard[l];
    accessBox(*source, tensor, lo, shard, box.data());
    std::vector<int64_t> sizes;
    for (const Range &range : box) {
      if (range.second < range.first)
        return true;
      sizes.push_back(range.second - range.first + 1);
    }
    size_t slot = tasksOn[config.devices[t]]++;
    if (slot == slotShape.size())
      slotShape.push_back(std::move(sizes));
    else if (slotShape[slot] != sizes)
      return true;
  }
  return false;
}

std::optional<ParallelConfig> Simulator::padPassThroughConfig(int node) {
  const OpNode &n = graph.nodes[node];
  const NodeAccess *source = padSource(n);
  if (!source)
    return std::nullopt;
  const GraphTensor &tensor = graph.tensors[source->tensor];
  int producer = tensor.producer;
  if (producer < 0 || tensor.shape.size() != n.loopSizes.size() ||
      graph.nodes[producer].splat)
    return std::nullopt;
  const Placement &pp = placement(producer);
  if (pp.replicated || pp.splitsReduction || pp.devices.empty())
    return std::nullopt;
  size_t written = definingAccess(graph.nodes[producer], source->tensor);
  if (written == graph.nodes[producer].accesses.size())
    return std::nullopt;
  // Padded dimensions: the source's dimension d is read at loop d less the
  // low padding, and the result is longer than the source there.
  size_t rank = tensor.shape.size();
  std::vector<bool> padded(rank);
  for (size_t d = 0; d < rank; ++d)
    padded[d] = n.loopSizes[d] != tensor.shape[d];
  ParallelConfig config;
  config.degrees.assign(rank, 1);
  std::vector<int64_t> blockSize(rank);
  for (size_t d = 0; d < rank; ++d) {
    Range range = pp.box(0, written).first[d];
    blockSize[d] = range.second - range.first + 1;
    if (padded[d] ? blockSize[d] != tensor.shape[d]
                  : blockSize[d] <= 0 || tensor.shape[d] % blockSize[d])
      return std::nullopt;
    config.degrees[d] = tensor.shape[d] / blockSize[d];
  }
  if (config.numTasks() != static_cast<int64_t>(pp.devices.size()))
    return std::nullopt;
  config.devices.assign(pp.devices.size(), -1);
  std::set<int> used;
  for (size_t s = 0; s < pp.devices.size(); ++s) {
    BoxRef box = pp.box(s, written);
    int64_t index = 0;
    for (size_t d = 0; d < rank; ++d) {
      const Range &range = box.first[d];
      if (range.second - range.first + 1 != blockSize[d] ||
          range.first % blockSize[d])
        return std::nullopt;
      index = index * config.degrees[d] + range.first / blockSize[d];
    }
    // Each block once, each device one block (the producer's one piece).
    if (config.devices[index] >= 0 || !used.insert(pp.devices[s]).second)
      return std::nullopt;
    config.devices[index] = pp.devices[s];
  }
  return config;
}

const Simulator::Placement &Simulator::placement(int node) {
  if (placements[node])
    return *placements[node];
  auto p = std::make_unique<Placement>();
  p->node = node;
  const OpNode &n = graph.nodes[node];
  const ParallelConfig &chosen = current.configs[node];
  size_t numLoops = n.partitionable ? n.loopSizes.size() : 0;
  // A pad whose tasks' parts of its source the partitioner cannot cut
  // (SpmdPartitioner::followConfig): each device pads the block of the
  // source it holds where its producer splits only unpadded dimensions
  // (partitionPassThrough), as if the pad had that config; else it runs
  // whole everywhere.
  bool padRefused =
      !Strategy::isReplicated(chosen) && padPartsDiffer(graph, n, chosen);
  std::optional<ParallelConfig> passThrough;
  if (padRefused)
    passThrough = padPassThroughConfig(node);
  const ParallelConfig &config = passThrough ? *passThrough : chosen;
  for (const NodeAccess &a : n.accesses) {
    p->accessAt.push_back(p->stride);
    p->accessRank.push_back(a.indices.size());
    p->stride += a.indices.size();
    p->expandedGradient.push_back(
        n.opName == "linalg.generic" && a.readsValue() &&
        std::any_of(a.indices.begin(), a.indices.end(),
                    [](const IndexExpr &e) { return e.terms.empty(); }));
  }
  // One task's regions, from the first iteration of each loop.
  auto addBoxes = [&](const std::vector<int64_t> &lo) {
    size_t at = p->ranges.size();
    p->ranges.resize(at + p->stride);
    for (size_t a = 0; a < n.accesses.size(); ++a)
      accessBox(n.accesses[a], graph.tensors[n.accesses[a].tensor], lo,
                p->shard, p->ranges.data() + at + p->accessAt[a]);
  };
  std::vector<int64_t> lo(numLoops, 0);
  bool splitsReduction = false;
  if (!Strategy::isReplicated(config))
    for (size_t l = 0; l < numLoops; ++l)
      splitsReduction |=
          n.loopKinds[l] == DimKind::Reduction && config.degrees[l] > 1;
  // A split of a reduction whose partial results could not be combined:
  // the partitioner runs the op whole everywhere instead.
  bool refused = (splitsReduction && n.partialsUncombinable) ||
                 (padRefused && !passThrough);
  if (Strategy::isReplicated(config) || wholeViews[node] || refused) {
    p->replicated = true;
    p->shard.assign(n.loopSizes.begin(), n.loopSizes.begin() + numLoops);
    for (int d = 0; d < current.numDevices; ++d) {
      p->devices.push_back(d);
      addBoxes(lo);
    }
  } else {
    std::vector<int64_t> sizes(n.loopSizes.begin(),
                               n.loopSizes.begin() + numLoops);
    p->shard = config.shardSizes(sizes);
    p->splitsReduction = splitsReduction;
    // Partial results on distinct devices are left for the readers to
    // combine, but for a max or min, which its devices complete at once.
    if (p->splitsReduction && !n.completesPartials) {
      std::vector<int64_t> devices = config.devices;
      std::sort(devices.begin(), devices.end());
      p->partialOutputs =
          std::adjacent_find(devices.begin(), devices.end()) == devices.end();
    }
    p->ranges.reserve(config.numTasks() * p->stride);
    for (int64_t t = 0; t < config.numTasks(); ++t) {
      p->devices.push_back(static_cast<int>(config.devices[t]));
      std::vector<int64_t> coords = config.taskCoordinates(t);
      for (size_t l = 0; l < numLoops; ++l)
        lo[l] = coords[l] * p->shard[l];
      addBoxes(lo);
    }
  }
  int someDevice = p->devices.empty() ? 0 : p->devices.front();
  bool made = n.relayoutCopy && copyIsMade(node, *p);
  p->forward = cost.forwardTime(graph, node, p->shard, someDevice, made);
  p->wholeScatter = !p->replicated && scatterRunsWhole(node, *p);
  std::vector<int64_t> whole; // the whole op's loops, where it is priced
  if (p->wholeScatter)
    whole.assign(n.loopSizes.begin(), n.loopSizes.begin() + numLoops);
  p->backward =
      options.training && lazyGradients[node].reader < 0
          ? cost.backwardTime(graph, node, p->wholeScatter ? whole : p->shard,
                              someDevice, made)
          : 0;
  placements[node] = std::move(p);
  return *placements[node];
}

} // namespace soap

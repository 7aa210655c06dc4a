//===- Strategies.cpp - named baseline strategies -------------------------===//

#include "soap/search/Strategies.h"

#include "soap/search/ConfigSpace.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace soap {

namespace {

std::vector<int64_t> allDevices(int numDevices, int first = 0) {
  std::vector<int64_t> devices(numDevices);
  std::iota(devices.begin(), devices.end(), first);
  return devices;
}

/// Splits loop `loop` of `node` `degree` ways on `devices` (all other
/// loops whole); nothing when the degree does not divide the loop.
std::optional<ParallelConfig> splitLoop(const OpNode &node, size_t loop,
                                        const std::vector<int64_t> &devices) {
  int64_t degree = devices.size();
  if (loop >= node.loopSizes.size() || node.loopSizes[loop] % degree != 0)
    return std::nullopt;
  ParallelConfig config;
  config.degrees.assign(node.loopSizes.size(), 1);
  config.degrees[loop] = degree;
  config.devices = devices;
  return config;
}

/// The first loop of `kind` that `degree` divides.
std::optional<size_t> findLoop(const OpNode &node, DimKind kind,
                               int64_t degree) {
  for (size_t l = 0; l < node.loopKinds.size(); ++l)
    if (node.loopKinds[l] == kind && node.loopSizes[l] % degree == 0)
      return l;
  return std::nullopt;
}

/// `node` split along its batch over the `numDevices` devices from
/// `first` on.
ParallelConfig dataParallelConfig(const OpNode &node, int numDevices,
                                  int first = 0) {
  if (!node.partitionable)
    return {};
  if (auto loop = findLoop(node, DimKind::Sample, numDevices))
    return *splitLoop(node, *loop, allDevices(numDevices, first));
  // A reduction over the batch (batch-norm statistics, the mean loss):
  // each device reduces its samples, leaving partial sums.
  for (size_t l = 0; l < node.overBatch.size(); ++l)
    if (node.overBatch[l] && node.loopSizes[l] % numDevices == 0)
      return *splitLoop(node, l, allDevices(numDevices, first));
  // A batch smaller than (or not a multiple of) the device count: split it
  // as far as it goes, on the first devices.
  for (size_t l = 0; l < node.overBatch.size(); ++l) {
    if (!node.overBatch[l])
      continue;
    int64_t degree = std::gcd<int64_t>(node.loopSizes[l], numDevices);
    if (degree > 1)
      return *splitLoop(node, l, allDevices(degree, first));
  }
  return {};
}

/// The op's FLOPs per step (forward).
double opFlops(const OpNode &node) {
  double f = node.flopsPerIteration;
  for (int64_t size : node.loopSizes)
    f *= static_cast<double>(size);
  return node.partitionable ? f : 0;
}

/// Cuts `weights` (in order) into `parts` consecutive non-empty runs that
/// minimise the largest run's sum (the linear partition problem, by
/// dynamic programming); returns each item's run. Needs
/// parts <= weights.size().
std::vector<int> balancedRuns(const std::vector<double> &weights, int parts) {
  int n = weights.size();
  std::vector<double> prefix(n + 1, 0);
  for (int i = 0; i < n; ++i)
    prefix[i + 1] = prefix[i] + weights[i];
  // cost[k][i]: the best largest sum cutting the first i items into k runs;
  // cut[k][i]: where the last of those runs begins.
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> cost(parts + 1,
                                        std::vector<double>(n + 1, inf));
  std::vector<std::vector<int>> cut(parts + 1, std::vector<int>(n + 1, 0));
  cost[0][0] = 0;
  for (int k = 1; k <= parts; ++k)
    for (int i = k; i <= n; ++i)
      for (int j = k - 1; j < i; ++j) {
        double c = std::max(cost[k - 1][j], prefix[i] - prefix[j]);
        if (c < cost[k][i]) {
          cost[k][i] = c;
          cut[k][i] = j;
        }
      }
  std::vector<int> run(n);
  for (int k = parts, i = n; k > 0; i = cut[k][i], --k)
    for (int j = cut[k][i]; j < i; ++j)
      run[j] = k - 1;
  return run;
}

/// Megatron's two kinds of matmul with weights.
enum class TensorSplit { None, Column, Row };

/// The config that computes `node`'s result in the blocks, and on the
/// devices, in which `reader` reads it under `readerConfig`; nothing when
/// the reader's tasks do not each read one block of their own (a block
/// several devices read, or an index that is not one loop).
std::optional<ParallelConfig>
configForReader(const OpGraph &graph, const OpNode &node, const OpNode &reader,
                const ParallelConfig &readerConfig, int tensor) {
  const NodeAccess *read = nullptr, *write = nullptr;
  for (const NodeAccess &a : reader.accesses)
    if (a.tensor == tensor && a.readsValue())
      read = &a;
  for (const NodeAccess &a : node.accesses)
    if (a.tensor == tensor && a.role == AccessRole::Write)
      write = &a;
  if (!read || !write)
    return std::nullopt;
  size_t rank = graph.tensors[tensor].shape.size();
  // The reader's loop of each dimension, and the node's.
  std::vector<int> readerLoop(rank, -1), nodeLoop(rank, -1);
  std::vector<bool> indexesTensor(readerConfig.degrees.size(), false);
  for (size_t d = 0; d < rank; ++d) {
    std::optional<unsigned> r = read->indices[d].singleLoop();
    std::optional<unsigned> w = write->indices[d].singleLoop();
    if (r && w && *r < readerConfig.degrees.size()) {
      readerLoop[d] = *r;
      nodeLoop[d] = *w;
      indexesTensor[*r] = true;
      continue;
    }
    // A dimension indexed otherwise must not be split.
    for (const IndexTerm &term : read->indices[d].terms)
      if (term.loop < readerConfig.degrees.size() &&
          readerConfig.degrees[term.loop] > 1)
        return std::nullopt;
    if (!read->indices[d].isLinear)
      for (int64_t degree : readerConfig.degrees)
        if (degree > 1)
          return std::nullopt;
  }
  // A split loop that does not index the tensor: several devices read
  // each block.
  for (size_t l = 0; l < readerConfig.degrees.size(); ++l)
    if (readerConfig.degrees[l] > 1 && !indexesTensor[l])
      return std::nullopt;
  ParallelConfig config;
  config.degrees.assign(node.loopSizes.size(), 1);
  for (size_t d = 0; d < rank; ++d)
    if (readerLoop[d] >= 0)
      config.degrees[nodeLoop[d]] = readerConfig.degrees[readerLoop[d]];
  if (config.numTasks() != readerConfig.numTasks() ||
      !followableSplit(node, config.degrees))
    return std::nullopt;
  for (int64_t t = 0; t < config.numTasks(); ++t) {
    std::vector<int64_t> coords = config.taskCoordinates(t);
    std::vector<int64_t> readerCoords(readerConfig.degrees.size(), 0);
    for (size_t d = 0; d < rank; ++d)
      if (readerLoop[d] >= 0)
        readerCoords[readerLoop[d]] = coords[nodeLoop[d]];
    config.devices.push_back(
        readerConfig.devices[readerConfig.taskIndex(readerCoords)]);
  }
  return config;
}

/// Gives ops that compute from parameters alone and that the strategy
/// left replicated (torch-mlir's transpose of a linear layer's weight) the
/// blocks their only reader reads, on its devices: each device transforms
/// its own part of the weight, and its gradient stays there, instead of
/// every device transforming the whole weight and gathering its gradient.
void alignParameterOps(const OpGraph &graph, Strategy &strategy) {
  size_t numNodes = graph.nodes.size();
  // Tensors computed from parameters and constants alone.
  std::vector<bool> fromParams(graph.tensors.size(), false);
  for (size_t t = 0; t < graph.tensors.size(); ++t)
    fromParams[t] =
        graph.tensors[t].isParameter ||
        (graph.tensors[t].producer < 0 && !graph.tensors[t].isInput);
  std::vector<bool> paramOnly(numNodes, false);
  for (size_t n = 0; n < numNodes; ++n) {
    paramOnly[n] = llvm::all_of(graph.readTensors(n), [&](auto read) {
      return fromParams[read.first];
    });
    if (paramOnly[n])
      for (const NodeAccess &a : graph.nodes[n].accesses)
        if (a.role == AccessRole::Write)
          fromParams[a.tensor] = true;
  }
  std::vector<std::vector<int>> consumers = graph.consumers();
  // Readers first: a chain (transpose, then reshape) aligns back to front.
  for (size_t n = numNodes; n-- > 0;) {
    const OpNode &node = graph.nodes[n];
    if (!paramOnly[n] || !node.partitionable ||
        !Strategy::isReplicated(strategy.configs[n]) ||
        consumers[n].size() != 1)
      continue;
    int reader = consumers[n].front();
    const ParallelConfig &readerConfig = strategy.configs[reader];
    if (Strategy::isReplicated(readerConfig) ||
        !graph.nodes[reader].partitionable)
      continue;
    int written = -1;
    for (const NodeAccess &a : node.accesses)
      if (a.role == AccessRole::Write)
        written = written == -1 ? a.tensor : -2;
    if (written < 0)
      continue;
    if (std::optional<ParallelConfig> config = configForReader(
            graph, node, graph.nodes[reader], readerConfig, written))
      strategy.configs[n] = std::move(*config);
  }
}

} // namespace

Strategy dataParallelStrategy(const OpGraph &graph, int numDevices) {
  Strategy s;
  s.numDevices = numDevices;
  for (const OpNode &node : graph.nodes)
    s.configs.push_back(dataParallelConfig(node, numDevices));
  return s;
}

Strategy modelParallelStrategy(const OpGraph &graph, int numDevices) {
  Strategy s;
  s.numDevices = numDevices;
  std::vector<double> flops;
  double total = 0;
  for (const OpNode &node : graph.nodes) {
    flops.push_back(opFlops(node));
    total += flops.back();
  }
  double before = 0;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    double middle = before + flops[n] / 2;
    before += flops[n];
    int device = total > 0 ? static_cast<int>(middle / total * numDevices)
                           : 0;
    device = std::clamp(device, 0, numDevices - 1);
    ParallelConfig config;
    config.degrees.assign(
        graph.nodes[n].partitionable ? graph.nodes[n].loopSizes.size() : 0, 1);
    config.devices = {device};
    s.configs.push_back(config);
  }
  return s;
}

Strategy layerPipelineStrategy(const OpGraph &graph, int numDevices,
                               int stages) {
  Strategy s = dataParallelStrategy(graph, numDevices);
  std::vector<Layer> layers = layerGroups(graph);
  if (layers.empty())
    return s;
  if (stages <= 0) {
    // As many stages as layers allow, a power of two dividing the devices.
    stages = 1;
    while (stages * 2 <= static_cast<int>(layers.size()) &&
           numDevices % (stages * 2) == 0)
      stages *= 2;
  }
  stages = std::clamp(stages, 1, static_cast<int>(layers.size()));
  while (numDevices % stages != 0)
    --stages;
  int block = numDevices / stages;
  std::vector<double> flops;
  for (const Layer &layer : layers) {
    double f = 0;
    for (int n : layer.ops)
      f += opFlops(graph.nodes[n]);
    flops.push_back(f);
  }
  std::vector<int> stageOf = balancedRuns(flops, stages);
  for (size_t l = 0; l < layers.size(); ++l) {
    int first = stageOf[l] * block;
    for (int n : layers[l].ops) {
      const OpNode &node = graph.nodes[n];
      ParallelConfig config = dataParallelConfig(node, block, first);
      if (config.devices.empty()) {
        // No batch to split (or a one-device stage): whole on the stage's
        // first device.
        config.degrees.assign(node.loopSizes.size(), 1);
        config.devices = {first};
      }
      s.configs[n] = std::move(config);
    }
  }
  return s;
}

Strategy owtStrategy(const OpGraph &graph, int numDevices) {
  Strategy s = dataParallelStrategy(graph, numDevices);
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const OpNode &node = graph.nodes[n];
    if (!node.partitionable || node.opClass != OpClass::Matmul)
      continue;
    if (auto loop = findLoop(node, DimKind::Parameter, numDevices))
      s.configs[n] = *splitLoop(node, *loop, allDevices(numDevices));
  }
  alignParameterOps(graph, s);
  return s;
}

Strategy megatronStrategy(const OpGraph &graph, int numDevices,
                          int tensorParallel) {
  int t = tensorParallel > 0 ? tensorParallel : std::min(numDevices, 8);
  while (numDevices % t != 0)
    --t;
  int groups = numDevices / t;
  Strategy s = dataParallelStrategy(graph, numDevices);
  size_t numNodes = graph.nodes.size();
  std::vector<TensorSplit> split(numNodes, TensorSplit::None);
  // The nearest weight matmul upstream of each node's activation input,
  // through ops that are not weight matmuls.
  std::vector<int> upstream(numNodes, -1);
  auto isWeightMatmul = [&](int n) {
    const OpNode &node = graph.nodes[n];
    return node.partitionable && node.opClass == OpClass::Matmul &&
           std::count(node.loopKinds.begin(), node.loopKinds.end(),
                      DimKind::Parameter) > 0;
  };
  for (size_t n = 0; n < numNodes; ++n) {
    for (const auto &[tensor, access] : graph.readTensors(n)) {
      int p = graph.tensors[tensor].producer;
      if (p < 0 || graph.tensors[tensor].isParameter)
        continue;
      int candidate = isWeightMatmul(p) ? p : upstream[p];
      if (candidate > upstream[n])
        upstream[n] = candidate;
    }
    if (!isWeightMatmul(n))
      continue;
    bool row = upstream[n] >= 0 && split[upstream[n]] == TensorSplit::Column;
    split[n] = row ? TensorSplit::Row : TensorSplit::Column;
  }
  for (size_t n = 0; n < numNodes; ++n) {
    const OpNode &node = graph.nodes[n];
    if (!node.partitionable)
      continue;
    DimKind tensorKind;
    if (split[n] == TensorSplit::Column)
      tensorKind = DimKind::Parameter;
    else if (split[n] == TensorSplit::Row)
      tensorKind = DimKind::Reduction;
    else if (upstream[n] >= 0 && split[upstream[n]] == TensorSplit::Column)
      tensorKind = DimKind::Attribute; // between column and row: follow it
    else
      continue;
    std::optional<size_t> sample = findLoop(node, DimKind::Sample, groups);
    std::optional<size_t> inner = findLoop(node, tensorKind, t);
    if (!sample || !inner || *sample == *inner)
      continue;
    ParallelConfig config;
    config.degrees.assign(node.loopSizes.size(), 1);
    config.degrees[*sample] = groups;
    config.degrees[*inner] = t;
    if (!followableSplit(node, config.degrees))
      continue; // a reshape whose blocks would not be contiguous
    // Group-major: the t devices of a group are consecutive (one node).
    config.devices = allDevices(numDevices);
    if (*inner < *sample) {
      // Row-major task order puts the inner loop first; keep groups
      // contiguous by placing task (i, g) on device g * t + i.
      for (int i = 0; i < t; ++i)
        for (int g = 0; g < groups; ++g)
          config.devices[i * groups + g] = g * t + i;
    }
    s.configs[n] = config;
  }
  alignParameterOps(graph, s);
  return s;
}

Strategy randomStrategy(const OpGraph &graph, int numDevices, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Strategy strategy;
  strategy.numDevices = numDevices;
  for (const OpNode &node : graph.nodes)
    strategy.configs.push_back(randomConfig(node, numDevices, rng));
  return strategy;
}

const std::vector<std::string> &baselineStrategyNames() {
  static const std::vector<std::string> names = {
      "data-parallel", "model-parallel", "layer-pipeline", "owt", "megatron"};
  return names;
}

std::optional<Strategy> strategyByName(const std::string &name,
                                       const OpGraph &graph, int numDevices) {
  if (name == "data-parallel")
    return dataParallelStrategy(graph, numDevices);
  if (name == "model-parallel")
    return modelParallelStrategy(graph, numDevices);
  if (name == "layer-pipeline")
    return layerPipelineStrategy(graph, numDevices);
  if (name == "owt")
    return owtStrategy(graph, numDevices);
  if (name == "megatron")
    return megatronStrategy(graph, numDevices);
  if (name.rfind("random:", 0) == 0) {
    // random:SEED: a random valid config per op, as the search proposes.
    // A seed beyond 64 bits is no seed (getAsInteger fails on overflow).
    uint64_t seed;
    if (llvm::StringRef(name).drop_front(7).getAsInteger(10, seed))
      return std::nullopt;
    return randomStrategy(graph, numDevices, seed);
  }
  return std::nullopt;
}

} // namespace soap

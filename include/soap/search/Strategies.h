//===- Strategies.h - named baseline strategies -----------------*- C++ -*-===//

#ifndef SOAP_SEARCH_STRATEGIES_H
#define SOAP_SEARCH_STRATEGIES_H

#include "soap/graph/Strategy.h"

#include <cstdint>

#include <optional>
#include <string>
#include <vector>

namespace soap {

/// Every op split along its batch (a sample loop) over all devices;
/// ops without one run replicated.
Strategy dataParallelStrategy(const OpGraph &graph, int numDevices);

/// Layer placement: each op runs whole on one device; consecutive ops are
/// grouped into `numDevices` stages of about equal FLOPs (model parallelism
/// as in Krizhevsky's and Wu et al.'s placements, without micro-batches).
Strategy modelParallelStrategy(const OpGraph &graph, int numDevices);

/// Layer pipeline (Wu et al.'s placement of GNMT's layers, with data
/// parallelism inside each stage): the graph's layers (layerGroups), in
/// order, are cut into `stages` runs of about equal FLOPs; stage s runs on
/// the aligned block of numDevices/stages devices from s*numDevices/stages
/// on, each op split along its batch over its block. Ops in no layer are
/// data parallel over all devices. `stages` 0: the largest power of two
/// that divides the device count and is at most the number of layers.
Strategy layerPipelineStrategy(const OpGraph &graph, int numDevices,
                               int stages = 0);

/// "One weird trick" (OWT): convolutions and everything else data parallel,
/// fully connected layers (matmuls with a parameter loop) split along that
/// loop over all devices.
Strategy owtStrategy(const OpGraph &graph, int numDevices);

/// Megatron-style tensor parallelism: matmuls with weights alternate
/// column-parallel (parameter loop split) and row-parallel (reduction loop
/// split, partial sums) in groups of `tensorParallel` devices (0: all
/// devices, at most 8), data parallel across groups; the ops between a
/// column- and a row-parallel matmul follow the column split; the rest are
/// data parallel.
Strategy megatronStrategy(const OpGraph &graph, int numDevices,
                          int tensorParallel = 0);

/// A random valid config for every op (randomConfig), from `seed`: any mix
/// of splits, device blocks, shared devices and replicated ops.
Strategy randomStrategy(const OpGraph &graph, int numDevices, uint64_t seed);

/// The expert baselines the search starts from: data-parallel,
/// model-parallel, layer-pipeline, owt, megatron.
const std::vector<std::string> &baselineStrategyNames();
/// A baseline by name, or random:SEED; nothing for an unknown name.
std::optional<Strategy> strategyByName(const std::string &name,
                                       const OpGraph &graph, int numDevices);

} // namespace soap

#endif // SOAP_SEARCH_STRATEGIES_H

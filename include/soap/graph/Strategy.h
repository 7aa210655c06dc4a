//===- Strategy.h - a parallelization configuration per op ------*- C++ -*-===//

#ifndef SOAP_GRAPH_STRATEGY_H
#define SOAP_GRAPH_STRATEGY_H

#include "soap/graph/OpGraph.h"
#include "soap/graph/ParallelConfig.h"

#include <optional>
#include <string>
#include <vector>

namespace soap {

/// One ParallelConfig per OpGraph node. A config with no degrees and no
/// devices means "replicated": the op runs whole on every device (what ops
/// without a #soap.config do, and what non-partitionable ops always do).
struct Strategy {
  int numDevices = 1;
  std::vector<ParallelConfig> configs;

  static bool isReplicated(const ParallelConfig &config) {
    return config.degrees.empty() && config.devices.empty();
  }

  /// The loop extents of one task of `node` under `config`: its shard, or
  /// the whole op where the config is replicated.
  static std::vector<int64_t> shardOf(const OpNode &node,
                                      const ParallelConfig &config) {
    return isReplicated(config) ? node.loopSizes
                                : config.shardSizes(node.loopSizes);
  }

  /// Checks every config against its node and the device count; returns
  /// the first problem, naming the node.
  std::optional<std::string> validate(const OpGraph &graph) const;

  /// `{"devices": N, "ops": [{"node": i, "op": ..., "location": ...,
  /// "degrees": [...], "devices": [...]}, ...]}`; replicated ops are listed
  /// with `"replicated": true`.
  std::string toJSON(const OpGraph &graph) const;
  static std::optional<Strategy> fromJSON(const std::string &text,
                                          const OpGraph &graph,
                                          std::string &error);
};

} // namespace soap

#endif // SOAP_GRAPH_STRATEGY_H

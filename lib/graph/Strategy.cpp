//===- Strategy.cpp - a parallelization configuration per op --------------===//

#include "soap/graph/Strategy.h"

#include <algorithm>

#include <nlohmann/json.hpp>

using json = nlohmann::json;

namespace soap {

static std::string describe(const OpGraph &graph, size_t node) {
  const OpNode &n = graph.nodes[node];
  std::string s = "node " + std::to_string(node) + " (" + n.opName;
  if (!n.location.empty())
    s += " at " + n.location;
  return s + ")";
}

std::optional<std::string> Strategy::validate(const OpGraph &graph) const {
  if (numDevices < 1)
    return "a strategy needs at least one device";
  if (configs.size() != graph.nodes.size())
    return "the strategy has " + std::to_string(configs.size()) +
           " configs but the model has " + std::to_string(graph.nodes.size()) +
           " ops";
  for (size_t n = 0; n < configs.size(); ++n) {
    const ParallelConfig &c = configs[n];
    if (isReplicated(c))
      continue;
    const OpNode &node = graph.nodes[n];
    if (!node.partitionable && c.numTasks() != 1)
      return describe(graph, n) + " is not partitionable; it can only run "
                                  "replicated or whole on one device";
    std::vector<int64_t> sizes = node.loopSizes;
    if (!node.partitionable)
      sizes.clear();
    if (auto p = checkConfigShape(c.degrees, c.devices.size()))
      return describe(graph, n) + ": " + *p;
    if (auto p = checkConfigDevices(c.devices, numDevices))
      return describe(graph, n) + ": " + *p;
    if (auto p = checkConfigForLoops(c.degrees, sizes, node.loopNames))
      return describe(graph, n) + ": " + *p;
  }
  return std::nullopt;
}

std::string Strategy::toJSON(const OpGraph &graph) const {
  json ops = json::array();
  for (size_t n = 0; n < configs.size(); ++n) {
    json e = {{"node", n}};
    if (n < graph.nodes.size()) {
      e["op"] = graph.nodes[n].opName;
      e["location"] = graph.nodes[n].location;
    }
    if (isReplicated(configs[n])) {
      e["replicated"] = true;
    } else {
      e["degrees"] = configs[n].degrees;
      e["devices"] = configs[n].devices;
    }
    ops.push_back(e);
  }
  json j = {{"devices", numDevices}, {"ops", ops}};
  return j.dump(1);
}

std::optional<Strategy> Strategy::fromJSON(const std::string &text,
                                           const OpGraph &graph,
                                           std::string &error) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    error = "strategy: not valid JSON";
    return std::nullopt;
  }
  if (!j.contains("devices") || !j["devices"].is_number_integer()) {
    error = "strategy: 'devices' must be an integer";
    return std::nullopt;
  }
  if (!j.contains("ops") || !j["ops"].is_array()) {
    error = "strategy: 'ops' must be an array";
    return std::nullopt;
  }
  Strategy strategy;
  strategy.numDevices = j["devices"].get<int>();
  strategy.configs.assign(graph.nodes.size(), ParallelConfig{});
  std::vector<bool> seen(graph.nodes.size(), false);
  for (size_t i = 0; i < j["ops"].size(); ++i) {
    const json &e = j["ops"][i];
    std::string path = "strategy: 'ops[" + std::to_string(i) + "]";
    if (!e.is_object() || !e.contains("node") ||
        !e["node"].is_number_integer()) {
      error = path + ".node' must be an integer";
      return std::nullopt;
    }
    int node = e["node"].get<int>();
    if (node < 0 || node >= static_cast<int>(graph.nodes.size())) {
      error = path + ".node' is " + std::to_string(node) +
              " but the model has " + std::to_string(graph.nodes.size()) +
              " ops";
      return std::nullopt;
    }
    if (e.contains("op") && e["op"].is_string() &&
        e["op"].get<std::string>() != graph.nodes[node].opName) {
      error = path + ".op' is '" + e["op"].get<std::string>() +
              "' but op " + std::to_string(node) + " of the model is '" +
              graph.nodes[node].opName + "'";
      return std::nullopt;
    }
    seen[node] = true;
    if (e.contains("replicated") && !e["replicated"].is_boolean()) {
      error = path + ".replicated' must be true or false";
      return std::nullopt;
    }
    if (e.value("replicated", false))
      continue;
    // Integers only: nlohmann would truncate 3.5 to 3.
    auto integers = [&](const char *key) {
      return e.contains(key) && e[key].is_array() &&
             std::all_of(e[key].begin(), e[key].end(),
                         [](const json &v) { return v.is_number_integer(); });
    };
    if (!integers("degrees") || !integers("devices")) {
      error = path + "' needs integer lists 'degrees' and 'devices' (or "
                     "\"replicated\": true)";
      return std::nullopt;
    }
    strategy.configs[node].degrees = e["degrees"].get<std::vector<int64_t>>();
    strategy.configs[node].devices = e["devices"].get<std::vector<int64_t>>();
  }
  for (size_t n = 0; n < seen.size(); ++n)
    if (!seen[n]) {
      error = "strategy: no config for " + describe(graph, n);
      return std::nullopt;
    }
  if (auto problem = strategy.validate(graph)) {
    error = "strategy: " + *problem;
    return std::nullopt;
  }
  return strategy;
}

} // namespace soap

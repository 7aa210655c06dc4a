//===- ConfigSpace.cpp - the configs an op can take -----------------------===//

#include "soap/search/ConfigSpace.h"

#include <algorithm>
#include <numeric>

namespace soap {

static std::vector<int64_t> divisors(int64_t n, int64_t limit) {
  std::vector<int64_t> result;
  for (int64_t d = 1; d <= std::min(n, limit); ++d)
    if (n % d == 0)
      result.push_back(d);
  return result;
}

ParallelConfig randomConfig(const OpNode &node, int numDevices,
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

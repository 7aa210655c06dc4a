//===- ConfigSpace.h - the configs an op can take ---------------*- C++ -*-===//

#ifndef SOAP_SEARCH_CONFIGSPACE_H
#define SOAP_SEARCH_CONFIGSPACE_H

#include "soap/graph/OpGraph.h"
#include "soap/graph/ParallelConfig.h"

#include <random>

namespace soap {

/// A random valid config for `node` on `numDevices` devices: degrees that
/// divide their loops (any mix of sample, attribute, parameter and
/// reduction splits) with at most `numDevices` tasks, placed on an aligned
/// block of devices or on a random set of them; occasionally replicated.
/// Non-partitionable nodes get replicated or a single device.
ParallelConfig randomConfig(const OpNode &node, int numDevices,
                            std::mt19937_64 &rng);

/// Every config of `node` on `numDevices` devices: replicated, and every
/// degree vector dividing the loops with at most `numDevices` tasks, with
/// every assignment of tasks to devices. Only for small cases (tests that
/// enumerate the optimum): the count grows as numDevices^tasks.
std::vector<ParallelConfig> enumerateConfigs(const OpNode &node,
                                             int numDevices);

} // namespace soap

#endif // SOAP_SEARCH_CONFIGSPACE_H

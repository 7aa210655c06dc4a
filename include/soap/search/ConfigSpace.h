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

} // namespace soap

#endif // SOAP_SEARCH_CONFIGSPACE_H

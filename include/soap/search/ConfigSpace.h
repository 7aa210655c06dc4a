//===- ConfigSpace.h - the configs an op can take ---------------*- C++ -*-===//

#ifndef SOAP_SEARCH_CONFIGSPACE_H
#define SOAP_SEARCH_CONFIGSPACE_H

#include "soap/graph/OpGraph.h"
#include "soap/graph/ParallelConfig.h"

#include <optional>
#include <random>

namespace soap {

/// Whether the partitioner can follow `degrees` on `node` as the simulator
/// prices them: a reshape's task must read a contiguous block of each
/// collapsed dimension (in a group, every dimension after the first one
/// whose part is not of size one is whole), as
/// SpmdPartitioner::partitionByConfig requires. A reshape it cannot follow
/// passes its input's layout through instead, which the simulator does not
/// price (BERT's heads split along the sequence). Every other op: true.
bool followableSplit(const OpNode &node, const std::vector<int64_t> &degrees);

/// A random valid config for `node` on `numDevices` devices: degrees that
/// divide their loops (any mix of sample, attribute, parameter and
/// reduction splits) with at most `numDevices` tasks, placed on an aligned
/// block of devices or on a random set of them; occasionally replicated.
/// Non-partitionable nodes get replicated or a single device. Only
/// followable splits (followableSplit).
ParallelConfig randomConfig(const OpNode &node, int numDevices,
                            std::mt19937_64 &rng);

/// A config next to `current` (a config of `node`), for a local step of
/// the search: one of
///  - the same degrees on another aligned block of devices;
///  - one loop's degree doubled or halved, on the aligned block of the new
///    size around the op's first device;
///  - a factor of two moved from one loop's degree to another's, on the
///    same devices.
/// A random config (randomConfig) when `current` is replicated or on one
/// device of an op that cannot be split, or when the drawn step does not
/// apply (no other block, no degree that can change).
ParallelConfig neighbourConfig(const OpNode &node,
                               const ParallelConfig &current, int numDevices,
                               std::mt19937_64 &rng);

/// Ops that the search moves together: the ops that read one parameter
/// (ops sharing a parameter, such as the steps of an unrolled RNN, are
/// merged into one layer; an elementwise op reading a parameter, such as a
/// bias add, joins the layer of the matmul or convolution that produces
/// its input) plus the partitionable ops nearest to them, in hops over
/// producer-consumer edges (ties go to the layer first reached).
struct Layer {
  std::vector<int> ops;     ///< sorted node ids, the readers included
  std::vector<int> readers; ///< sorted node ids that read a parameter
};

/// The graph's layers, in order of their first op. Ops no parameter reader
/// reaches are in no layer; a graph without parameters has none.
std::vector<Layer> layerGroups(const OpGraph &graph);

/// `config`, chosen for `from`, carried over to `to`: itself when the two
/// have the same loops; replicated or single-device configs as they are;
/// otherwise the same devices with the task count split over `to`'s loops,
/// sample loops first, then attribute and parameter loops, reduction loops
/// last, skipping loops whose split the partitioner could not follow
/// (followableSplit). Nothing when the count cannot be split over `to`'s
/// loops.
std::optional<ParallelConfig> carryConfig(const ParallelConfig &config,
                                          const OpNode &from,
                                          const OpNode &to);

/// Every config of `node` on `numDevices` devices: replicated, and every
/// degree vector dividing the loops with at most `numDevices` tasks, with
/// every assignment of tasks to devices. Only for small cases (tests that
/// enumerate the optimum): the count grows as numDevices^tasks.
std::vector<ParallelConfig> enumerateConfigs(const OpNode &node,
                                             int numDevices);

} // namespace soap

#endif // SOAP_SEARCH_CONFIGSPACE_H

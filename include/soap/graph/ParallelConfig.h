//===- ParallelConfig.h - degrees and device placement of an op -*- C++ -*-===//
//
// Plain C++ form of #soap.config: a degree per loop of an op and the device of
// each task, tasks numbered row-major over the grid of degrees. The checks
// here are the ones the dialect's verifier reports, so the search, the
// strategy files and the IR agree on what a valid configuration is.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_GRAPH_PARALLELCONFIG_H
#define SOAP_GRAPH_PARALLELCONFIG_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace soap {

struct ParallelConfig {
  std::vector<int64_t> degrees; ///< parts per loop
  std::vector<int64_t> devices; ///< device of each task, row-major

  /// Product of the degrees.
  int64_t numTasks() const;
  /// Grid coordinates of task `task` (row-major, last loop fastest).
  std::vector<int64_t> taskCoordinates(int64_t task) const;
  /// Task number of the grid coordinates `coords`.
  int64_t taskIndex(const std::vector<int64_t> &coords) const;
  /// Loop extents of every task: `loopSizes[l] / degrees[l]`.
  std::vector<int64_t> shardSizes(const std::vector<int64_t> &loopSizes) const;
};

/// Checks what a config must satisfy on its own: degrees >= 1 and one device
/// per task. Returns the problem, or nothing when it is fine.
std::optional<std::string> checkConfigShape(const std::vector<int64_t> &degrees,
                                            size_t numDevices);

/// Checks that every device id lies in [0, numDevicesDeclared).
std::optional<std::string>
checkConfigDevices(const std::vector<int64_t> &devices,
                   int64_t numDevicesDeclared);

/// Checks a config against the loops of the op it is attached to: one degree
/// per loop and each degree dividing its loop's size (negative = unknown
/// size, which only degree 1 fits). `loopNames` may be empty.
std::optional<std::string>
checkConfigForLoops(const std::vector<int64_t> &degrees,
                    const std::vector<int64_t> &loopSizes,
                    const std::vector<std::string> &loopNames);

/// Formats `[a, b, c]`.
std::string formatList(const std::vector<int64_t> &values);

} // namespace soap

#endif // SOAP_GRAPH_PARALLELCONFIG_H

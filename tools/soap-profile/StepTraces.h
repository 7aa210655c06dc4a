//===- StepTraces.h - the steps of --program --run, from traces -*- C++ -*-===//
//
// soap-profile --program --run runs each program's training step with
// --trace; this reads each rank's Chrome trace into per-step samples: the
// step's time, each kernel's (with the dispatch around it), the runtime's
// copies and the blocking collectives.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_TOOLS_PROFILE_STEPTRACES_H
#define SOAP_TOOLS_PROFILE_STEPTRACES_H

#include "soap/machine/Machine.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace soap::profile {

/// A blocking collective of a step's trace: its kind, its bytes (as
/// Machine::collectiveCost counts them) and its group's size.
using CollectiveSize = std::tuple<CollectiveKind, int64_t, int64_t>;

/// The kind of a blocking collective's trace event ("soap.all_gather"),
/// none for other events (an overlapped all-reduce's start and wait,
/// sends, receives).
std::optional<CollectiveKind> collectiveOfTraceName(llvm::StringRef name);

/// --program --run: the steps a program ran, over all its runs, each with
/// its kernels' times on every rank.
struct StepSamples {
  /// Per step: the slowest rank's time.
  std::vector<double> steps;
  /// Per rank: per kernel (its trace id), its time in each step; the
  /// runtime's copies in each step; kernel names.
  struct Rank {
    std::map<int64_t, std::vector<double>> kernels;
    std::vector<double> copies;
    std::map<int64_t, std::string> names;
    /// Per (kind, bytes, group size): the seconds of the blocking
    /// collectives in each step, and how many ran.
    std::map<CollectiveSize, std::pair<std::vector<double>, std::vector<int>>>
        collectives;
  };
  std::vector<Rank> ranks;
};

/// Reads the steps of one run from its ranks' traces (rank `rank`'s at
/// `paths[rank]`) and appends them to `samples`.
bool readRunTraces(llvm::ArrayRef<std::string> paths, StepSamples &samples,
                   std::string &error);

} // namespace soap::profile

#endif // SOAP_TOOLS_PROFILE_STEPTRACES_H

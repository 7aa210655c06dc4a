//===- Search.h - the MCMC strategy search ----------------------*- C++ -*-===//
//
// Metropolis-Hastings over strategies (after FlexFlow): a proposal gives one
// random op, or one random layer, a random valid config; its cost is the simulated step time
// (delta simulation) plus a penalty for memory above the limit; a worse
// proposal is accepted with probability exp(-beta * delta), beta scaled to
// the current cost. Chains start from data parallelism, every applicable
// expert strategy and random strategies, run in rounds (in parallel on
// several threads), and restart from the best strategy after each round.
// The result depends only on the inputs and the seed, not on the threads.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_SEARCH_SEARCH_H
#define SOAP_SEARCH_SEARCH_H

#include "soap/sim/Simulator.h"

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace soap {

struct SearchOptions {
  /// Proposals in all (0: until `timeLimit`, or 20000 when neither is set).
  int64_t budget = 0;
  /// Seconds of search (0: no limit), counted from `start`. Checked before
  /// every proposal, and rounds are sized to a tenth of the limit so
  /// that every chain gets its share; a search stopped by time is not
  /// reproducible, one stopped by budget is.
  double timeLimit = 0;
  /// When the time limit starts (unset: when searchStrategy starts). The
  /// pass sets it when it starts, so that building the op graph counts.
  std::optional<std::chrono::steady_clock::time_point> start;
  uint64_t seed = 1;
  int chains = 4;
  int threads = 1;
  /// Bytes per device; 0: the device's memory.
  int64_t memoryLimit = 0;
  /// A proposal worse by a fraction f of the current cost is accepted with
  /// probability exp(-f / temperature).
  double temperature = 0.01;
  /// Share of the proposals that move a whole layer (layerGroups: a
  /// parameter's readers and the ops around them) to one config, carried
  /// over to each of its ops; the others change one op (or the steps that
  /// share its weights).
  double layerMoves = 0.7;
  /// Share of the proposals (single-op and layer moves alike) that take a
  /// step from the op's current config (neighbourConfig: another device
  /// block, a degree doubled or halved, a factor of two moved between
  /// loops) instead of drawing a random config.
  double localMoves = 0.5;
  /// Proposals per chain between restarts from the best (0: automatic).
  int64_t roundLength = 0;
  /// Called between rounds (progress display).
  std::function<void(int64_t iterations, double bestCost,
                     double acceptanceRate, double seconds)>
      progress;
};

struct SearchResult {
  Strategy best;
  SimReport bestReport;
  double bestCost = 0;
  bool fitsMemory = true;
  int64_t memoryLimit = 0;
  int64_t peakMemory = 0; ///< of the best strategy, max over devices

  double dataParallelTime = 0; ///< simulated step time, seconds
  std::string bestExpertName;  ///< best of the baseline strategies
  double bestExpertTime = 0;
  std::vector<std::pair<std::string, double>> startTimes; ///< all baselines

  int64_t iterations = 0;
  double seconds = 0;
  double acceptanceRate = 0;
  /// (seconds, iterations, best cost) after every round: convergence.
  std::vector<std::array<double, 3>> convergence;

  /// The JSON summary: times in ms, speedups, iterations per second,
  /// convergence.
  std::string toJSON() const;
};

/// The cost the search minimizes: step time, times (1 + 10 x the largest
/// fraction by which a device's memory exceeds the limit).
double searchCost(const SimReport &report, int64_t memoryLimit);

SearchResult searchStrategy(const OpGraph &graph, const CostModel &cost,
                            SimOptions simOptions,
                            const SearchOptions &options);

} // namespace soap

#endif // SOAP_SEARCH_SEARCH_H

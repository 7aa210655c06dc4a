//===- Search.cpp - the MCMC strategy search ------------------------------===//

#include "soap/search/Search.h"
#include "soap/machine/Machine.h"
#include "soap/search/ConfigSpace.h"
#include "soap/search/Strategies.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <thread>

namespace soap {

double searchCost(const SimReport &report, int64_t memoryLimit) {
  double overflow = 0;
  if (memoryLimit > 0)
    for (int64_t bytes : report.devicePeakMemory)
      overflow = std::max(overflow, double(bytes - memoryLimit) /
                                        double(memoryLimit));
  return report.stepTime * (1 + 10 * std::max(0.0, overflow));
}

static int64_t peakOf(const SimReport &report) {
  int64_t peak = 0;
  for (int64_t bytes : report.devicePeakMemory)
    peak = std::max(peak, bytes);
  return peak;
}

std::string SearchResult::toJSON() const {
  nlohmann::json j;
  j["best_step_time_ms"] = bestReport.stepTime * 1e3;
  j["data_parallel_ms"] = dataParallelTime * 1e3;
  j["best_expert"] = bestExpertName;
  j["best_expert_ms"] = bestExpertTime * 1e3;
  j["speedup_over_data_parallel"] =
      bestReport.stepTime > 0 ? dataParallelTime / bestReport.stepTime : 0;
  j["speedup_over_best_expert"] =
      bestReport.stepTime > 0 ? bestExpertTime / bestReport.stepTime : 0;
  nlohmann::json starts = nlohmann::json::object();
  for (const auto &[name, time] : startTimes)
    starts[name] = time * 1e3;
  j["baselines_ms"] = starts;
  j["fits_memory"] = fitsMemory;
  j["memory_limit_bytes"] = memoryLimit;
  j["peak_memory_bytes"] = peakMemory;
  j["iterations"] = iterations;
  j["search_seconds"] = seconds;
  j["iterations_per_second"] = seconds > 0 ? iterations / seconds : 0;
  j["acceptance_rate"] = acceptanceRate;
  nlohmann::json curve = nlohmann::json::array();
  for (const auto &point : convergence)
    curve.push_back({{"seconds", point[0]},
                     {"iterations", point[1]},
                     {"best_ms", point[2] * 1e3}});
  j["convergence"] = curve;
  return j.dump(1);
}

namespace {

/// One Markov chain with its own simulator (delta state) and random stream.
struct Chain {
  Chain(const OpGraph &graph, const CostModel &cost, SimOptions options,
        uint64_t seed)
      : simulator(graph, cost, options), rng(seed) {}
  Simulator simulator;
  std::mt19937_64 rng;
  double cost = 0;
  double bestCost = 0;
  Strategy best;
  int64_t proposals = 0, accepted = 0;
};

Strategy randomStrategy(const OpGraph &graph, int numDevices,
                        std::mt19937_64 &rng) {
  Strategy s;
  s.numDevices = numDevices;
  for (const OpNode &node : graph.nodes)
    s.configs.push_back(randomConfig(node, numDevices, rng));
  return s;
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                       start)
      .count();
}

} // namespace

SearchResult searchStrategy(const OpGraph &graph, const CostModel &cost,
                            SimOptions simOptions,
                            const SearchOptions &options) {
  using Clock = std::chrono::steady_clock;
  Clock::time_point startClock = options.start.value_or(Clock::now());
  std::optional<Clock::time_point> deadline;
  if (options.timeLimit > 0)
    deadline =
        startClock + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(options.timeLimit));
  auto pastDeadline = [&] { return deadline && Clock::now() >= *deadline; };
  const Machine &machine = cost.machine();
  int numDevices = machine.numDevices();
  SearchResult result;
  result.memoryLimit = options.memoryLimit > 0
                           ? options.memoryLimit
                           : machine.deviceType().memoryBytes;
  int64_t limit = result.memoryLimit;

  // Starting points: the baselines that fit the model, then random ones.
  std::vector<Strategy> starts;
  std::vector<double> startCosts;
  std::vector<SimReport> startReports;
  {
    Simulator simulator(graph, cost, simOptions);
    for (const std::string &name : baselineStrategyNames()) {
      // Past the time limit, data parallelism (the first) is the only
      // starting point simulated.
      if (!starts.empty() && pastDeadline())
        break;
      Strategy s = *strategyByName(name, graph, numDevices);
      if (s.validate(graph))
        continue;
      SimReport report = simulator.simulate(s);
      result.startTimes.emplace_back(name, report.stepTime);
      if (name == "data-parallel") {
        result.dataParallelTime = report.stepTime;
      } else if (result.bestExpertName.empty() ||
                 report.stepTime < result.bestExpertTime) {
        result.bestExpertName = name;
        result.bestExpertTime = report.stepTime;
      }
      starts.push_back(std::move(s));
      startCosts.push_back(searchCost(report, limit));
      startReports.push_back(report);
    }
    if (result.bestExpertName.empty()) {
      result.bestExpertName = "data-parallel";
      result.bestExpertTime = result.dataParallelTime;
    }
    std::mt19937_64 rng(options.seed * 7919 + 17);
    int numChains = std::max(1, options.chains);
    for (int c = static_cast<int>(starts.size());
         c < numChains && (starts.empty() || !pastDeadline()); ++c) {
      Strategy s = randomStrategy(graph, numDevices, rng);
      SimReport report = simulator.simulate(s);
      starts.push_back(std::move(s));
      startCosts.push_back(searchCost(report, limit));
      startReports.push_back(report);
    }
  }
  size_t bestStart = std::min_element(startCosts.begin(), startCosts.end()) -
                     startCosts.begin();
  result.best = starts[bestStart];
  result.bestCost = startCosts[bestStart];
  result.bestReport = startReports[bestStart];

  // Chains start from the cheapest starting points first (data parallel
  // always among them), so that a baseline far off the mark (layers placed
  // one per device on a large machine) does not take a chain's place.
  std::vector<size_t> order(starts.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin() + 1, order.end(), [&](size_t a, size_t b) {
    return startCosts[a] < startCosts[b];
  });
  int numChains = std::max(1, options.chains);
  std::vector<std::unique_ptr<Chain>> chains;
  // No chain starts once the time is up (setting one up is a simulation).
  for (int c = 0; c < numChains && !pastDeadline(); ++c) {
    auto chain = std::make_unique<Chain>(
        graph, cost, simOptions,
        options.seed * 1000003 + static_cast<uint64_t>(c) * 7907);
    const Strategy &start = starts[order[c % order.size()]];
    chain->cost = searchCost(chain->simulator.simulate(start), limit);
    chain->bestCost = chain->cost;
    chain->best = start;
    chains.push_back(std::move(chain));
  }
  numChains = static_cast<int>(chains.size());

  int64_t budget = options.budget > 0
                       ? options.budget
                       : (options.timeLimit > 0 ? INT64_MAX : 20000);
  int64_t round =
      options.roundLength > 0
          ? options.roundLength
          : std::clamp<int64_t>(budget == INT64_MAX
                                    ? 200
                                    : budget / std::max(1, numChains) / 10,
                                10, 2000);
  // Under a time limit the first round is short: its rate sizes the next.
  if (deadline && options.roundLength <= 0)
    round = 10;
  int threads = std::clamp(options.threads, 1, std::max(1, numChains));
  int numNodes = graph.nodes.size();
  int64_t lastImprovement = 0;
  result.convergence.push_back({secondsSince(startClock), 0, result.bestCost});

  // Ops that share their weights and their shape (the steps of an unrolled
  // RNN, a tied embedding): half of the proposals for one of them give the
  // same config to all, since splitting a shared weight pays off only when
  // every reader splits it alike.
  std::vector<std::vector<int>> twins(numNodes);
  {
    std::map<std::pair<std::vector<int>, std::vector<int64_t>>,
             std::vector<int>>
        groups;
    for (int n = 0; n < numNodes; ++n) {
      std::vector<int> weights;
      for (const auto &[tensor, access] : graph.readTensors(n))
        if (graph.tensors[tensor].isParameter &&
            graph.tensors[tensor].producer < 0)
          weights.push_back(tensor);
      if (weights.empty() || !graph.nodes[n].partitionable)
        continue;
      std::sort(weights.begin(), weights.end());
      groups[{weights, graph.nodes[n].loopSizes}].push_back(n);
    }
    for (const auto &[key, members] : groups)
      if (members.size() > 1)
        for (int n : members)
          twins[n] = members;
  }

  // Layers: a parameter's readers and the ops around them. Some proposals
  // (options.layerMoves) move a whole layer: one config for a random
  // reader, carried over to every op of the layer. Placing a layer on a
  // device subset (a pipeline-like placement of an RNN's layers, an
  // embedding kept apart) pays off only when its elementwise ops follow,
  // which single-op moves would find one op at a time, each step uphill.
  std::vector<Layer> layers = layerGroups(graph);

  // A new config for `node`: a step from its current one, or a random one.
  auto propose = [&](Chain &chain, int node) {
    bool local = std::uniform_real_distribution<double>(0, 1)(chain.rng) <
                 options.localMoves;
    if (local)
      return neighbourConfig(graph.nodes[node],
                             chain.simulator.strategy().configs[node],
                             numDevices, chain.rng);
    return randomConfig(graph.nodes[node], numDevices, chain.rng);
  };

  auto runChain = [&](Chain &chain, int64_t proposals) {
    Simulator &sim = chain.simulator;
    std::vector<std::pair<int, ParallelConfig>> changes;
    for (int64_t i = 0; i < proposals && !pastDeadline(); ++i) {
      changes.clear();
      double u = std::uniform_real_distribution<double>(0, 1)(chain.rng);
      bool layerMove =
          !layers.empty() &&
          std::uniform_real_distribution<double>(0, 1)(chain.rng) <
              options.layerMoves;
      if (layerMove) {
        const Layer &layer =
            layers[std::uniform_int_distribution<size_t>(
                0, layers.size() - 1)(chain.rng)];
        int seed = layer.readers[std::uniform_int_distribution<size_t>(
            0, layer.readers.size() - 1)(chain.rng)];
        ParallelConfig proposal = propose(chain, seed);
        for (int n : layer.ops)
          if (std::optional<ParallelConfig> carried =
                  carryConfig(proposal, graph.nodes[seed], graph.nodes[n]))
            changes.emplace_back(n, std::move(*carried));
      } else {
        int node =
            std::uniform_int_distribution<int>(0, numNodes - 1)(chain.rng);
        ParallelConfig proposal = propose(chain, node);
        bool together = !twins[node].empty() &&
                        std::uniform_int_distribution<int>(0, 1)(chain.rng);
        if (together)
          for (int twin : twins[node])
            changes.emplace_back(twin, proposal);
        else
          changes.emplace_back(node, proposal);
      }
      double candidate = searchCost(sim.simulateDelta(changes), limit);
      ++chain.proposals;
      double delta = candidate - chain.cost;
      bool accept =
          delta <= 0 ||
          u < std::exp(-delta / (options.temperature * chain.cost + 1e-30));
      if (!accept) {
        sim.undo();
        continue;
      }
      ++chain.accepted;
      chain.cost = candidate;
      if (candidate < chain.bestCost) {
        chain.bestCost = candidate;
        chain.best = sim.strategy();
      }
    }
  };

  while (numNodes > 0 && numChains > 0 && result.iterations < budget &&
         !pastDeadline()) {
    int64_t proposals = round;
    if (budget != INT64_MAX)
      proposals = std::min<int64_t>(
          round, (budget - result.iterations + numChains - 1) / numChains);
    Clock::time_point roundStart = Clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        for (int c = t; c < numChains; c += threads)
          runChain(*chains[c], proposals);
      });
    for (std::thread &thread : pool)
      thread.join();
    int64_t before = result.iterations, accepted = 0;
    result.iterations = 0;
    for (auto &chain : chains) {
      result.iterations += chain->proposals;
      accepted += chain->accepted;
    }
    result.acceptanceRate =
        result.iterations ? double(accepted) / result.iterations : 0;
    // Under a time limit, a round takes about a tenth of it (with a round
    // length chosen automatically), so that chains run one after another
    // on one thread all get their share before the deadline.
    if (deadline && options.roundLength <= 0) {
      double roundSeconds = secondsSince(roundStart);
      double rate = (result.iterations - before) / std::max(roundSeconds, 1e-6);
      round = std::clamp<int64_t>(
          static_cast<int64_t>(rate * options.timeLimit / 10 / numChains), 1,
          2000);
    }
    // The best of the round, deterministically (ties: lowest chain).
    int roundBest = -1;
    for (int c = 0; c < numChains; ++c)
      if (chains[c]->bestCost < result.bestCost &&
          (roundBest < 0 || chains[c]->bestCost < chains[roundBest]->bestCost))
        roundBest = c;
    if (roundBest >= 0) {
      result.bestCost = chains[roundBest]->bestCost;
      result.best = chains[roundBest]->best;
      lastImprovement = result.iterations;
    }
    double elapsed = secondsSince(startClock);
    result.convergence.push_back(
        {elapsed, double(result.iterations), result.bestCost});
    if (options.progress)
      options.progress(result.iterations, result.bestCost,
                       result.acceptanceRate, elapsed);
    if (pastDeadline())
      break;
    if (budget != INT64_MAX && result.iterations - lastImprovement >= budget / 2)
      break;
    if (result.iterations >= budget)
      break;
    // Restart every chain from the best strategy found so far: by a delta
    // simulation of the ops whose configs differ when they are few (it
    // gives what a full simulation would, faster), and not at all for a
    // chain that is there already.
    for (auto &chain : chains) {
      Simulator &sim = chain->simulator;
      std::vector<std::pair<int, ParallelConfig>> differing;
      for (int n = 0; n < numNodes; ++n) {
        const ParallelConfig &now = sim.strategy().configs[n];
        const ParallelConfig &best = result.best.configs[n];
        if (now.degrees != best.degrees || now.devices != best.devices)
          differing.emplace_back(n, best);
      }
      if (differing.size() * 4 > static_cast<size_t>(numNodes))
        chain->cost = searchCost(sim.simulate(result.best), limit);
      else if (!differing.empty())
        chain->cost = searchCost(sim.simulateDelta(differing), limit);
      chain->bestCost = chain->cost;
      chain->best = result.best;
    }
  }

  // A starting point's report is at hand; a strategy the chains found is
  // simulated afresh.
  if (result.iterations > 0) {
    Simulator final(graph, cost, simOptions);
    result.bestReport = final.simulate(result.best);
  }
  result.peakMemory = peakOf(result.bestReport);
  result.fitsMemory = result.peakMemory <= limit;
  result.seconds = secondsSince(startClock);
  return result;
}

} // namespace soap

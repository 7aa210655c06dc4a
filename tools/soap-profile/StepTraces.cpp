//===- StepTraces.cpp - the steps of --program --run, from traces --------===//

#include "StepTraces.h"

#include "llvm/Support/MemoryBuffer.h"

#include <nlohmann/json.hpp>

#include <algorithm>

using llvm::ArrayRef;
using llvm::StringRef;

namespace soap::profile {

std::optional<CollectiveKind> collectiveOfTraceName(StringRef name) {
  if (!name.consume_front("soap."))
    return std::nullopt;
  for (CollectiveKind kind : collectiveKinds())
    if (name == collectiveName(kind))
      return kind;
  return std::nullopt;
}

bool readRunTraces(ArrayRef<std::string> paths, StepSamples &samples,
                   std::string &error) {
  size_t first = samples.steps.size();
  samples.ranks.resize(paths.size());
  for (size_t rank = 0; rank < paths.size(); ++rank) {
    const std::string &path = paths[rank];
    auto text = llvm::MemoryBuffer::getFile(path);
    if (!text) {
      error = "the step wrote no trace " + path;
      return false;
    }
    nlohmann::json json = nlohmann::json::parse(
        (*text)->getBuffer().begin(), (*text)->getBuffer().end(), nullptr,
        /*allow_exceptions=*/false);
    if (json.is_discarded() || !json.contains("traceEvents")) {
      error = path + ": not a Chrome trace";
      return false;
    }
    // Steps (thread 0), then each kernel's (thread 1) and collective's
    // (thread 2) time per step.
    std::vector<std::pair<double, double>> steps;
    for (const nlohmann::json &e : json["traceEvents"])
      if (e.value("ph", "") == "X" && e.value("tid", -1) == 0)
        steps.emplace_back(e.value("ts", 0.0),
                           e.value("ts", 0.0) + e.value("dur", 0.0));
    std::sort(steps.begin(), steps.end());
    if (steps.empty()) {
      error = path + ": no step in the trace";
      return false;
    }
    if (rank > 0 && samples.steps.size() - first != steps.size()) {
      error = path + ": " + std::to_string(steps.size()) +
              " step(s), rank 0 ran " +
              std::to_string(samples.steps.size() - first);
      return false;
    }
    samples.steps.resize(first + steps.size(), 0);
    for (size_t s = 0; s < steps.size(); ++s)
      samples.steps[first + s] = std::max(
          samples.steps[first + s], (steps[s].second - steps[s].first) * 1e-6);
    auto stepOf = [&](double ts) -> int {
      auto it = std::upper_bound(steps.begin(), steps.end(),
                                 std::make_pair(ts, 1e300));
      if (it == steps.begin() || ts > std::prev(it)->second)
        return -1;
      return static_cast<int>(std::prev(it) - steps.begin());
    };
    StepSamples::Rank &mine = samples.ranks[rank];
    size_t total = first + steps.size();
    mine.copies.resize(total, 0);
    // The step's events in the order they ran. The time between two of
    // them (dispatch, guards, allocation, freeing) is work the rank does
    // for the kernel that follows; before a communication event, and a
    // send's own time (copying its buffer, posting it), for the next
    // kernel; after the last kernel (completing the sends), for that one.
    // So a rank's kernels add up to its step less its waits and
    // collectives, as the simulator's tasks do.
    struct Event {
      double start, dur;
      int at; ///< its step
      const nlohmann::json *json;
    };
    std::vector<Event> events;
    for (const nlohmann::json &e : json["traceEvents"]) {
      int tid = e.value("tid", -1);
      if (e.value("ph", "") != "X" || (tid != 1 && tid != 2))
        continue;
      double start = e.value("ts", 0.0);
      if (int at = stepOf(start); at >= 0)
        events.push_back({start, e.value("dur", 0.0), at, &e});
    }
    std::stable_sort(
        events.begin(), events.end(),
        [](const Event &a, const Event &b) { return a.start < b.start; });
    std::vector<double> busyUntil(steps.size());
    for (size_t s = 0; s < steps.size(); ++s)
      busyUntil[s] = steps[s].first;
    // Per step: the last kernel charged (its per-step time), and the
    // dispatch time no kernel took yet.
    std::vector<double *> lastKernel(steps.size(), nullptr);
    std::vector<double> unclaimed(steps.size(), 0);
    for (const auto &[start, dur, at, event] : events) {
      const nlohmann::json &e = *event;
      double gap = std::max(0.0, start - busyUntil[at]) * 1e-6;
      busyUntil[at] = std::max(busyUntil[at], start + dur);
      double seconds = dur * 1e-6;
      const nlohmann::json &args = e.contains("args") ? e["args"] : e;
      double *charged = nullptr;
      if (e.value("tid", -1) == 2) {
        unclaimed[at] += gap;
        if (e.value("name", "") == "soap.send")
          unclaimed[at] += seconds;
        std::optional<CollectiveKind> kind =
            collectiveOfTraceName(e.value("name", ""));
        if (!kind || !args.contains("ranks"))
          continue;
        auto &[times, counts] =
            mine.collectives[{*kind, args.value("bytes", int64_t(0)),
                              args.value("ranks", int64_t(0))}];
        times.resize(total, 0);
        counts.resize(total, 0);
        times[first + at] += seconds;
        ++counts[first + at];
        continue;
      }
      if (!args.contains("id")) {
        if (e.value("cat", "") != "copy") {
          unclaimed[at] += gap;
          continue;
        }
        charged = &mine.copies[first + at];
      } else {
        int64_t id = args.value("id", int64_t(-1));
        std::vector<double> &perStep = mine.kernels[id];
        perStep.resize(total, 0);
        charged = &perStep[first + at];
        mine.names.try_emplace(id, e.value("name", ""));
      }
      *charged += seconds + gap + unclaimed[at];
      unclaimed[at] = 0;
      lastKernel[at] = charged;
    }
    // What the rank did after its last event (completing its sends) and
    // after its last kernel goes to that kernel.
    for (size_t s = 0; s < steps.size(); ++s)
      if (lastKernel[s])
        *lastKernel[s] +=
            unclaimed[s] + std::max(0.0, steps[s].second - busyUntil[s]) * 1e-6;
    for (auto &[id, perStep] : mine.kernels)
      perStep.resize(total, 0);
    for (auto &[key, perStep] : mine.collectives) {
      perStep.first.resize(total, 0);
      perStep.second.resize(total, 0);
    }
  }
  return true;
}

} // namespace soap::profile

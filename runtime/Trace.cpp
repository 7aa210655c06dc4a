//===- Trace.cpp - per-step and per-kernel timeline events ---------------===//

#include "Trace.h"

#include "GpuHooks.h"

#include "soap/support/AtomicFile.h"
#include "soap/Runtime/Runtime.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>

namespace soaprt {

namespace {
bool opTracing = false;
/// Start times of the kernels in flight (kernels do not nest, but a stack
/// costs nothing and tolerates it).
std::vector<double> openOps;
/// Kernel events beyond this many are dropped, so that tracing a long run
/// cannot exhaust memory.
constexpr size_t kMaxEvents = 4u << 20;
} // namespace

double nowUs() {
  using Clock = std::chrono::steady_clock;
  static const Clock::time_point start = Clock::now();
  return std::chrono::duration<double, std::micro>(Clock::now() - start)
      .count();
}

void setOpTracing(bool enabled) { opTracing = enabled; }

void reserveTraceEvents(size_t events) {
  std::vector<TraceEvent> &all = traceEvents();
  size_t size = all.size();
  // Growing into the room writes it: its pages are the process's before
  // the steps, not page faults inside them.
  all.resize(std::max(size, std::min(size + events, kMaxEvents)), TraceEvent{});
  all.resize(size);
}

void traceTensorMemory(int64_t bytes) {
  if (opTracing && traceEvents().size() < kMaxEvents)
    traceEvents().push_back({"tensor memory", "memory", nowUs(), 0, -1, bytes});
}

std::vector<TraceEvent> &traceEvents() {
  static std::vector<TraceEvent> events;
  return events;
}

bool writeChromeTrace(const std::string &path,
                      const std::vector<std::string> &opNames,
                      std::string &error) {
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", 0},
                    {"args", {{"name", "soap executable (rank 0)"}}}});
  events.push_back({{"name", "thread_name"},
                    {"ph", "M"},
                    {"pid", 0},
                    {"tid", 0},
                    {"args", {{"name", "steps"}}}});
  events.push_back({{"name", "thread_name"},
                    {"ph", "M"},
                    {"pid", 0},
                    {"tid", 1},
                    {"args", {{"name", "kernels"}}}});
  events.push_back({{"name", "thread_name"},
                    {"ph", "M"},
                    {"pid", 0},
                    {"tid", 2},
                    {"args", {{"name", "communication"}}}});
  for (const TraceEvent &event : traceEvents()) {
    std::string category = event.category;
    if (category == "memory") {
      events.push_back({{"name", event.name},
                        {"cat", category},
                        {"ph", "C"},
                        {"ts", event.startUs},
                        {"pid", 0},
                        {"args", {{"MB", event.bytes / (1024.0 * 1024.0)}}}});
      continue;
    }
    bool isOp = category == "op";
    bool isComm = category == "comm";
    bool isCopy = category == "copy";
    std::string name = event.name ? event.name : "";
    if (isOp && event.id >= 0 && static_cast<size_t>(event.id) < opNames.size())
      name = opNames[event.id];
    else if (category == "step")
      name = "step " + std::to_string(event.id);
    nlohmann::json args = {{"id", event.id}};
    if (isComm || isCopy)
      args = {{"bytes", event.bytes}};
    if (isComm && event.ranks > 0)
      args["ranks"] = event.ranks;
    events.push_back({{"name", name},
                      {"cat", category},
                      {"ph", "X"},
                      {"ts", event.startUs},
                      {"dur", event.durationUs},
                      {"pid", 0},
                      {"tid", isOp || isCopy ? 1
                              : isComm       ? 2
                                             : 0},
                      {"args", args}});
  }
  nlohmann::json trace = {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
  return soap::writeFileAtomically(path, trace.dump() + "\n", error);
}

ScopedEvent::ScopedEvent(const char *name, const char *category, int64_t bytes,
                         int64_t ranks)
    : name(name), category(category), bytes(bytes), ranks(ranks) {
  // A copy inside a traced op (a memref.copy the lowering bracketed with
  // the location of the op it serves, or a kernel's own copy) is part of
  // that op's event.
  if (opTracing && !(!openOps.empty() && std::strcmp(category, "copy") == 0))
    startUs = nowUs();
}

ScopedEvent::~ScopedEvent() {
  if (startUs < 0 || traceEvents().size() >= kMaxEvents)
    return;
  traceEvents().push_back(
      {name, category, startUs, nowUs() - startUs, -1, bytes, ranks});
}

} // namespace soaprt

/// On a GPU, an op's kernels run after the host enqueued them: a traced op
/// waits for the stream at both ends, so that its event spans its kernels.
static void waitForGpu() {
  if (soaprt::gpuHooks) // linked only into executables of GPU models
    soaprt::gpuHooks->synchronize();
}

extern "C" void soaprt_op_begin(int64_t id) {
  if (!soaprt::opTracing)
    return;
  waitForGpu();
  soaprt::openOps.push_back(soaprt::nowUs());
}

extern "C" void soaprt_op_end(int64_t id) {
  if (!soaprt::opTracing || soaprt::openOps.empty())
    return;
  waitForGpu();
  double start = soaprt::openOps.back();
  soaprt::openOps.pop_back();
  auto &events = soaprt::traceEvents();
  if (events.size() >= soaprt::kMaxEvents)
    return;
  events.push_back({nullptr, "op", start, soaprt::nowUs() - start, id});
}

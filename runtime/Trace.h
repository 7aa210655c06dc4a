//===- Trace.h - per-step and per-kernel timeline events ------*- C++ -*-===//
//
// The driver records one event per training step; generated code calls
// soaprt_op_begin/end around every kernel, which record an event only
// while tracing is on. writeChromeTrace writes them as Chrome trace JSON
// (the format --soap-simulate writes, so both open side by side).
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_RUNTIME_TRACE_H
#define SOAP_RUNTIME_TRACE_H

#include <cstdint>
#include <string>
#include <vector>

namespace soaprt {

/// One complete event ("ph": "X"); times in microseconds since the start.
/// Plain data (names are string literals), so that recording one while a
/// step runs costs two clock reads and a store: a traced step must run as
/// fast as an untraced one.
struct TraceEvent {
  const char *name;     // a string literal; kernels and steps: by `id`
  const char *category; // "step", "op", "comm", "copy" or "memory"
  double startUs = 0, durationUs = 0;
  int64_t id = -1;   // the op's index in soap_model_info's "ops", or the step
  int64_t bytes = 0; // "comm": the bytes this rank contributes; "copy";
                     // "memory": the bytes tensors hold from then on
  int64_t ranks = 0; // "comm": the ranks of the group (0: not recorded)
};

/// Records an event for the lifetime of the object, while kernel tracing is
/// on: "comm" (a row of its own) for the time this rank spends in one
/// communication call, waiting for the other ranks included; "copy" (on the
/// kernels' row) for a strided copy the generated code calls the runtime
/// for (pads, concatenations, slices).
class ScopedEvent {
public:
  /// `ranks`: a collective's group size, recorded with "comm" events. A
  /// collective's `bytes` count as Machine::collectiveCost counts them (as
  /// in nccl-tests): an all-reduce's or broadcast's buffer, an all-gather's
  /// gathered output, a reduce-scatter's or all-to-all's input on each
  /// rank.
  ScopedEvent(const char *name, const char *category, int64_t bytes,
              int64_t ranks = 0);
  ~ScopedEvent();
  ScopedEvent(const ScopedEvent &) = delete;
  ScopedEvent &operator=(const ScopedEvent &) = delete;

private:
  const char *name, *category;
  int64_t bytes, ranks;
  double startUs = -1;
};

/// Microseconds since the first call (a steady clock).
double nowUs();

/// Turns the recording of kernel events by soaprt_op_begin/end on or off.
void setOpTracing(bool enabled);

/// Makes room for `events` more events up front (at most the cap on
/// events), so that the event list does not grow, copy itself and move the
/// heap's thresholds while the steps it records run.
void reserveTraceEvents(size_t events);

/// While kernels are traced: records that the tensors now hold `bytes` (a
/// "memory" counter event, drawn as a graph under the kernels).
void traceTensorMemory(int64_t bytes);

/// Events recorded so far; kernel events name their op by id only.
std::vector<TraceEvent> &traceEvents();

/// Writes the events as {"traceEvents": [...]}; kernel events are named
/// after `opNames[id]`. Returns false with `error` naming the file.
bool writeChromeTrace(const std::string &path,
                      const std::vector<std::string> &opNames,
                      std::string &error);

} // namespace soaprt

#endif // SOAP_RUNTIME_TRACE_H

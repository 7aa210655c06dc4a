//===- SimReport.cpp - the simulator's report and trace ------------------===//
//
// The report of a simulated step (JSON) and its Chrome-trace timeline.
//
//===----------------------------------------------------------------------===//

#include "soap/sim/Simulator.h"

#include "SimulatorTasks.h"

#include <nlohmann/json.hpp>

#include <string>

namespace soap {
const char *taskKindName(TaskKind kind) {
  switch (kind) {
  case TaskKind::Forward:
    return "forward";
  case TaskKind::Backward:
    return "backward";
  case TaskKind::Transfer:
    return "transfer";
  case TaskKind::GradTransfer:
    return "grad-transfer";
  case TaskKind::AllReduce:
    return "all-reduce";
  case TaskKind::Update:
    return "update";
  case TaskKind::Collective:
    return "collective";
  }
  return "task";
}

bool SimReport::operator==(const SimReport &other) const {
  return stepTime == other.stepTime && deviceBusy == other.deviceBusy &&
         devicePeakMemory == other.devicePeakMemory &&
         linkBytes == other.linkBytes &&
         totalCommBytes == other.totalCommBytes && numTasks == other.numTasks;
}

std::string SimReport::toJSON(const Machine &machine) const {
  nlohmann::json j;
  j["machine"] = machine.name();
  j["step_time_ms"] = stepTime * 1e3;
  j["total_comm_bytes"] = totalCommBytes;
  j["num_tasks"] = numTasks;
  nlohmann::json devices = nlohmann::json::array();
  for (size_t d = 0; d < deviceBusy.size(); ++d) {
    nlohmann::json device = {{"device", d},
                             {"busy_ms", deviceBusy[d] * 1e3},
                             {"peak_memory_bytes", devicePeakMemory[d]}};
    // Where the peak is: the first point that holds it.
    for (const MemoryPoint &point : memoryTimeline)
      if (d < point.bytes.size() && point.bytes[d] == devicePeakMemory[d]) {
        device["peak_memory_at"] = point.what;
        break;
      }
    devices.push_back(device);
  }
  j["devices"] = devices;
  if (!memoryTimeline.empty()) {
    nlohmann::json timeline = nlohmann::json::array();
    for (const MemoryPoint &point : memoryTimeline)
      timeline.push_back({{"at", point.what}, {"bytes", point.bytes}});
    j["memory_timeline"] = timeline;
  }
  nlohmann::json links = nlohmann::json::array();
  for (size_t l = 0; l < linkBytes.size(); ++l)
    if (linkBytes[l] > 0)
      links.push_back(
          {{"link", machine.link(l).name}, {"bytes", linkBytes[l]}});
  j["links"] = links;
  if (coverage) {
    nlohmann::json byOp = nlohmann::json::object();
    for (const auto &[op, count] : coverage->rooflineByOp)
      byOp[op] = count;
    j["profile_coverage"] = {{"measured_ops", coverage->measured},
                             {"scaled_ops", coverage->scaled},
                             {"roofline_ops", coverage->roofline},
                             {"roofline_by_op", byOp}};
  }
  return j.dump(1);
}

SimReport Simulator::report() const {
  const Accounts &acc = *accounts;
  SimReport r;
  r.stepTime = scheduleEnd;
  for (int64_t fs : acc.busyFs)
    r.deviceBusy.push_back(fs / 1e15);
  r.devicePeakMemory = acc.memory;
  r.linkBytes = acc.linkBytes;
  r.totalCommBytes = acc.commBytes;
  r.numTasks = acc.numTasks;
  return r;
}

std::string Simulator::chromeTrace() const {
  nlohmann::json events = nlohmann::json::array();
  int numDevices = machine.numDevices();
  for (int d = 0; d < numDevices; ++d)
    events.push_back({{"name", "process_name"},
                      {"ph", "M"},
                      {"pid", d},
                      {"args", {{"name", "device " + std::to_string(d)}}}});
  for (size_t l = 0; l < machine.links().size(); ++l)
    events.push_back({{"name", "process_name"},
                      {"ph", "M"},
                      {"pid", numDevices + l},
                      {"args", {{"name", "link " + machine.link(l).name}}}});
  for (int g : order)
    for (int id : groups[g].tasks) {
      const Task &t = tasks[id];
      std::string name = t.kind == TaskKind::Collective
                             ? collectiveName(t.collective)
                             : taskKindName(t.kind);
      int node = t.key[1];
      bool ofParameter = t.key[0] == 4 || t.key[0] == 5;
      if (ofParameter)
        name += " " + graph.tensors[node].name;
      else if (t.kind != TaskKind::GradTransfer)
        name += " " + graph.nodes[node].opName + " #" + std::to_string(node);
      nlohmann::json args = {{"node", node}};
      if (!ofParameter && t.kind != TaskKind::GradTransfer &&
          !graph.nodes[node].location.empty())
        args["location"] = graph.nodes[node].location;
      if (t.bytes)
        args["bytes"] = t.bytes;
      int pid = t.resources.empty() ? 0 : t.resources.front();
      events.push_back({{"name", name},
                        {"cat", taskKindName(t.kind)},
                        {"ph", "X"},
                        {"pid", pid},
                        {"tid", 0},
                        {"ts", (endTime[id] - t.duration) * 1e6},
                        {"dur", t.duration * 1e6},
                        {"args", args}});
    }
  return nlohmann::json({{"traceEvents", events}, {"displayTimeUnit", "ms"}})
      .dump();
}

} // namespace soap

//===- Simulator.cpp - the execution simulator ----------------------------===//

#include "soap/sim/Simulator.h"

#include "SimulatorTasks.h"
#include "soap/layout/Layout.h"
#include "soap/machine/Machine.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <map>
#include <queue>
#include <set>
#include <tuple>
#include <unordered_map>

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
      links.push_back({{"link", machine.link(l).name}, {"bytes", linkBytes[l]}});
  j["links"] = links;
  if (coverage) {
    nlohmann::json byOp = nlohmann::json::object();
    for (const auto &[op, count] : coverage->rooflineByOp)
      byOp[op] = count;
    j["profile_coverage"] = {{"measured_ops", coverage->measured},
                             {"roofline_ops", coverage->roofline},
                             {"roofline_by_op", byOp}};
  }
  return j.dump(1);
}

//===----------------------------------------------------------------------===//
// Internal structures
//===----------------------------------------------------------------------===//

/// What simulateDelta changed, to put it back.
struct Simulator::UndoLog {
  struct NodeEntry {
    int node;
    ParallelConfig config;
    std::unique_ptr<Placement> placement;
    NodeTasks tasks;
  };
  bool valid = false;
  std::vector<NodeEntry> nodes;
  std::vector<std::pair<int, EdgeTasks>> edges;
  std::vector<std::pair<int, std::array<int, 2>>> parameterGroups;
  std::vector<std::pair<int, TaskInts>> preds;
  std::vector<std::pair<int, Task>> removed;
  std::vector<std::pair<int, Group>> removedGroups;
  std::vector<int> relinkedGroups, addedGroups;
  size_t taskCount = 0, groupCount = 0;
  std::vector<int> freeIds, freeGroupIds;
  /// The report's totals before the change.
  std::vector<int64_t> busyFs, memory, linkBytes, received;
  int64_t commBytes = 0, numTasks = 0;
  // The schedule after the kept prefix, as it was: the groups taken, and
  // the checkpoints after the one it resumed from.
  size_t prefix = 0;
  std::vector<int> order;
  std::vector<double> orderReady, checkpointFree, checkpointEnd;
  size_t checkpointsKept = 0;
  double scheduleEnd = 0;
  std::vector<int> taskIds;
  std::vector<double> taskEnds; ///< the end of each of taskIds
  std::vector<std::pair<int, double>> groupTimes;
};

/// Writes the region of `tensor` that `access` touches for the iterations
/// [lo, lo + shard) to `box` (one range per tensor dimension).
static void accessBox(const NodeAccess &access, const GraphTensor &tensor,
                      const std::vector<int64_t> &lo,
                      const std::vector<int64_t> &shard, Range *box) {
  for (size_t d = 0; d < access.indices.size(); ++d) {
    const IndexExpr &e = access.indices[d];
    int64_t size = tensor.shape[d];
    int64_t mn = e.constant, mx = e.constant;
    if (!e.isLinear || lo.empty()) {
      mn = 0;
      mx = size > 0 ? size - 1 : 0;
    } else {
      for (const IndexTerm &t : e.terms) {
        int64_t first = lo[t.loop], last = lo[t.loop] + shard[t.loop] - 1;
        if (t.coefficient >= 0) {
          mn += t.coefficient * first;
          mx += t.coefficient * last;
        } else {
          mn += t.coefficient * last;
          mx += t.coefficient * first;
        }
      }
      if (size > 0) {
        mn = std::clamp<int64_t>(mn, 0, size - 1);
        mx = std::clamp<int64_t>(mx, 0, size - 1);
      }
    }
    box[d] = {mn, mx};
  }
}

//===----------------------------------------------------------------------===//
// Construction
//===----------------------------------------------------------------------===//

Simulator::Simulator(const OpGraph &graph, const CostModel &cost,
                     SimOptions options)
    : graph(graph), cost(cost), machine(cost.machine()), options(options) {
  size_t n = graph.nodes.size();
  producersOf.resize(n);
  consumersOf.resize(n);
  for (size_t c = 0; c < n; ++c) {
    std::set<int> producers;
    for (const NodeAccess &a : graph.nodes[c].accesses) {
      int p = graph.tensors[a.tensor].producer;
      if (p < 0 || p == static_cast<int>(c) || a.role == AccessRole::Write)
        continue;
      if (a.role == AccessRole::Unread && a.isDestination)
        continue; // an output whose contents are ignored carries no data
      producers.insert(p);
    }
    for (int p : producers) {
      producersOf[c].push_back(p);
      consumersOf[p].push_back(static_cast<int>(c));
    }
  }
  producerEdges.resize(n);
  consumerEdges.resize(n);
  for (size_t c = 0; c < n; ++c)
    for (int p : producersOf[c]) {
      int id = edgeEnds.size();
      edgeEnds.emplace_back(p, static_cast<int>(c));
      producerEdges[c].push_back(id);
      consumerEdges[p].push_back(id);
    }
  edges.resize(edgeEnds.size());
  placements.resize(n);
  nodeTasks.resize(n);
  paths.resize(machine.numDevices());
  overlapsCommunication = machine.deviceType().overlapsCommunication;
  undoLog = std::make_unique<UndoLog>();
  accounts = std::make_unique<Accounts>();
  plans = std::make_unique<PlanCache>();
  parameterGroups.assign(graph.tensors.size(), {-1, -1});
  parameterReaders.resize(graph.tensors.size());
  parametersReadBy.resize(n);
  if (options.training)
    for (size_t node = 0; node < n; ++node) {
      const OpNode &op = graph.nodes[node];
      if (!op.needsBackward)
        continue;
      for (size_t a = 0; a < op.accesses.size(); ++a) {
        const NodeAccess &access = op.accesses[a];
        const GraphTensor &t = graph.tensors[access.tensor];
        if (access.role != AccessRole::Read || access.isDestination ||
            !t.isParameter || t.producer >= 0)
          continue;
        parameterReaders[access.tensor].emplace_back(node, a);
        parametersReadBy[node].push_back(access.tensor);
      }
      std::sort(parametersReadBy[node].begin(), parametersReadBy[node].end());
      parametersReadBy[node].erase(std::unique(parametersReadBy[node].begin(),
                                               parametersReadBy[node].end()),
                                   parametersReadBy[node].end());
    }
}

Simulator::~Simulator() = default;

int Simulator::newTask() {
  int id;
  if (!freeIds.empty()) {
    id = freeIds.back();
    freeIds.pop_back();
    tasks[id] = Task();
  } else {
    id = tasks.size();
    tasks.emplace_back();
    endTime.push_back(0);
  }
  tasks[id].alive = true;
  return id;
}

int Simulator::addGroup(std::vector<int> taskIds) {
  if (taskIds.empty())
    return -1;
  int id;
  if (!freeGroupIds.empty()) {
    id = freeGroupIds.back();
    freeGroupIds.pop_back();
    groups[id] = Group();
  } else {
    id = groups.size();
    groups.emplace_back();
    groupReady.push_back(0);
    changedGroup.push_back(0);
  }
  Group &group = groups[id];
  group.alive = true;
  // Ordered by what the group is (the first three fields of its tasks'
  // keys: kind, op or tensor, peer), independently of ids.
  const TaskKey &key = tasks[taskIds.front()].key;
  group.rank = rankOf({key[0], key[1], key[2], 0, 0, 0});
  for (int t : taskIds) {
    tasks[t].group = id;
    accountTask(tasks[t], 1);
  }
  group.tasks = std::move(taskIds);
  if (!changedGroup[id]) {
    changedGroup[id] = 1;
    changedGroups.push_back(id);
  }
  return id;
}

void Simulator::removeGroup(int id, std::vector<int> &removed) {
  if (id < 0)
    return;
  for (int t : groups[id].tasks) {
    accountTask(tasks[t], -1);
    tasks[t].alive = false;
    removed.push_back(t);
  }
  // Kept for undo(); the id is reused, as task ids are.
  undoLog->removedGroups.emplace_back(id, std::move(groups[id]));
  groups[id] = Group();
  freeGroupIds.push_back(id);
}

void Simulator::sealGroup(int id) {
  Group &group = groups[id];
  group.predGroups.clear();
  size_t predWords = 0, workWords = 0;
  for (int t : group.tasks) {
    predWords += 1 + tasks[t].preds.size();
    workWords += 4 + tasks[t].resources.size();
  }
  std::vector<int32_t> &view = group.view;
  view.resize(predWords + workWords);
  group.workAt = predWords;
  int32_t *predAt = view.data(), *workAt = view.data() + predWords;
  for (int t : group.tasks) {
    const Task &task = tasks[t];
    *predAt++ = task.preds.size();
    predAt = std::copy(task.preds.begin(), task.preds.end(), predAt);
    *workAt = t;
    storeTime(workAt + 1, task.duration);
    workAt[3] = task.resources.size();
    workAt = std::copy(task.resources.begin(), task.resources.end(),
                       workAt + 4);
    for (int p : task.preds) {
      int pg = tasks[p].group;
      assert(pg != id && "a task waits for its own group");
      if (std::find(group.predGroups.begin(), group.predGroups.end(), pg) ==
          group.predGroups.end())
        group.predGroups.push_back(pg);
    }
  }
  if (!changedGroup[id]) {
    changedGroup[id] = 1;
    changedGroups.push_back(id);
  }
}

/// Bytes each member of a collective of `n` sends, `bytes` as
/// Machine::collectiveCost counts them.
static int64_t collectiveBytesPerDevice(CollectiveKind kind, int64_t bytes,
                                        int n) {
  switch (kind) {
  case CollectiveKind::AllReduce:
    return Machine::allReduceBytesPerDevice(bytes, n);
  case CollectiveKind::AllGather:
    return Machine::allGatherBytesPerDevice(bytes, n);
  case CollectiveKind::ReduceScatter:
    return Machine::reduceScatterBytesPerDevice(bytes, n);
  case CollectiveKind::AllToAll:
    return Machine::allToAllBytesPerDevice(bytes, n);
  case CollectiveKind::Broadcast:
    return n > 0 ? bytes * (n - 1) / n : 0; // the root's buffer, to n - 1
  }
  return 0;
}

static int64_t femtoseconds(double seconds) {
  return std::llround(seconds * 1e15);
}

void Simulator::accountTask(const Task &t, int sign) {
  Accounts &acc = *accounts;
  int numDevices = machine.numDevices();
  acc.numTasks += sign;
  switch (t.kind) {
  case TaskKind::Forward:
  case TaskKind::Backward:
  case TaskKind::Update:
    acc.busyFs[t.device] += sign * femtoseconds(t.duration);
    break;
  case TaskKind::Transfer:
  case TaskKind::GradTransfer:
    acc.commBytes += sign * t.bytes;
    for (int res : t.resources)
      if (res >= numDevices)
        acc.linkBytes[res - numDevices] += sign * t.bytes;
    accountReceived(t, sign);
    break;
  case TaskKind::Collective: {
    int64_t perDevice =
        collectiveBytesPerDevice(t.collective, t.bytes, t.groupSize);
    acc.commBytes += sign * perDevice * t.groupSize;
    for (int res : t.resources)
      if (res >= numDevices)
        acc.linkBytes[res - numDevices] += sign * perDevice;
    break;
  }
  case TaskKind::AllReduce: {
    int64_t perDevice = Machine::allReduceBytesPerDevice(t.bytes, t.groupSize);
    acc.commBytes += sign * perDevice * t.groupSize;
    for (int res : t.resources)
      if (res >= numDevices)
        acc.linkBytes[res - numDevices] += sign * perDevice;
    break;
  }
  }
}

const Simulator::Placement &Simulator::placement(int node) {
  if (placements[node])
    return *placements[node];
  auto p = std::make_unique<Placement>();
  const OpNode &n = graph.nodes[node];
  const ParallelConfig &config = current.configs[node];
  size_t numLoops = n.partitionable ? n.loopSizes.size() : 0;
  for (const NodeAccess &a : n.accesses) {
    p->accessAt.push_back(p->stride);
    p->accessRank.push_back(a.indices.size());
    p->stride += a.indices.size();
  }
  // One task's regions, from the first iteration of each loop.
  auto addBoxes = [&](const std::vector<int64_t> &lo) {
    size_t at = p->ranges.size();
    p->ranges.resize(at + p->stride);
    for (size_t a = 0; a < n.accesses.size(); ++a)
      accessBox(n.accesses[a], graph.tensors[n.accesses[a].tensor], lo,
                p->shard, p->ranges.data() + at + p->accessAt[a]);
  };
  std::vector<int64_t> lo(numLoops, 0);
  if (Strategy::isReplicated(config)) {
    p->replicated = true;
    p->shard.assign(n.loopSizes.begin(), n.loopSizes.begin() + numLoops);
    for (int d = 0; d < current.numDevices; ++d) {
      p->devices.push_back(d);
      addBoxes(lo);
    }
  } else {
    std::vector<int64_t> sizes(n.loopSizes.begin(),
                               n.loopSizes.begin() + numLoops);
    p->shard = config.shardSizes(sizes);
    for (size_t l = 0; l < numLoops; ++l)
      if (n.loopKinds[l] == DimKind::Reduction && config.degrees[l] > 1)
        p->splitsReduction = true;
    if (p->splitsReduction) {
      std::vector<int64_t> devices = config.devices;
      std::sort(devices.begin(), devices.end());
      p->partialOutputs =
          std::adjacent_find(devices.begin(), devices.end()) == devices.end();
    }
    p->ranges.reserve(config.numTasks() * p->stride);
    for (int64_t t = 0; t < config.numTasks(); ++t) {
      p->devices.push_back(static_cast<int>(config.devices[t]));
      std::vector<int64_t> coords = config.taskCoordinates(t);
      for (size_t l = 0; l < numLoops; ++l)
        lo[l] = coords[l] * p->shard[l];
      addBoxes(lo);
    }
  }
  int someDevice = p->devices.empty() ? 0 : p->devices.front();
  p->forward = cost.forwardTime(graph, node, p->shard, someDevice);
  p->backward = options.training
                    ? cost.backwardTime(graph, node, p->shard, someDevice)
                    : 0;
  placements[node] = std::move(p);
  return *placements[node];
}

void Simulator::buildNode(int node) {
  const OpNode &n = graph.nodes[node];
  const Placement &p = placement(node);
  NodeTasks &group = nodeTasks[node];
  group = NodeTasks();
  bool backward = options.training && n.needsBackward;
  // One compute task per shard on its device.
  auto addShardTasks = [&](TaskKind kind, double duration,
                           std::vector<int> &list) {
    for (size_t t = 0; t < p.devices.size(); ++t) {
      int id = newTask();
      Task &task = tasks[id];
      task.kind = kind;
      task.key = {kind == TaskKind::Forward ? 0 : 1, node, -1,
                  static_cast<int32_t>(t), 0, 0};
      task.duration = duration;
      task.device = p.devices[t];
      task.resources = {p.devices[t]};
      list.push_back(id);
    }
  };
  addShardTasks(TaskKind::Forward, p.forward, group.fwd);
  int numDevices = machine.numDevices();
  if (p.splitsReduction) {
    // Tasks that split a reduction loop hold partial sums of the same
    // output region: an all-reduce among their devices completes it.
    group.reducedBy.assign(n.accesses.size(),
                           std::vector<int>(p.devices.size(), -1));
    for (size_t a = 0; a < n.accesses.size(); ++a) {
      const NodeAccess &access = n.accesses[a];
      const GraphTensor &tensor = graph.tensors[access.tensor];
      // Partial sums that ops read are combined by their reshards.
      if (access.role != AccessRole::Write ||
          (p.partialOutputs && hasReaders(node, a)))
        continue;
      std::map<Box, std::vector<size_t>> regions;
      for (size_t t = 0; t < p.devices.size(); ++t)
        regions[p.box(t, a).toBox()].push_back(t);
      int region = 0;
      for (const auto &[box, writers] : regions) {
        std::vector<int> devices;
        for (size_t t : writers)
          devices.push_back(p.devices[t]);
        std::sort(devices.begin(), devices.end());
        devices.erase(std::unique(devices.begin(), devices.end()),
                      devices.end());
        if (writers.size() > 1) {
          int id = newTask();
          Task &task = tasks[id];
          task.kind = TaskKind::AllReduce;
          task.key = {6, node, -1, static_cast<int32_t>(a), region, 0};
          task.bytes = boxVolume(box) * tensor.elementBytes;
          task.groupSize = devices.size();
          task.members.append(devices.begin(), devices.end());
          if (devices.size() > 1) {
            task.duration = machine.allReduceTime(task.bytes, devices);
            for (LinkId link : machine.collectiveLinks(devices))
              task.resources.push_back(numDevices + link);
            occupyDevices(task, devices.data(), devices.data() + devices.size());
          } else {
            // Several partial tasks on one device: a local sum.
            task.duration = cost.rooflineTime(
                double(task.bytes) / tensor.elementBytes * writers.size(),
                double(task.bytes) * (writers.size() + 1), tensor.dtype,
                OpClass::Elementwise, devices.front());
            task.resources = {devices.front()};
            task.device = devices.front();
          }
          for (size_t t : writers) {
            task.preds.push_back(group.fwd[t]);
            group.reducedBy[a][t] = id;
          }
          group.sync.push_back(id);
        }
        ++region;
      }
    }
  }
  if (backward)
    addShardTasks(TaskKind::Backward, p.backward, group.bwd);
  group.fwdGroup = addGroup(group.fwd);
  group.syncGroup = addGroup(group.sync);
  group.bwdGroup = addGroup(group.bwd);
}

void Simulator::buildParameter(int tensorId) {
  // Gradient synchronization of one parameter: every task that reads a
  // region of it holds a gradient for that region; gradients of the tasks
  // on one device add up locally (a weight used at every time step), and
  // devices that read the same region all-reduce it once.
  std::vector<int> allReduces, updates;
  const GraphTensor &tensor = graph.tensors[tensorId];
  int numDevices = machine.numDevices();
  std::map<Box, std::vector<std::pair<int, size_t>>> regions; // (node, task)
  for (auto [node, access] : parameterReaders[tensorId]) {
    const Placement &p = placement(node);
    for (size_t t = 0; t < p.devices.size(); ++t)
      regions[p.box(t, access).toBox()].emplace_back(node, t);
  }
  int region = 0;
  for (const auto &[box, readers] : regions) {
    int64_t bytes = boxVolume(box) * tensor.elementBytes;
    std::vector<int> devices;
    for (auto [node, t] : readers)
      devices.push_back(placements[node]->devices[t]);
    std::sort(devices.begin(), devices.end());
    devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
    int allReduce = -1;
    if (devices.size() > 1) {
      allReduce = newTask();
      Task &task = tasks[allReduce];
      task.kind = TaskKind::AllReduce;
      task.key = {4, tensorId, -1, region, 0, 0};
      task.bytes = bytes;
      task.groupSize = devices.size();
      task.members.append(devices.begin(), devices.end());
      task.duration = machine.allReduceTime(bytes, devices);
      for (LinkId link : machine.collectiveLinks(devices))
        task.resources.push_back(numDevices + link);
      occupyDevices(task, devices.data(), devices.data() + devices.size());
      for (auto [node, t] : readers)
        task.preds.push_back(nodeTasks[node].bwd[t]);
      allReduces.push_back(allReduce);
    }
    for (int device : devices) {
      int id = newTask();
      Task &task = tasks[id];
      task.kind = TaskKind::Update;
      task.key = {5, tensorId, -1, region, device, 0};
      task.bytes = bytes;
      task.device = device;
      task.resources = {device};
      task.duration = cost.updateTime(bytes, device);
      if (allReduce >= 0) {
        task.preds.push_back(allReduce);
      } else {
        for (auto [node, t] : readers)
          if (placements[node]->devices[t] == device)
            task.preds.push_back(nodeTasks[node].bwd[t]);
      }
      updates.push_back(id);
    }
    ++region;
  }
  parameterGroups[tensorId] = {addGroup(std::move(allReduces)),
                               addGroup(std::move(updates))};
}

void Simulator::occupyDevices(Task &task, const int *first, const int *last) {
  if (overlapsCommunication)
    return;
  // After the links: reports and traces take a communication task's first
  // resource as its link.
  task.resources.append(first, last);
}

struct Simulator::TransferPath {
  Route route;
  Machine::PathCost cost;
};

const Simulator::TransferPath &Simulator::path(int src, int dst) {
  std::vector<TransferPath> &row = paths[src];
  if (row.empty())
    for (int d = 0; d < machine.numDevices(); ++d)
      row.push_back({machine.route(src, d), machine.pathCost(src, d)});
  return row[dst];
}

int Simulator::addTransfer(TaskKind kind, const TaskKey &key, int64_t bytes,
                           int src, int dst, const std::vector<int> &preds) {
  int numDevices = machine.numDevices();
  int id = newTask();
  Task &t = tasks[id];
  t.kind = kind;
  t.key = key;
  t.bytes = bytes;
  t.src = src;
  t.dst = dst;
  const TransferPath &route = path(src, dst);
  for (LinkId link : route.route)
    t.resources.push_back(numDevices + link);
  int ends[2] = {src, dst};
  occupyDevices(t, ends, ends + 2);
  t.duration = route.cost.time(bytes);
  t.preds.append(preds.begin(), preds.end());
  return id;
}

void Simulator::appendEdgeDeps(const std::vector<int> &ids,
                               const std::vector<int> &start,
                               const std::vector<int> &deps) {
  for (size_t i = 0; i < ids.size(); ++i)
    tasks[ids[i]].preds.append(deps.begin() + start[i],
                               deps.begin() + start[i + 1]);
}

void Simulator::linkForward(int node) {
  NodeTasks &group = nodeTasks[node];
  for (int id : group.fwd)
    tasks[id].preds.clear();
  for (int e : producerEdges[node])
    appendEdgeDeps(group.fwd, edges[e].fwdStart, edges[e].fwdDeps);
}

void Simulator::linkBackward(int node) {
  NodeTasks &group = nodeTasks[node];
  for (size_t s = 0; s < group.bwd.size(); ++s)
    tasks[group.bwd[s]].preds.assign(1, group.fwd[s]);
  for (int e : consumerEdges[node])
    appendEdgeDeps(group.bwd, edges[e].bwdStart, edges[e].bwdDeps);
}

void Simulator::buildAll() {
  tasks.clear();
  freeIds.clear();
  endTime.clear();
  groups.clear();
  freeGroupIds.clear();
  groupReady.clear();
  changedGroup.clear();
  changedGroups.clear();
  edges.assign(edgeEnds.size(), EdgeTasks());
  accounts->reset(machine.numDevices(), machine.links().size(), memoryStride());
  size_t n = graph.nodes.size();
  for (size_t i = 0; i < n; ++i)
    buildNode(i);
  for (size_t t = 0; t < graph.tensors.size(); ++t)
    if (!parameterReaders[t].empty())
      buildParameter(t);
  plans->copies.assign(n, {});
  for (size_t e = 0; e < edgeEnds.size(); ++e)
    buildEdge(e);
  for (size_t i = 0; i < n; ++i) {
    linkForward(i);
    linkBackward(i);
  }
  for (size_t g = 0; g < groups.size(); ++g)
    sealGroup(g);
}

void Simulator::removeNode(int node, std::vector<int> &removed) {
  NodeTasks &group = nodeTasks[node];
  removeGroup(group.fwdGroup, removed);
  removeGroup(group.syncGroup, removed);
  removeGroup(group.bwdGroup, removed);
  group = NodeTasks();
}

void Simulator::removeEdge(int edge, std::vector<int> &removed) {
  for (int g : edges[edge].groups)
    removeGroup(g, removed);
  edges[edge] = EdgeTasks();
}

//===----------------------------------------------------------------------===//
// Scheduling
//===----------------------------------------------------------------------===//

double Simulator::readyTimeOf(const Group &g,
                              std::vector<double> *taskReady) const {
  // When the last of its tasks is ready (each when the last of its
  // predecessors ends), and not before the groups it waits for were taken:
  // so groups are taken in order of non-decreasing ready time.
  double groupTime = 0;
  for (int p : g.predGroups)
    groupTime = later(groupTime, groupReady[p]);
  const int32_t *at = g.view.data(), *predsEnd = at + g.workAt;
  const double *ends = endTime.data();
  while (at != predsEnd) {
    double ready = 0;
    for (int p = 1; p <= at[0]; ++p)
      ready = later(ready, ends[at[p]]);
    if (taskReady)
      taskReady->push_back(ready);
    groupTime = later(groupTime, ready);
    at += 1 + at[0];
  }
  return groupTime;
}

/// Groups between two snapshots of the resources' free times.
static constexpr size_t kCheckpoint = 16;

void Simulator::schedule(size_t prefix, bool logForUndo) {
  size_t numResources = machine.numDevices() + machine.links().size();
  UndoLog &log = *undoLog;
  // The resources after the kept prefix: the last checkpoint before it,
  // then the prefix's groups after that checkpoint.
  size_t checkpoint = prefix / kCheckpoint;
  resourceFree.assign(checkpointFree.begin() + checkpoint * numResources,
                      checkpointFree.begin() +
                          (checkpoint + 1) * numResources);
  double maxEnd = checkpointEnd[checkpoint];
  for (size_t i = checkpoint * kCheckpoint; i < prefix; ++i) {
    const Group &g = groups[order[i]];
    const int32_t *at = g.view.data() + g.workAt;
    const int32_t *viewEnd = g.view.data() + g.view.size();
    while (at != viewEnd) {
      double e = endTime[at[0]];
      maxEnd = std::max(maxEnd, e);
      at += 3;
      for (int r = 1; r <= at[0]; ++r)
        resourceFree[at[r]] = std::max(resourceFree[at[r]], e);
      at += 1 + at[0];
    }
  }
  if (logForUndo) {
    log.prefix = prefix;
    log.order.assign(order.begin() + prefix, order.end());
    log.orderReady.assign(orderReady.begin() + prefix, orderReady.end());
    log.checkpointsKept = checkpoint + 1;
    log.checkpointFree.assign(checkpointFree.begin() +
                                  log.checkpointsKept * numResources,
                              checkpointFree.end());
    log.checkpointEnd.assign(checkpointEnd.begin() + log.checkpointsKept,
                             checkpointEnd.end());
    log.scheduleEnd = scheduleEnd;
    log.taskIds.clear();
    log.taskEnds.clear();
    log.groupTimes.clear();
  }

  // The groups to schedule: those taken after the prefix last time that
  // did not change, and every new or relinked one.
  size_t numGroups = groups.size();
  inSuffix.resize(numGroups, 0);
  remaining.resize(numGroups);
  readyScratch.clear();
  readyScratch.reserve(tasks.size());
  succStart.resize(numGroups);
  succFill.resize(numGroups);
  suffix.clear();
  auto addToSuffix = [&](int g) {
    if (g < static_cast<int>(numGroups) && groups[g].alive && !inSuffix[g]) {
      inSuffix[g] = 1;
      suffix.push_back(g);
    }
  };
  for (size_t i = prefix; i < order.size(); ++i)
    if (!changedGroup[order[i]])
      addToSuffix(order[i]);
  for (int g : changedGroups)
    addToSuffix(g);
  order.resize(prefix);
  orderReady.resize(prefix);
  checkpointFree.resize((checkpoint + 1) * numResources);
  checkpointEnd.resize(checkpoint + 1);

  // Successors among them.
  for (int g : suffix) {
    remaining[g] = 0;
    succFill[g] = 0;
  }
  for (int g : suffix)
    for (int p : groups[g].predGroups)
      if (inSuffix[p]) {
        ++remaining[g];
        ++succFill[p];
      }
  int total = 0;
  for (int g : suffix) {
    succStart[g] = total;
    total += succFill[g];
    succFill[g] = succStart[g];
  }
  succ.resize(total);
  for (int g : suffix)
    for (int p : groups[g].predGroups)
      if (inSuffix[p])
        succ[succFill[p]++] = g;

  struct Entry {
    double ready;
    TaskRank rank;
    int group;
    bool operator>(const Entry &o) const {
      return ready != o.ready ? ready > o.ready : rank > o.rank;
    }
  };
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
  auto push = [&](int id) {
    Group &g = groups[id];
    g.readyAt = readyScratch.size();
    heap.push({readyTimeOf(g, &readyScratch), g.rank, id});
  };
  for (int g : suffix)
    if (remaining[g] == 0)
      push(g);
  // Groups are taken in order of (ready time, key); each task starts when
  // it is ready and its resources are free, and holds them until it ends.
  while (!heap.empty()) {
    Entry top = heap.top();
    heap.pop();
    int id = top.group;
    if (order.size() % kCheckpoint == 0 &&
        order.size() / kCheckpoint == checkpointEnd.size()) {
      checkpointFree.insert(checkpointFree.end(), resourceFree.begin(),
                            resourceFree.end());
      checkpointEnd.push_back(maxEnd);
    }
    if (logForUndo)
      log.groupTimes.emplace_back(id, groupReady[id]);
    groupReady[id] = top.ready;
    order.push_back(id);
    orderReady.push_back(top.ready);
    const Group &g = groups[id];
    const int32_t *at = g.view.data() + g.workAt;
    const int32_t *viewEnd = g.view.data() + g.view.size();
    const double *ready = readyScratch.data() + g.readyAt;
    while (at != viewEnd) {
      int task = at[0];
      double duration = loadTime(at + 1);
      double s = *ready++;
      at += 3;
      const int32_t *first = at + 1, *last = at + 1 + at[0];
      at = last;
      double *free = resourceFree.data();
      s = latestFree(free, first, last, s);
      double e = s + duration;
      if (logForUndo) {
        log.taskIds.push_back(task);
        log.taskEnds.push_back(endTime[task]);
      }
      endTime[task] = e;
      for (const int32_t *r = first; r != last; ++r)
        free[*r] = e;
      maxEnd = later(maxEnd, e);
    }
    for (int i = succStart[id]; i < succFill[id]; ++i)
      if (--remaining[succ[i]] == 0)
        push(succ[i]);
  }
  assert(order.size() == numGroups - freeGroupIds.size() &&
         "every live group is scheduled once");
  scheduleEnd = maxEnd;
  for (int g : suffix)
    inSuffix[g] = 0;
  for (int g : changedGroups)
    changedGroup[g] = 0;
  changedGroups.clear();
  haveSchedule = true;
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

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

SimReport Simulator::simulate(const Strategy &strategy) {
  undoLog->valid = false;
  current = strategy;
  for (auto &p : placements)
    p.reset();
  buildAll();
  size_t numResources = machine.numDevices() + machine.links().size();
  order.clear();
  orderReady.clear();
  checkpointFree.assign(numResources, 0);
  checkpointEnd.assign(1, 0);
  schedule(0, false);
  accountMemory(nullptr);
  return report();
}

SimReport Simulator::simulateDelta(int node, const ParallelConfig &config) {
  return simulateDelta({{node, config}});
}

SimReport Simulator::simulateDelta(
    const std::vector<std::pair<int, ParallelConfig>> &changes) {
  if (!haveSchedule) {
    Strategy s = current;
    for (const auto &[node, config] : changes)
      s.configs[node] = config;
    return simulate(s);
  }
  // What the change touches: the ops, their edges, the parameters they
  // read, the forward tasks of their consumers and the backward tasks of
  // their producers (whose dependencies change).
  std::set<int> nodes;
  for (const auto &change : changes)
    nodes.insert(change.first);
  std::set<int> edgeIds;
  std::set<int> params, relinkForward, relinkBackward;
  for (int node : nodes) {
    edgeIds.insert(producerEdges[node].begin(), producerEdges[node].end());
    edgeIds.insert(consumerEdges[node].begin(), consumerEdges[node].end());
    for (int p : producersOf[node]) {
      if (!nodes.count(p))
        relinkBackward.insert(p);
      // A reader's reshard leaves copies that the producer's later readers
      // read from: all of the producer's outgoing edges are rebuilt.
      edgeIds.insert(consumerEdges[p].begin(), consumerEdges[p].end());
      for (int c : consumersOf[p])
        if (!nodes.count(c))
          relinkForward.insert(c);
    }
    for (int c : consumersOf[node]) {
      if (!nodes.count(c))
        relinkForward.insert(c);
    }
    params.insert(parametersReadBy[node].begin(),
                  parametersReadBy[node].end());
  }
  // Nothing taken before the earliest ready time of a touched group can
  // differ.
  double resume = std::numeric_limits<double>::infinity();
  auto touch = [&](int g) {
    if (g >= 0)
      resume = std::min(resume, groupReady[g]);
  };
  for (int node : nodes) {
    touch(nodeTasks[node].fwdGroup);
    touch(nodeTasks[node].syncGroup);
    touch(nodeTasks[node].bwdGroup);
  }
  for (int t : params) {
    touch(parameterGroups[t][0]);
    touch(parameterGroups[t][1]);
  }
  for (int e : edgeIds) {
    for (int g : edges[e].groups)
      touch(g);
  }
  for (int c : relinkForward)
    touch(nodeTasks[c].fwdGroup);
  for (int p : relinkBackward)
    touch(nodeTasks[p].bwdGroup);

  // Remember what changes, for undo().
  UndoLog &log = *undoLog;
  log.valid = true;
  log.nodes.clear();
  log.edges.clear();
  log.parameterGroups.clear();
  log.preds.clear();
  log.removed.clear();
  log.removedGroups.clear();
  log.relinkedGroups.clear();
  log.addedGroups.clear();
  for (int node : nodes)
    log.nodes.push_back({node, current.configs[node], nullptr,
                         std::move(nodeTasks[node])});
  // Node tasks are moved: removeNode() below needs only their group ids,
  // which a move leaves in place. Edges are copied: their groups are a
  // list, which a move would empty before removeEdge() takes them out.
  for (int e : edgeIds)
    log.edges.emplace_back(e, edges[e]);
  for (int t : params)
    log.parameterGroups.emplace_back(t, parameterGroups[t]);
  for (int c : relinkForward) {
    for (int id : nodeTasks[c].fwd)
      log.preds.emplace_back(id, std::move(tasks[id].preds));
    if (nodeTasks[c].fwdGroup >= 0)
      log.relinkedGroups.push_back(nodeTasks[c].fwdGroup);
  }
  for (int p : relinkBackward) {
    for (int id : nodeTasks[p].bwd)
      log.preds.emplace_back(id, std::move(tasks[id].preds));
    if (nodeTasks[p].bwdGroup >= 0)
      log.relinkedGroups.push_back(nodeTasks[p].bwdGroup);
  }
  log.taskCount = tasks.size();
  log.groupCount = groups.size();
  const Accounts &acc = *accounts;
  log.busyFs = acc.busyFs;
  log.memory = acc.memory;
  log.received = acc.received;
  log.linkBytes = acc.linkBytes;
  log.commBytes = acc.commBytes;
  log.numTasks = acc.numTasks;
  log.freeIds = freeIds;
  log.freeGroupIds = freeGroupIds;

  // Remove.
  std::vector<int> removed;
  for (int node : nodes)
    removeNode(node, removed);
  for (int t : params) {
    removeGroup(parameterGroups[t][0], removed);
    removeGroup(parameterGroups[t][1], removed);
    parameterGroups[t] = {-1, -1};
  }
  for (int e : edgeIds)
    removeEdge(e, removed);
  for (int id : removed)
    log.removed.emplace_back(id, std::move(tasks[id]));
  // Freed ids are reused: scheduling order depends on keys, not ids.
  freeIds.insert(freeIds.end(), removed.begin(), removed.end());

  // Rebuild.
  for (auto &entry : log.nodes)
    entry.placement = std::move(placements[entry.node]);
  for (const auto &[node, config] : changes)
    current.configs[node] = config;
  size_t firstNew = changedGroups.size();
  for (int node : nodes)
    buildNode(node);
  for (int t : params)
    buildParameter(t);
  for (int e : edgeIds)
    plans->copies[edgeEnds[e].first].clear();
  for (int e : edgeIds)
    buildEdge(e);
  log.addedGroups.assign(changedGroups.begin() + firstNew,
                         changedGroups.end());
  for (int node : nodes) {
    linkForward(node);
    linkBackward(node);
  }
  for (int c : relinkForward)
    linkForward(c);
  for (int p : relinkBackward)
    linkBackward(p);
  for (int g : log.addedGroups)
    sealGroup(g);
  for (int g : log.relinkedGroups)
    sealGroup(g);

  // A changed group whose predecessors are all unchanged becomes ready when
  // the last of them ends in the old schedule; nothing taken before the
  // earliest such time (or the earliest old ready time of a touched group)
  // differs.
  for (int id : changedGroups) {
    const Group &g = groups[id];
    bool allUnchanged = std::none_of(
        g.predGroups.begin(), g.predGroups.end(),
        [&](int p) { return changedGroup[p] != 0; });
    if (allUnchanged)
      resume = std::min(resume, readyTimeOf(g, nullptr));
  }
  size_t prefix =
      std::lower_bound(orderReady.begin(), orderReady.end(), resume) -
      orderReady.begin();
  schedule(prefix, true);
  accountMemory(nullptr);
  return report();
}

bool Simulator::undo() {
  UndoLog &log = *undoLog;
  if (!log.valid)
    return false;
  log.valid = false;
  // Ids freed before the change and reused by it are free again; tasks
  // appended by it go; removed tasks come back as they were.
  for (int id : log.freeIds)
    if (id < static_cast<int>(log.taskCount))
      tasks[id].alive = false;
  tasks.resize(log.taskCount);
  endTime.resize(log.taskCount);
  for (auto &[id, task] : log.removed) {
    tasks[id] = std::move(task);
    tasks[id].alive = true;
  }
  freeIds = std::move(log.freeIds);
  for (int g : log.freeGroupIds)
    if (g < static_cast<int>(log.groupCount))
      groups[g].alive = false;
  groups.resize(log.groupCount);
  groupReady.resize(log.groupCount);
  changedGroup.resize(log.groupCount);
  for (auto &[id, group] : log.removedGroups) {
    groups[id] = std::move(group);
    groups[id].alive = true;
  }
  freeGroupIds = std::move(log.freeGroupIds);
  for (auto &[id, preds] : log.preds)
    tasks[id].preds = std::move(preds);
  for (auto &[e, edge] : log.edges)
    edges[e] = std::move(edge);
  for (auto &[t, ids] : log.parameterGroups)
    parameterGroups[t] = ids;
  for (auto &entry : log.nodes) {
    nodeTasks[entry.node] = std::move(entry.tasks);
    placements[entry.node] = std::move(entry.placement);
    current.configs[entry.node] = entry.config;
  }
  Accounts &acc = *accounts;
  acc.busyFs = log.busyFs;
  acc.memory = log.memory;
  acc.received.swap(log.received);
  acc.linkBytes = log.linkBytes;
  acc.commBytes = log.commBytes;
  acc.numTasks = log.numTasks;
  for (int g : log.relinkedGroups)
    sealGroup(g);
  for (int g : changedGroups)
    changedGroup[g] = 0;
  changedGroups.clear();
  // The schedule after the prefix, as it was.
  order.resize(log.prefix);
  order.insert(order.end(), log.order.begin(), log.order.end());
  orderReady.resize(log.prefix);
  orderReady.insert(orderReady.end(), log.orderReady.begin(),
                    log.orderReady.end());
  size_t numResources = machine.numDevices() + machine.links().size();
  checkpointFree.resize(log.checkpointsKept * numResources);
  checkpointFree.insert(checkpointFree.end(), log.checkpointFree.begin(),
                        log.checkpointFree.end());
  checkpointEnd.resize(log.checkpointsKept);
  checkpointEnd.insert(checkpointEnd.end(), log.checkpointEnd.begin(),
                       log.checkpointEnd.end());
  scheduleEnd = log.scheduleEnd;
  for (size_t i = 0; i < log.taskIds.size(); ++i)
    if (log.taskIds[i] < static_cast<int>(log.taskCount))
      endTime[log.taskIds[i]] = log.taskEnds[i];
  for (auto [g, ready] : log.groupTimes)
    if (g < static_cast<int>(log.groupCount))
      groupReady[g] = ready;
  return true;
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

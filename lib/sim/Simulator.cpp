//===- Simulator.cpp - the execution simulator ----------------------------===//

#include "soap/sim/Simulator.h"
#include "soap/machine/Machine.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <set>
#include <tuple>

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
  for (size_t d = 0; d < deviceBusy.size(); ++d)
    devices.push_back({{"device", d},
                       {"busy_ms", deviceBusy[d] * 1e3},
                       {"peak_memory_bytes", devicePeakMemory[d]}});
  j["devices"] = devices;
  nlohmann::json links = nlohmann::json::array();
  for (size_t l = 0; l < linkBytes.size(); ++l)
    if (linkBytes[l] > 0)
      links.push_back({{"link", machine.link(l).name}, {"bytes", linkBytes[l]}});
  j["links"] = links;
  return j.dump(1);
}

//===----------------------------------------------------------------------===//
// Internal structures
//===----------------------------------------------------------------------===//

/// Orders tasks with equal ready times, independently of their ids, so that
/// a delta rebuild and a full rebuild schedule identically.
using TaskKey = std::array<int32_t, 6>; // kind, node, peer, index, sub, aux

/// The key packed into one integer (20 bits per field) for fast ordering.
using TaskRank = unsigned __int128;
static TaskRank rankOf(const TaskKey &key) {
  TaskRank rank = 0;
  for (int32_t field : key)
    rank = (rank << 20) | static_cast<uint32_t>(field + 1);
  return rank;
}

struct Simulator::Task {
  TaskKind kind = TaskKind::Forward;
  bool alive = false;
  TaskKey key{};
  TaskRank rank = 0;
  double duration = 0;
  int64_t bytes = 0;
  int device = -1; ///< compute tasks and updates
  int src = -1, dst = -1;
  std::vector<int> resources; ///< devices, then numDevices + link id
  std::vector<int> preds;
  int groupSize = 0; ///< all-reduce
};

struct Simulator::NodeTasks {
  std::vector<int> fwd, bwd, sync;
  /// [access][task]: the all-reduce that completes the partial sums the
  /// task writes through that access, or -1.
  std::vector<std::vector<int>> reducedBy;
};

struct Simulator::EdgeTasks {
  std::vector<std::vector<int>> fwdDeps; ///< per consumer task
  std::vector<std::vector<int>> bwdDeps; ///< per producer task
  std::vector<int> owned;                ///< transfer tasks
};

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
  std::vector<std::pair<std::pair<int, int>, EdgeTasks>> edges;
  std::vector<std::pair<int, std::vector<int>>> parameterTasks;
  std::vector<std::pair<int, std::vector<int>>> preds;
  std::vector<std::pair<int, Task>> removed;
  size_t taskCount = 0;
  std::vector<int> freeIds;
  std::vector<double> readyTime, startTime, endTime;
  std::vector<int> order;
};

using Box = std::vector<std::pair<int64_t, int64_t>>; // inclusive ranges

struct Simulator::Placement {
  bool replicated = false;
  bool splitsReduction = false;
  std::vector<int> devices;    ///< per task
  std::vector<int64_t> shard;  ///< loop extents of every task
  std::vector<std::vector<Box>> boxes; ///< [task][access]
  double forward = 0, backward = 0;
};

static Box accessBox(const NodeAccess &access, const GraphTensor &tensor,
                     const std::vector<int64_t> &lo,
                     const std::vector<int64_t> &shard) {
  Box box;
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
    box.emplace_back(mn, mx);
  }
  return box;
}

static int64_t overlapVolume(const Box &a, const Box &b) {
  int64_t volume = 1;
  for (size_t d = 0; d < a.size(); ++d) {
    int64_t lo = std::max(a[d].first, b[d].first);
    int64_t hi = std::min(a[d].second, b[d].second);
    if (hi < lo)
      return 0;
    volume *= hi - lo + 1;
  }
  return volume;
}

static int64_t boxVolume(const Box &box) { return overlapVolume(box, box); }

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
  placements.resize(n);
  nodeTasks.resize(n);
  undoLog = std::make_unique<UndoLog>();
  parameterTasks.resize(graph.tensors.size());
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
  }
  tasks[id].alive = true;
  return id;
}

const Simulator::Placement &Simulator::placement(int node) {
  if (placements[node])
    return *placements[node];
  auto p = std::make_unique<Placement>();
  const OpNode &n = graph.nodes[node];
  const ParallelConfig &config = current.configs[node];
  size_t numLoops = n.partitionable ? n.loopSizes.size() : 0;
  std::vector<std::vector<int64_t>> lows;
  if (Strategy::isReplicated(config)) {
    p->replicated = true;
    p->shard.assign(n.loopSizes.begin(), n.loopSizes.begin() + numLoops);
    for (int d = 0; d < current.numDevices; ++d) {
      p->devices.push_back(d);
      lows.push_back(std::vector<int64_t>(numLoops, 0));
    }
  } else {
    std::vector<int64_t> sizes(n.loopSizes.begin(),
                               n.loopSizes.begin() + numLoops);
    p->shard = config.shardSizes(sizes);
    for (size_t l = 0; l < numLoops; ++l)
      if (n.loopKinds[l] == DimKind::Reduction && config.degrees[l] > 1)
        p->splitsReduction = true;
    for (int64_t t = 0; t < config.numTasks(); ++t) {
      p->devices.push_back(static_cast<int>(config.devices[t]));
      std::vector<int64_t> coords = config.taskCoordinates(t);
      std::vector<int64_t> lo(numLoops);
      for (size_t l = 0; l < numLoops; ++l)
        lo[l] = coords[l] * p->shard[l];
      lows.push_back(std::move(lo));
    }
  }
  for (size_t t = 0; t < p->devices.size(); ++t) {
    std::vector<Box> boxes;
    for (const NodeAccess &a : n.accesses)
      boxes.push_back(accessBox(a, graph.tensors[a.tensor], lows[t], p->shard));
    p->boxes.push_back(std::move(boxes));
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
      if (access.role != AccessRole::Write)
        continue;
      std::map<Box, std::vector<size_t>> regions;
      for (size_t t = 0; t < p.devices.size(); ++t)
        regions[p.boxes[t][a]].push_back(t);
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
          if (devices.size() > 1) {
            task.duration = machine.allReduceTime(task.bytes, devices);
            for (LinkId link : machine.collectiveLinks(devices))
              task.resources.push_back(numDevices + link);
            occupyDevices(task, devices);
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
}

void Simulator::buildParameter(int tensorId) {
  // Gradient synchronization of one parameter: every task that reads a
  // region of it holds a gradient for that region; gradients of the tasks
  // on one device add up locally (a weight used at every time step), and
  // devices that read the same region all-reduce it once.
  std::vector<int> &group = parameterTasks[tensorId];
  group.clear();
  const GraphTensor &tensor = graph.tensors[tensorId];
  int numDevices = machine.numDevices();
  std::map<Box, std::vector<std::pair<int, size_t>>> regions; // (node, task)
  for (auto [node, access] : parameterReaders[tensorId]) {
    const Placement &p = placement(node);
    for (size_t t = 0; t < p.devices.size(); ++t)
      regions[p.boxes[t][access]].emplace_back(node, t);
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
      task.duration = machine.allReduceTime(bytes, devices);
      for (LinkId link : machine.collectiveLinks(devices))
        task.resources.push_back(numDevices + link);
      occupyDevices(task, devices);
      for (auto [node, t] : readers)
        task.preds.push_back(nodeTasks[node].bwd[t]);
      group.push_back(allReduce);
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
      group.push_back(id);
    }
    ++region;
  }
}

void Simulator::occupyDevices(Task &task, const std::vector<int> &devices) {
  if (machine.deviceType().overlapsCommunication)
    return;
  // After the links: reports and traces take a communication task's first
  // resource as its link.
  task.resources.insert(task.resources.end(), devices.begin(), devices.end());
}

int Simulator::addTransfer(TaskKind kind, const TaskKey &key, int64_t bytes,
                           int src, int dst, int pred) {
  int numDevices = machine.numDevices();
  int id = newTask();
  Task &t = tasks[id];
  t.kind = kind;
  t.key = key;
  t.bytes = bytes;
  t.src = src;
  t.dst = dst;
  for (LinkId link : machine.route(src, dst))
    t.resources.push_back(numDevices + link);
  occupyDevices(t, {src, dst});
  t.duration = machine.transferTime(bytes, src, dst);
  t.preds = {pred};
  return id;
}

void Simulator::buildEdge(int producer, int consumer) {
  const OpNode &pn = graph.nodes[producer];
  const OpNode &cn = graph.nodes[consumer];
  const Placement &pp = placement(producer);
  const Placement &cp = placement(consumer);
  EdgeTasks &edge = edges[{producer, consumer}];
  edge = EdgeTasks();
  edge.fwdDeps.resize(cp.devices.size());
  edge.bwdDeps.resize(pp.devices.size());
  bool backward = options.training && pn.needsBackward && cn.needsBackward;
  for (size_t ca = 0; ca < cn.accesses.size(); ++ca) {
    const NodeAccess &access = cn.accesses[ca];
    const GraphTensor &tensor = graph.tensors[access.tensor];
    if (tensor.producer != producer || access.role == AccessRole::Write ||
        (access.role == AccessRole::Unread && access.isDestination))
      continue;
    // The producer's access that defines the tensor.
    size_t pa = 0;
    while (pa < pn.accesses.size() &&
           !(pn.accesses[pa].tensor == access.tensor &&
             pn.accesses[pa].role != AccessRole::Read))
      ++pa;
    if (pa == pn.accesses.size())
      continue;
    for (size_t u = 0; u < cp.devices.size(); ++u) {
      const Box &need = cp.boxes[u][ca];
      std::vector<std::pair<size_t, int64_t>> sources;
      for (size_t s = 0; s < pp.devices.size(); ++s) {
        int64_t volume = overlapVolume(need, pp.boxes[s][pa]);
        if (volume > 0)
          sources.emplace_back(s, volume);
      }
      std::vector<int> viaReduction(sources.size(), -1);
      if (pp.splitsReduction && !sources.empty()) {
        // Read each completed region once, after its all-reduce, from the
        // consumer's device when it took part.
        const auto &reducedBy = nodeTasks[producer].reducedBy[pa];
        std::vector<std::pair<size_t, int64_t>> chosen;
        std::vector<int> chosenReduction;
        for (auto [s, volume] : sources) {
          int reduction = reducedBy[s];
          auto seen = std::find(chosenReduction.begin(), chosenReduction.end(),
                                reduction);
          if (reduction >= 0 && seen != chosenReduction.end()) {
            size_t i = seen - chosenReduction.begin();
            if (pp.devices[s] == cp.devices[u])
              chosen[i] = {s, volume};
            continue;
          }
          chosen.emplace_back(s, volume);
          chosenReduction.push_back(reduction);
        }
        sources = chosen;
        viaReduction = chosenReduction;
      }
      if (pp.replicated && !sources.empty()) {
        // Every replica holds the data: read the local one if there is one.
        auto local = std::find_if(sources.begin(), sources.end(), [&](auto &s) {
          return pp.devices[s.first] == cp.devices[u];
        });
        sources = {local != sources.end() ? *local : sources.front()};
      }
      for (size_t i = 0; i < sources.size(); ++i) {
        auto [s, volume] = sources[i];
        int src = pp.devices[s], dst = cp.devices[u];
        int fwdSource = viaReduction[i] >= 0 ? viaReduction[i]
                                             : nodeTasks[producer].fwd[s];
        if (src == dst) {
          edge.fwdDeps[u].push_back(fwdSource);
          if (backward)
            edge.bwdDeps[s].push_back(nodeTasks[consumer].bwd[u]);
          continue;
        }
        int64_t bytes = volume * tensor.elementBytes;
        int id = addTransfer(TaskKind::Transfer,
                             {2, consumer, producer, static_cast<int32_t>(u),
                              static_cast<int32_t>(s),
                              static_cast<int32_t>(ca)},
                             bytes, src, dst, fwdSource);
        edge.owned.push_back(id);
        edge.fwdDeps[u].push_back(id);
        if (!backward)
          continue;
        int gid = addTransfer(TaskKind::GradTransfer,
                              {3, producer, consumer, static_cast<int32_t>(s),
                               static_cast<int32_t>(u),
                               static_cast<int32_t>(ca)},
                              bytes, dst, src, nodeTasks[consumer].bwd[u]);
        edge.owned.push_back(gid);
        edge.bwdDeps[s].push_back(gid);
      }
    }
  }
}

void Simulator::linkForward(int node) {
  NodeTasks &group = nodeTasks[node];
  for (size_t u = 0; u < group.fwd.size(); ++u) {
    std::vector<int> &preds = tasks[group.fwd[u]].preds;
    preds.clear();
    for (int p : producersOf[node]) {
      const std::vector<int> &deps = edges[{p, node}].fwdDeps[u];
      preds.insert(preds.end(), deps.begin(), deps.end());
    }
  }
}

void Simulator::linkBackward(int node) {
  NodeTasks &group = nodeTasks[node];
  for (size_t s = 0; s < group.bwd.size(); ++s) {
    std::vector<int> &preds = tasks[group.bwd[s]].preds;
    preds.assign(1, group.fwd[s]);
    for (int c : consumersOf[node]) {
      const std::vector<int> &deps = edges[{node, c}].bwdDeps[s];
      preds.insert(preds.end(), deps.begin(), deps.end());
    }
  }
}

void Simulator::buildAll() {
  tasks.clear();
  freeIds.clear();
  edges.clear();
  size_t n = graph.nodes.size();
  for (size_t i = 0; i < n; ++i)
    buildNode(i);
  for (size_t t = 0; t < graph.tensors.size(); ++t)
    if (!parameterReaders[t].empty())
      buildParameter(t);
  for (size_t c = 0; c < n; ++c)
    for (int p : producersOf[c])
      buildEdge(p, c);
  for (size_t i = 0; i < n; ++i) {
    linkForward(i);
    linkBackward(i);
  }
}

void Simulator::removeNode(int node, std::vector<int> &removed) {
  NodeTasks &group = nodeTasks[node];
  for (const std::vector<int> *list : {&group.fwd, &group.bwd, &group.sync})
    for (int id : *list) {
      tasks[id].alive = false;
      removed.push_back(id);
    }
  group = NodeTasks();
}

void Simulator::removeEdge(int producer, int consumer,
                           std::vector<int> &removed) {
  auto it = edges.find({producer, consumer});
  if (it == edges.end())
    return;
  for (int id : it->second.owned) {
    tasks[id].alive = false;
    removed.push_back(id);
  }
  edges.erase(it);
}

//===----------------------------------------------------------------------===//
// Scheduling
//===----------------------------------------------------------------------===//

void Simulator::schedule(double resumeTime, const std::vector<char> &changed) {
  size_t n = tasks.size();
  int numResources = machine.numDevices() + machine.links().size();
  std::vector<double> ready(n, 0), start(n, 0), end(n, 0);
  std::vector<char> inPrefix(n, 0);
  std::vector<double> resourceFree(numResources, 0);
  std::vector<int> newOrder;
  newOrder.reserve(n);
  if (haveSchedule) {
    for (int id : order) {
      if (id >= static_cast<int>(n) || !tasks[id].alive || changed[id] ||
          readyTime[id] >= resumeTime)
        continue;
      inPrefix[id] = 1;
      ready[id] = readyTime[id];
      start[id] = startTime[id];
      end[id] = endTime[id];
      for (int r : tasks[id].resources)
        resourceFree[r] = std::max(resourceFree[r], end[id]);
      newOrder.push_back(id);
    }
  }
  for (Task &task : tasks)
    if (task.alive && task.rank == 0)
      task.rank = rankOf(task.key);
  // Successors in compressed form.
  std::vector<int> succCount(n + 1, 0), remaining(n, 0);
  for (size_t id = 0; id < n; ++id) {
    if (!tasks[id].alive || inPrefix[id])
      continue;
    for (int p : tasks[id].preds) {
      if (inPrefix[p]) {
        ready[id] = std::max(ready[id], end[p]);
        continue;
      }
      ++remaining[id];
      ++succCount[p + 1];
    }
  }
  for (size_t i = 0; i < n; ++i)
    succCount[i + 1] += succCount[i];
  std::vector<int> succ(succCount[n]);
  std::vector<int> fill(succCount.begin(), succCount.end() - 1);
  for (size_t id = 0; id < n; ++id) {
    if (!tasks[id].alive || inPrefix[id])
      continue;
    for (int p : tasks[id].preds)
      if (!inPrefix[p])
        succ[fill[p]++] = id;
  }
  struct Entry {
    double ready;
    TaskRank rank;
    int id;
    bool operator>(const Entry &o) const {
      return ready != o.ready ? ready > o.ready : rank > o.rank;
    }
  };
  // What the loop below needs, in flat arrays read in task order once,
  // rather than chased through every task's own vectors.
  std::vector<double> duration(n, 0);
  std::vector<TaskRank> rank(n, 0);
  std::vector<int> resourceStart(n + 1, 0), resourceList;
  resourceList.reserve(n + n / 2);
  for (size_t id = 0; id < n; ++id) {
    const Task &task = tasks[id];
    if (task.alive && !inPrefix[id]) {
      duration[id] = task.duration;
      rank[id] = task.rank;
      resourceList.insert(resourceList.end(), task.resources.begin(),
                          task.resources.end());
    }
    resourceStart[id + 1] = resourceList.size();
  }
  std::vector<Entry> heapStorage;
  heapStorage.reserve(1024);
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap(
      std::greater<Entry>(), std::move(heapStorage));
  for (size_t id = 0; id < n; ++id)
    if (tasks[id].alive && !inPrefix[id] && remaining[id] == 0)
      heap.push({ready[id], rank[id], static_cast<int>(id)});
  while (!heap.empty()) {
    int id = heap.top().id;
    heap.pop();
    double s = ready[id];
    const int *firstResource = resourceList.data() + resourceStart[id];
    const int *lastResource = resourceList.data() + resourceStart[id + 1];
    for (const int *r = firstResource; r != lastResource; ++r)
      s = std::max(s, resourceFree[*r]);
    double e = s + duration[id];
    start[id] = s;
    end[id] = e;
    for (const int *r = firstResource; r != lastResource; ++r)
      resourceFree[*r] = e;
    newOrder.push_back(id);
    for (int i = succCount[id]; i < succCount[id + 1]; ++i) {
      int v = succ[i];
      ready[v] = std::max(ready[v], e);
      if (--remaining[v] == 0)
        heap.push({ready[v], rank[v], v});
    }
  }
  std::swap(readyTime, ready);
  std::swap(startTime, start);
  std::swap(endTime, end);
  std::swap(order, newOrder);
  if (undoLog->valid) {
    undoLog->readyTime = std::move(ready);
    undoLog->startTime = std::move(start);
    undoLog->endTime = std::move(end);
    undoLog->order = std::move(newOrder);
  }
  haveSchedule = true;
}

SimReport Simulator::report() const {
  SimReport r;
  int numDevices = machine.numDevices();
  r.deviceBusy.assign(numDevices, 0);
  r.devicePeakMemory.assign(numDevices, 0);
  r.linkBytes.assign(machine.links().size(), 0);
  for (int id : order) {
    const Task &t = tasks[id];
    r.stepTime = std::max(r.stepTime, endTime[id]);
    ++r.numTasks;
    switch (t.kind) {
    case TaskKind::Forward:
    case TaskKind::Backward:
    case TaskKind::Update:
      r.deviceBusy[t.device] += t.duration;
      break;
    case TaskKind::Transfer:
    case TaskKind::GradTransfer:
      r.totalCommBytes += t.bytes;
      for (int res : t.resources)
        if (res >= numDevices)
          r.linkBytes[res - numDevices] += t.bytes;
      break;
    case TaskKind::AllReduce: {
      int64_t perDevice = Machine::allReduceBytesPerDevice(t.bytes, t.groupSize);
      r.totalCommBytes += perDevice * t.groupSize;
      for (int res : t.resources)
        if (res >= numDevices)
          r.linkBytes[res - numDevices] += perDevice;
      break;
    }
    }
  }
  // Memory: parameters (with gradients and optimizer state when training),
  // inputs, every forward output (kept for the backward pass), and received
  // transfers. Regions read by several tasks of a device count once.
  int64_t parameterCopies =
      options.training ? 2 + optimizerStateCopies(cost.optimizer()) : 1;
  std::map<std::pair<int, int>, std::set<Box>> resident; // (tensor, device)
  for (size_t node = 0; node < graph.nodes.size(); ++node) {
    const OpNode &n = graph.nodes[node];
    const Placement &p = *placements[node];
    for (size_t t = 0; t < p.devices.size(); ++t)
      for (size_t a = 0; a < n.accesses.size(); ++a) {
        const NodeAccess &access = n.accesses[a];
        const GraphTensor &tensor = graph.tensors[access.tensor];
        if (tensor.producer < 0) {
          if (access.role == AccessRole::Read)
            resident[{access.tensor, p.devices[t]}].insert(p.boxes[t][a]);
        } else if (tensor.producer == static_cast<int>(node) &&
                   access.role == AccessRole::Write) {
          r.devicePeakMemory[p.devices[t]] +=
              boxVolume(p.boxes[t][a]) * tensor.elementBytes;
        }
      }
  }
  for (const auto &[key, boxes] : resident) {
    const GraphTensor &tensor = graph.tensors[key.first];
    int64_t copies = tensor.isParameter ? parameterCopies : 1;
    for (const Box &box : boxes)
      r.devicePeakMemory[key.second] +=
          boxVolume(box) * tensor.elementBytes * copies;
  }
  for (int id : order) {
    const Task &t = tasks[id];
    if (t.kind == TaskKind::Transfer)
      r.devicePeakMemory[t.dst] += t.bytes;
  }
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
  haveSchedule = false;
  buildAll();
  std::vector<char> changed(tasks.size(), 1);
  schedule(0, changed);
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
  std::set<std::pair<int, int>> edgeKeys;
  std::set<int> params, relinkForward, relinkBackward;
  for (int node : nodes) {
    for (int p : producersOf[node]) {
      edgeKeys.insert({p, node});
      if (!nodes.count(p))
        relinkBackward.insert(p);
    }
    for (int c : consumersOf[node]) {
      edgeKeys.insert({node, c});
      if (!nodes.count(c))
        relinkForward.insert(c);
    }
    params.insert(parametersReadBy[node].begin(),
                  parametersReadBy[node].end());
  }
  auto forEachTouched = [&](auto &&visit) {
    for (int node : nodes) {
      visit(nodeTasks[node].fwd);
      visit(nodeTasks[node].bwd);
      visit(nodeTasks[node].sync);
    }
    for (int t : params)
      visit(parameterTasks[t]);
    for (const auto &key : edgeKeys)
      visit(edges[key].owned);
    for (int c : relinkForward)
      visit(nodeTasks[c].fwd);
    for (int p : relinkBackward)
      visit(nodeTasks[p].bwd);
  };
  double resume = std::numeric_limits<double>::infinity();
  forEachTouched([&](const std::vector<int> &ids) {
    for (int id : ids)
      resume = std::min(resume, readyTime[id]);
  });

  // Remember what changes, for undo().
  UndoLog &log = *undoLog;
  log.valid = true;
  log.nodes.clear();
  log.edges.clear();
  log.parameterTasks.clear();
  log.preds.clear();
  log.removed.clear();
  for (int node : nodes)
    log.nodes.push_back({node, current.configs[node], nullptr,
                         nodeTasks[node]});
  for (const auto &key : edgeKeys)
    log.edges.emplace_back(key, edges[key]);
  for (int t : params)
    log.parameterTasks.emplace_back(t, parameterTasks[t]);
  for (int c : relinkForward)
    for (int id : nodeTasks[c].fwd)
      log.preds.emplace_back(id, tasks[id].preds);
  for (int p : relinkBackward)
    for (int id : nodeTasks[p].bwd)
      log.preds.emplace_back(id, tasks[id].preds);
  log.taskCount = tasks.size();
  log.freeIds = freeIds;

  // Remove.
  std::vector<int> removed;
  for (int node : nodes)
    removeNode(node, removed);
  for (int t : params) {
    for (int id : parameterTasks[t]) {
      tasks[id].alive = false;
      removed.push_back(id);
    }
    parameterTasks[t].clear();
  }
  for (const auto &key : edgeKeys)
    removeEdge(key.first, key.second, removed);
  for (int id : removed)
    log.removed.emplace_back(id, tasks[id]);
  // Freed ids are reused: scheduling order depends on task keys, not ids.
  freeIds.insert(freeIds.end(), removed.begin(), removed.end());

  // Rebuild.
  for (auto &entry : log.nodes)
    entry.placement = std::move(placements[entry.node]);
  for (const auto &[node, config] : changes)
    current.configs[node] = config;
  for (int node : nodes)
    buildNode(node);
  for (int t : params)
    buildParameter(t);
  for (const auto &key : edgeKeys)
    buildEdge(key.first, key.second);
  for (int node : nodes) {
    linkForward(node);
    linkBackward(node);
  }
  for (int c : relinkForward)
    linkForward(c);
  for (int p : relinkBackward)
    linkBackward(p);

  // Tasks that changed, as they are now.
  std::vector<char> changed(tasks.size(), 0);
  std::vector<int> after;
  forEachTouched([&](const std::vector<int> &ids) {
    for (int id : ids) {
      changed[id] = 1;
      after.push_back(id);
    }
  });
  // A changed task whose predecessors are all unchanged becomes ready when
  // the last of them ends in the old schedule; nothing before the earliest
  // such time (or the earliest old ready time of a changed task) differs.
  for (int id : after) {
    bool allUnchanged = true;
    double readyAt = 0;
    for (int p : tasks[id].preds) {
      if (changed[p]) {
        allUnchanged = false;
        break;
      }
      readyAt = std::max(readyAt, endTime[p]);
    }
    if (allUnchanged)
      resume = std::min(resume, readyAt);
  }
  schedule(resume, changed);
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
  for (auto &[id, task] : log.removed) {
    tasks[id] = std::move(task);
    tasks[id].alive = true;
  }
  freeIds = std::move(log.freeIds);
  for (auto &[id, preds] : log.preds)
    tasks[id].preds = std::move(preds);
  for (auto &[key, edge] : log.edges)
    edges[key] = std::move(edge);
  for (auto &[t, ids] : log.parameterTasks)
    parameterTasks[t] = std::move(ids);
  for (auto &entry : log.nodes) {
    nodeTasks[entry.node] = std::move(entry.tasks);
    placements[entry.node] = std::move(entry.placement);
    current.configs[entry.node] = entry.config;
  }
  readyTime = std::move(log.readyTime);
  startTime = std::move(log.startTime);
  endTime = std::move(log.endTime);
  order = std::move(log.order);
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
  for (int id : order) {
    const Task &t = tasks[id];
    std::string name = taskKindName(t.kind);
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
                      {"ts", startTime[id] * 1e6},
                      {"dur", t.duration * 1e6},
                      {"args", args}});
  }
  return nlohmann::json({{"traceEvents", events}, {"displayTimeUnit", "ms"}})
      .dump();
}

} // namespace soap

//===- Simulator.cpp - the simulator's task graph -------------------------===//
//
// Builds the tasks of a strategy: each op's placement and compute tasks, the
// parameters' gradient synchronization and updates, and the groups that the
// scheduler (SimSchedule.cpp) takes in order. The communication of each
// edge is Reshards.cpp's; memory, Memory.cpp's.
//
//===----------------------------------------------------------------------===//

#include "soap/sim/Simulator.h"

#include "SimulatorTasks.h"
#include "soap/layout/Layout.h"
#include "soap/machine/Machine.h"

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
      if (p < 0 || p == static_cast<int>(c) || !a.readsValue())
        continue;
      producers.insert(p);
    }
    for (int p : producers) {
      producersOf[c].push_back(p);
      consumersOf[p].push_back(static_cast<int>(c));
    }
  }
  producerEdges.resize(n);
  consumerEdges.resize(n);
  // A consumer's edges in reverse program order of their producers, as the
  // backward pass reaches them (PlanCache::gradientCopies).
  for (size_t c = 0; c < n; ++c)
    for (auto p = producersOf[c].rbegin(); p != producersOf[c].rend(); ++p) {
      int id = edgeEnds.size();
      edgeEnds.emplace_back(*p, static_cast<int>(c));
      producerEdges[c].push_back(id);
      consumerEdges[*p].push_back(id);
    }
  edges.resize(edgeEnds.size());
  findLazyGradients();
  findAdjointReaders();
  findWholeViews();
  placements.resize(n);
  nodeTasks.resize(n);
  paths.resize(machine.numDevices());
  overlapsCommunication = machine.deviceType().overlapsCommunication;
  undoLog = std::make_unique<UndoLog>();
  accounts = std::make_unique<Accounts>();
  plans = std::make_unique<PlanCache>();
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
  // A lazily transposed parameter's gradient comes from the transpose's
  // reader: a change of that reader rebuilds its synchronization too. So
  // does a change of a reader of what an op that only moves a parameter's
  // elements made, directly or through more such ops: whether that
  // gradient is all-reduced prices the update (syncGroupOf).
  auto addReader = [&](int r, size_t t) {
    std::vector<int> &read = parametersReadBy[r];
    int id = static_cast<int>(t);
    if (!std::binary_search(read.begin(), read.end(), id))
      read.insert(std::upper_bound(read.begin(), read.end(), id), id);
  };
  for (size_t t = 0; t < parameterReaders.size(); ++t)
    for (auto [node, access] : parameterReaders[t]) {
      if (int r = lazyGradients[node].reader; r >= 0)
        addReader(r, t);
      std::vector<int> moves{node};
      std::set<int> seen{node};
      while (!moves.empty()) {
        int m = moves.back();
        moves.pop_back();
        if (!movesElementsOnly(m))
          continue;
        for (int c : consumersOf[m])
          if (seen.insert(c).second) {
            addReader(c, t);
            moves.push_back(c);
          }
      }
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
    groupPosition.push_back(0);
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
    if (tasks[t].kind == TaskKind::Update) {
      accountTask(tasks[t], -1);
      priceUpdate(t);
      accountTask(tasks[t], 1);
    }
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
    accountReceived(t, sign);
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

bool Simulator::scatterRunsWhole(int node, const Placement &p) const {
  const OpNode &n = graph.nodes[node];
  if (!options.training || !n.needsBackward || p.devices.size() < 2)
    return false;
  int table = -1;
  for (size_t a = 0; a < n.accesses.size(); ++a)
    if (n.accesses[a].role == AccessRole::Read &&
        n.isLookupTable(n.accesses[a]))
      table = static_cast<int>(a);
  if (table < 0)
    return false;
  // One task on every device (the partitioner's split of the nest by its
  // gather's config), the table's rows not split.
  std::vector<int> devices = p.devices;
  std::sort(devices.begin(), devices.end());
  if (static_cast<int>(devices.size()) != machine.numDevices() ||
      std::adjacent_find(devices.begin(), devices.end()) != devices.end())
    return false;
  const ParallelConfig &config = current.configs[node];
  for (size_t l = 0; l < n.lookupLoops.size() && l < config.degrees.size(); ++l)
    if (n.lookupLoops[l] && config.degrees[l] > 1)
      return false;
  // Partial sums: two tasks read the same rows of the table.
  bool shared = false;
  for (size_t t = 1; t < p.devices.size() && !shared; ++t)
    shared = overlapVolume(p.box(0, table), p.box(t, table)) > 0;
  if (!shared)
    return false;
  // What the gradient reads: the output's gradient and the other inputs.
  int64_t readBytes = 0;
  std::set<int> counted{n.accesses[table].tensor};
  for (const NodeAccess &access : n.accesses) {
    bool read = access.role != AccessRole::Read ||
                (access.readsValue() && !access.isDestination);
    if (read && counted.insert(access.tensor).second)
      readBytes += graph.tensors[access.tensor].bytes();
  }
  return layout::scatterRunsWhole(
      graph.tensors[n.accesses[table].tensor].bytes(), readBytes);
}

bool Simulator::copyIsMade(int node, const Placement &p) {
  const OpNode &n = graph.nodes[node];
  int result = -1;
  for (size_t a = 0; a < n.accesses.size(); ++a)
    if (graph.tensors[n.accesses[a].tensor].producer == node)
      result = static_cast<int>(a);
  if (result < 0)
    return false;
  int tensor = n.accesses[result].tensor;
  for (int reader : consumersOf[node]) {
    const OpNode &r = graph.nodes[reader];
    if (r.opClass != OpClass::Matmul && !r.relayoutCopy)
      return true;
    const Placement &q = placement(reader);
    for (size_t a = 0; a < r.accesses.size(); ++a) {
      if (r.accesses[a].tensor != tensor || !r.accesses[a].readsValue())
        continue;
      for (size_t t = 0; t < q.devices.size(); ++t) {
        // Local where a task of the copy on that device makes all of it.
        BoxRef wanted = q.box(t, a);
        bool local = false;
        for (size_t u = 0; u < p.devices.size() && !local; ++u)
          local = p.devices[u] == q.devices[t] &&
                  overlapVolume(p.box(u, result), wanted) == boxVolume(wanted);
        if (!local)
          return true;
      }
    }
  }
  return false;
}

std::vector<char> Simulator::madeCopies() {
  std::vector<char> made(graph.nodes.size(), 0);
  for (size_t node = 0; node < graph.nodes.size(); ++node)
    if (graph.nodes[node].relayoutCopy)
      made[node] =
          copyIsMade(static_cast<int>(node), placement(static_cast<int>(node)));
  return made;
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
            task.duration = cost.collectiveTime(CollectiveKind::AllReduce,
                                                task.bytes, devices);
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
  buildReturn(node);
}

void Simulator::buildReturn(int node) {
  const OpNode &n = graph.nodes[node];
  const Placement &p = placement(node);
  NodeTasks &group = nodeTasks[node];
  int numDevices = machine.numDevices();
  std::vector<std::vector<int>> steps;
  for (size_t a = 0; a < n.accesses.size(); ++a) {
    const NodeAccess &access = n.accesses[a];
    const GraphTensor &tensor = graph.tensors[access.tensor];
    if (access.role != AccessRole::Write || !tensor.isLoss)
      continue;
    // Complete blocks where the op's own all-reduce completed its partial
    // sums, else what its tasks wrote.
    bool reduced =
        !group.reducedBy.empty() &&
        std::any_of(group.reducedBy[a].begin(), group.reducedBy[a].end(),
                    [](int id) { return id >= 0; });
    const SlotLayouts &held =
        slotLayouts(p, a, reduced ? SlotKind::Blocks : SlotKind::Produced);
    layout::TensorShape shape{tensor.shape, tensor.elementBytes};
    const layout::ReshardPlan &plan =
        planFor(shape, held.pieces,
                layout::Layout::everywhere(tensor.shape, numDevices),
                /*zerosElsewhere=*/false);
    auto heldBy = [&](int piece, int device) -> std::vector<int> {
      int s = held.task[piece][device];
      return s < 0 ? std::vector<int>{} : std::vector<int>{group.madeBy(a, s)};
    };
    addPlanTasks(plan, /*forward=*/true,
                 TaskKey{7, node, -1, static_cast<int32_t>(a), 0, 0}, heldBy,
                 tensor.elementBytes, steps);
  }
  // Steps past the slots share the last one (a step's tasks wait for the
  // step before anyway).
  while (steps.size() > NodeTasks::kMaxReturnSteps) {
    std::vector<int> last = std::move(steps.back());
    steps.pop_back();
    steps.back().insert(steps.back().end(), last.begin(), last.end());
  }
  for (size_t i = 0; i < steps.size(); ++i)
    group.returnGroups[i] = addGroup(std::move(steps[i]));
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
  // A measured transfer (libsoaprt's send and receive) keeps the receiver
  // busy: the sender only copies the message and posts it.
  std::optional<double> measured =
      machine.measuredTransferTime(src, dst, bytes);
  int ends[2] = {src, dst};
  occupyDevices(t, measured ? ends + 1 : ends, ends + 2);
  t.duration = measured.value_or(route.cost.time(bytes));
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
  // Parameters that the previous step's update left on other devices.
  for (int t : parametersReadBy[node])
    for (const std::array<int, 3> &dep : parameterTasks[t].forwardDeps)
      if (dep[0] == node)
        tasks[group.fwd[dep[1]]].preds.push_back(dep[2]);
}

void Simulator::linkBackward(int node) {
  NodeTasks &group = nodeTasks[node];
  for (size_t s = 0; s < group.bwd.size(); ++s)
    tasks[group.bwd[s]].preds.assign(1, group.fwd[s]);
  for (int e : consumerEdges[node])
    appendEdgeDeps(group.bwd, edges[e].bwdStart, edges[e].bwdDeps);
  // Parameter gradients this op's accumulate into, from other layouts.
  for (int t : parametersReadBy[node])
    for (const std::array<int, 3> &dep : parameterTasks[t].backwardDeps)
      if (dep[0] == node)
        tasks[group.bwd[dep[1]]].preds.push_back(dep[2]);
}

void Simulator::buildAll() {
  tasks.clear();
  freeIds.clear();
  endTime.clear();
  groups.clear();
  freeGroupIds.clear();
  groupReady.clear();
  groupPosition.clear();
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
  plans->gradientCopies.assign(n, {});
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
  for (int g : group.returnGroups)
    removeGroup(g, removed);
  group = NodeTasks();
}

void Simulator::removeEdge(int edge, std::vector<int> &removed) {
  for (int g : edges[edge].groups)
    removeGroup(g, removed);
  edges[edge] = EdgeTasks();
}

} // namespace soap

//===- Simulator.cpp - the execution simulator ----------------------------===//

#include "soap/sim/Simulator.h"
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

/// A task's list of ints (resources, predecessors): up to kInline of them
/// in place, on the heap beyond. Most tasks have one device, or a route of
/// one or two links (plus two devices), and one predecessor: the hundreds
/// of thousands of tasks a delta simulation builds and takes out would
/// otherwise cost two allocations and two frees each.
class TaskInts {
public:
  static constexpr uint32_t kInline = 4;
  TaskInts() = default;
  TaskInts(std::initializer_list<int> values) {
    append(values.begin(), values.end());
  }
  TaskInts(const TaskInts &other) {
    append(other.begin(), other.end());
  }
  TaskInts(TaskInts &&other) noexcept { take(other); }
  TaskInts &operator=(const TaskInts &other) {
    if (this != &other) {
      clear();
      append(other.begin(), other.end());
    }
    return *this;
  }
  TaskInts &operator=(TaskInts &&other) noexcept {
    if (this != &other) {
      release();
      take(other);
    }
    return *this;
  }
  TaskInts &operator=(std::initializer_list<int> values) {
    clear();
    append(values.begin(), values.end());
    return *this;
  }
  ~TaskInts() { release(); }

  int *begin() { return data(); }
  int *end() { return data() + size_; }
  const int *begin() const { return data(); }
  const int *end() const { return data() + size_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int front() const { return data()[0]; }
  void clear() { size_ = 0; }
  void push_back(int value) {
    reserve(size_ + 1);
    data()[size_++] = value;
  }
  void assign(size_t count, int value) {
    clear();
    reserve(count);
    std::fill(data(), data() + count, value);
    size_ = count;
  }
  /// Appends [first, last).
  template <typename It> void append(It first, It last) {
    reserve(size_ + static_cast<uint32_t>(std::distance(first, last)));
    int *out = data() + size_;
    for (; first != last; ++first, ++size_)
      *out++ = *first;
  }

private:
  int *data() { return capacity_ > kInline ? heap_ : inline_; }
  const int *data() const { return capacity_ > kInline ? heap_ : inline_; }
  void reserve(uint32_t wanted) {
    if (wanted <= capacity_)
      return;
    uint32_t capacity = std::max(wanted, 2 * capacity_);
    int *grown = new int[capacity];
    std::copy(data(), data() + size_, grown);
    release();
    heap_ = grown;
    capacity_ = capacity;
  }
  void release() {
    if (capacity_ > kInline)
      delete[] heap_;
    capacity_ = kInline;
  }
  void take(TaskInts &other) {
    size_ = other.size_;
    capacity_ = other.capacity_;
    if (capacity_ > kInline)
      heap_ = other.heap_;
    else
      std::copy(other.inline_, other.inline_ + size_, inline_);
    other.size_ = 0;
    other.capacity_ = kInline;
  }

  union {
    int inline_[kInline];
    int *heap_;
  };
  uint32_t size_ = 0, capacity_ = kInline;
};

struct Simulator::Task {
  TaskKind kind = TaskKind::Forward;
  bool alive = false;
  TaskKey key{};
  double duration = 0;
  int64_t bytes = 0;
  int device = -1; ///< compute tasks and updates
  int src = -1, dst = -1;
  int group = -1;
  TaskInts resources; ///< devices, then numDevices + link id
  TaskInts preds;
  int groupSize = 0; ///< all-reduce, collective
  TaskInts members;  ///< all-reduce, collective: the devices, in group order
  CollectiveKind collective = CollectiveKind::AllReduce; ///< collective
};

/// The tasks of one op and kind (an op's forward shards, its backward
/// shards, its partial-sum all-reduces; the transfers or gradient transfers
/// of one producer/consumer edge; a parameter's all-reduces or updates).
/// The scheduler takes whole groups, so it keeps per group, in flat arrays,
/// what it reads for each of the group's tasks.
struct Simulator::Group {
  bool alive = false;
  TaskRank rank = 0;
  std::vector<int> tasks;
  std::vector<int> predGroups; ///< distinct groups this one waits for
  /// What schedule() reads, in one block (it walks thousands of groups per
  /// call: one block is one cache miss, not six). First, per task: the
  /// number of its predecessors, then their ids; from `workAt` on, per
  /// task: its id, its duration (two words), the number of its resources,
  /// then the resources.
  std::vector<int32_t> view;
  int workAt = 0;
  int readyAt = 0; ///< where schedule() put its tasks' ready times
};

/// max by value: std::max returns a reference, which makes compilers keep
/// a running maximum in memory instead of a register.
static inline double later(double a, double b) { return a < b ? b : a; }

/// The latest of `s` and the free times of resources [first, last).
static inline double latestFree(const double *free, const int32_t *first,
                                const int32_t *last, double s) {
  if (last - first == 1) // most tasks: one device or one link
    return later(s, free[*first]);
  double a = s, b = 0;
  for (; last - first >= 2; first += 2) {
    a = later(a, free[first[0]]);
    b = later(b, free[first[1]]);
  }
  if (first != last)
    a = later(a, free[*first]);
  return later(a, b);
}

static double loadTime(const int32_t *at) {
  double t;
  std::memcpy(&t, at, sizeof(t));
  return t;
}
static void storeTime(int32_t *at, double t) {
  std::memcpy(at, &t, sizeof(t));
}

struct Simulator::NodeTasks {
  std::vector<int> fwd, bwd, sync;
  int fwdGroup = -1, bwdGroup = -1, syncGroup = -1;
  /// [access][task]: the all-reduce that completes the partial sums the
  /// task writes through that access, or -1.
  std::vector<std::vector<int>> reducedBy;
};

struct Simulator::EdgeTasks {
  /// What each consumer task waits for in the forward pass, and each
  /// producer task in the backward pass, in one list each: consumer task
  /// u's are fwdDeps[fwdStart[u] .. fwdStart[u + 1]).
  std::vector<int> fwdStart, fwdDeps, bwdStart, bwdDeps;
  /// The edge's communication: one group per reshard step (a step's
  /// tasks wait for the step before).
  std::vector<int> groups;
};

/// Sorts (task, dependency) pairs by task, stably, into `start` (numTasks + 1
/// offsets) and `list`.
static void groupByTask(const std::vector<std::pair<int, int>> &pairs,
                        size_t numTasks, std::vector<int> &start,
                        std::vector<int> &list) {
  start.assign(numTasks + 1, 0);
  for (const auto &pair : pairs)
    ++start[pair.first + 1];
  for (size_t t = 0; t < numTasks; ++t)
    start[t + 1] += start[t];
  list.resize(pairs.size());
  // Fill with start[t] as task t's cursor, which ends at task t + 1's
  // start; then shift the offsets back.
  for (const auto &[task, dep] : pairs)
    list[start[task]++] = dep;
  for (size_t t = numTasks; t > 0; --t)
    start[t] = start[t - 1];
  start[0] = 0;
}

using Range = std::pair<int64_t, int64_t>; // inclusive
using Box = std::vector<Range>;

/// A box kept in a Placement's flat storage.
struct BoxRef {
  const Range *first = nullptr;
  size_t rank = 0;
  Box toBox() const { return Box(first, first + rank); }
};

/// The report's totals, kept up to date as tasks come and go. Everything is
/// an integer (busy time in femtoseconds), so totals do not depend on the
/// order tasks were added in: a delta simulation reports exactly what a
/// full one does.
struct Simulator::Accounts {
  std::vector<int64_t> busyFs, memory, linkBytes;
  int64_t commBytes = 0, numTasks = 0;
  /// Regions of parameters and inputs resident on a device, with the
  /// number of tasks there that read them: (tensor, device, region).
  struct Key {
    int tensor, device;
    Box box;
    bool operator==(const Key &o) const {
      return tensor == o.tensor && device == o.device && box == o.box;
    }
  };
  struct Hash {
    size_t operator()(const Key &k) const {
      size_t h = std::hash<int64_t>()((int64_t(k.tensor) << 20) ^ k.device);
      for (auto [lo, hi] : k.box)
        h = h * 1000003u ^ std::hash<int64_t>()(lo * 7919 + hi);
      return h;
    }
  };
  std::unordered_map<Key, int, Hash> resident;

  void reset(int numDevices, size_t numLinks) {
    busyFs.assign(numDevices, 0);
    memory.assign(numDevices, 0);
    linkBytes.assign(numLinks, 0);
    commBytes = numTasks = 0;
    resident.clear();
  }
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
  std::vector<std::pair<int, EdgeTasks>> edges;
  std::vector<std::pair<int, std::array<int, 2>>> parameterGroups;
  std::vector<std::pair<int, TaskInts>> preds;
  std::vector<std::pair<int, Task>> removed;
  std::vector<std::pair<int, Group>> removedGroups;
  std::vector<int> relinkedGroups, addedGroups;
  size_t taskCount = 0, groupCount = 0;
  std::vector<int> freeIds, freeGroupIds;
  /// The report's totals before the change (but for the resident regions,
  /// which undo() takes out and puts back op by op).
  std::vector<int64_t> busyFs, memory, linkBytes;
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

/// The blocks one access of a placement touches, as layouts: one per slot
/// (the k-th task of every device), and each (slot, device)'s task.
/// `gradients`: the blocks hold the tasks' partial gradients of the tensor
/// (partial sums where two tasks touch the same elements).
struct Simulator::SlotLayouts {
  std::vector<layout::Layout> pieces;
  std::vector<std::vector<int>> task; ///< [slot][device] -> task, or -1
};

/// Reshard plans by their arguments (Simulator::planFor).
struct Simulator::PlanCache {
  std::unordered_map<std::string, layout::ReshardPlan> plans;
  std::string key;
  /// What earlier readers' reshards made of a producer's output (the
  /// partitioner keeps it as a piece of the value for later readers): per
  /// producer node and access, each layout and, per device, the tasks that
  /// made it there. Rebuilt with the producer's outgoing edges, in the
  /// order of their consumers.
  struct Copy {
    layout::Layout layout;
    std::vector<std::vector<int>> madeBy;
  };
  std::vector<std::map<size_t, std::vector<Copy>>> copies;
};

struct Simulator::Placement {
  bool replicated = false;
  bool splitsReduction = false;
  std::vector<int> devices;    ///< per task
  std::vector<int64_t> shard;  ///< loop extents of every task
  /// The region of each access of each task, in one array: task t's
  /// region of access a has rank accessRank[a] and starts at
  /// t * stride + accessAt[a].
  std::vector<Range> ranges;
  std::vector<size_t> accessAt, accessRank;
  size_t stride = 0;
  double forward = 0, backward = 0;
  /// slotLayouts per access, built when first asked for: [gradients][access].
  mutable std::vector<std::unique_ptr<SlotLayouts>> layouts[2];

  BoxRef box(size_t task, size_t access) const {
    return {ranges.data() + task * stride + accessAt[access],
            accessRank[access]};
  }
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

static int64_t overlapVolume(BoxRef a, BoxRef b) {
  int64_t volume = 1;
  for (size_t d = 0; d < a.rank; ++d) {
    int64_t lo = std::max(a.first[d].first, b.first[d].first);
    int64_t hi = std::min(a.first[d].second, b.first[d].second);
    if (hi < lo)
      return 0;
    volume *= hi - lo + 1;
  }
  return volume;
}

static int64_t boxVolume(BoxRef box) { return overlapVolume(box, box); }
static int64_t boxVolume(const Box &box) {
  return boxVolume(BoxRef{box.data(), box.size()});
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
    // Received activations stay for the backward pass.
    if (t.kind == TaskKind::Transfer)
      acc.memory[t.dst] += sign * t.bytes;
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
      if (access.role != AccessRole::Write)
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
  accountNodeMemory(node, p, 1);
}

void Simulator::accountNodeMemory(int node, const Placement &p, int sign) {
  // Parameters (with their gradients and optimizer state when training)
  // and inputs a device reads, each region once however many of its tasks
  // read it; every forward output (kept for the backward pass).
  const OpNode &n = graph.nodes[node];
  Accounts &acc = *accounts;
  int64_t parameterCopies =
      options.training ? 2 + optimizerStateCopies(cost.optimizer()) : 1;
  for (size_t t = 0; t < p.devices.size(); ++t)
    for (size_t a = 0; a < n.accesses.size(); ++a) {
      const NodeAccess &access = n.accesses[a];
      const GraphTensor &tensor = graph.tensors[access.tensor];
      int device = p.devices[t];
      int64_t bytes = boxVolume(p.box(t, a)) * tensor.elementBytes;
      if (tensor.producer < 0) {
        if (access.role != AccessRole::Read)
          continue;
        int64_t copies = tensor.isParameter ? parameterCopies : 1;
        Accounts::Key key{access.tensor, device, p.box(t, a).toBox()};
        if (sign > 0) {
          if (acc.resident[key]++ == 0)
            acc.memory[device] += bytes * copies;
        } else {
          auto it = acc.resident.find(key);
          assert(it != acc.resident.end());
          if (--it->second == 0) {
            acc.memory[device] -= bytes * copies;
            acc.resident.erase(it);
          }
        }
      } else if (tensor.producer == node && access.role == AccessRole::Write) {
        acc.memory[device] += sign * bytes;
      }
    }
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
                           int src, int dst, int pred) {
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
  t.preds = {pred};
  return id;
}

const Simulator::SlotLayouts &Simulator::slotLayouts(const Placement &p,
                                                     size_t access,
                                                     bool gradients) const {
  std::vector<std::unique_ptr<SlotLayouts>> &cache = p.layouts[gradients];
  if (cache.size() <= access)
    cache.resize(access + 1);
  if (!cache[access])
    cache[access] =
        std::make_unique<SlotLayouts>(buildSlotLayouts(p, access, gradients));
  return *cache[access];
}

Simulator::SlotLayouts Simulator::buildSlotLayouts(const Placement &p,
                                                   size_t access,
                                                   bool gradients) const {
  int numDevices = machine.numDevices();
  SlotLayouts result;
  std::vector<int> slotOf(numDevices, 0);
  for (size_t t = 0; t < p.devices.size(); ++t) {
    int device = p.devices[t];
    size_t slot = slotOf[device]++;
    if (slot == result.pieces.size()) {
      result.pieces.emplace_back();
      result.pieces.back().blocks.resize(numDevices);
      result.task.emplace_back(numDevices, -1);
    }
    BoxRef box = p.box(t, access);
    layout::Block block;
    block.offsets.reserve(box.rank);
    block.sizes.reserve(box.rank);
    for (size_t d = 0; d < box.rank; ++d) {
      block.offsets.push_back(box.first[d].first);
      block.sizes.push_back(box.first[d].second - box.first[d].first + 1);
    }
    result.pieces[slot].blocks[device] = std::move(block);
    result.task[slot][device] = static_cast<int>(t);
  }
  // A replicated op's tasks compute the same gradient (copies, not partial
  // sums).
  if (!gradients || p.replicated)
    return result;
  // Gradients of elements read by several tasks add up.
  bool shared = false;
  for (size_t t = 0; t < p.devices.size() && !shared; ++t)
    for (size_t u = t + 1; u < p.devices.size() && !shared; ++u)
      shared = overlapVolume(p.box(t, access), p.box(u, access)) > 0;
  if (!shared)
    return result;
  for (size_t slot = 0; slot < result.pieces.size(); ++slot) {
    layout::Layout &piece = result.pieces[slot];
    piece.partial = layout::Combine::Sum;
    piece.tasks.assign(numDevices, -1);
    for (int d = 0; d < numDevices; ++d)
      piece.tasks[d] = result.task[slot][d];
  }
  return result;
}

int Simulator::addCollective(CollectiveKind kind, const TaskKey &key,
                             int64_t bytes, const std::vector<int> &group,
                             const std::vector<int> &preds) {
  int numDevices = machine.numDevices();
  int id = newTask();
  Task &t = tasks[id];
  t.kind = TaskKind::Collective;
  t.collective = kind;
  t.key = key;
  t.bytes = bytes;
  t.groupSize = static_cast<int>(group.size());
  t.members.append(group.begin(), group.end());
  t.duration = machine.collectiveCost(kind, bytes, group).time;
  for (LinkId link : machine.collectiveLinks(group))
    t.resources.push_back(numDevices + link);
  occupyDevices(t, group.data(), group.data() + group.size());
  t.preds.append(preds.begin(), preds.end());
  return id;
}

const layout::ReshardPlan &
Simulator::planFor(const layout::TensorShape &shape,
                   const std::vector<layout::Layout> &pieces,
                   const layout::Layout &target, bool zerosElsewhere) {
  // The same layouts recur across layers and proposals: plan each once.
  std::string &key = plans->key;
  key.clear();
  auto add = [&](int64_t v) {
    key.append(reinterpret_cast<const char *>(&v), sizeof v);
  };
  auto addLayout = [&](const layout::Layout &l) {
    add(l.partial ? 1 + static_cast<int>(*l.partial) : 0);
    for (size_t d = 0; d < l.blocks.size(); ++d) {
      if (!l.blocks[d]) {
        add(-1);
        continue;
      }
      for (size_t i = 0; i < l.blocks[d]->sizes.size(); ++i) {
        add(l.blocks[d]->offsets[i]);
        add(l.blocks[d]->sizes[i]);
      }
      if (l.partial)
        add(l.tasks[d]);
      add(-2);
    }
  };
  add(shape.elementBytes);
  add(zerosElsewhere);
  for (int64_t size : shape.shape)
    add(size);
  add(-3);
  for (const layout::Layout &piece : pieces)
    addLayout(piece);
  add(-4);
  addLayout(target);
  auto it = plans->plans.find(key);
  if (it != plans->plans.end())
    return it->second;
  if (plans->plans.size() > 100000)
    plans->plans.clear();
  return plans->plans
      .emplace(key, layout::planReshard(shape, pieces, target, zerosElsewhere))
      .first->second;
}

static std::optional<CollectiveKind> collectiveOf(layout::StepKind kind) {
  switch (kind) {
  case layout::StepKind::AllReduce:
  case layout::StepKind::AllReduceWhole:
    return CollectiveKind::AllReduce;
  case layout::StepKind::ReduceScatter:
    return CollectiveKind::ReduceScatter;
  case layout::StepKind::AllGather:
    return CollectiveKind::AllGather;
  case layout::StepKind::AllToAll:
    return CollectiveKind::AllToAll;
  case layout::StepKind::Broadcast:
    return CollectiveKind::Broadcast;
  default:
    return std::nullopt;
  }
}

std::vector<std::vector<int>>
Simulator::addPlanTasks(const layout::ReshardPlan &plan, bool forward,
                        const TaskKey &base, const SourceTask &sourceOf,
                        int64_t elementBytes,
                        std::vector<std::vector<int>> &groups) {
  int numDevices = machine.numDevices();
  // What each device's data waits for, as the steps go.
  std::vector<std::vector<int>> ready(numDevices);
  auto fromPiece = [&](int piece, int device) {
    return sourceOf(piece, device);
  };
  if (plan.piece >= 0)
    for (int d = 0; d < numDevices; ++d)
      ready[d] = fromPiece(plan.piece, d);
  TaskKind transferKind = forward ? TaskKind::Transfer : TaskKind::GradTransfer;
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const layout::Step &step = plan.steps[s];
    TaskKey key = base;
    key[0] += 8 * static_cast<int32_t>(1 + groups.size());
    std::vector<int> ids;
    if (std::optional<CollectiveKind> kind = collectiveOf(step.kind)) {
      for (size_t g = 0; g < step.groups.size(); ++g) {
        const std::vector<int> &group = step.groups[g];
        std::vector<int> preds;
        if (step.kind == layout::StepKind::AllReduceWhole) {
          for (int piece : step.pieces)
            for (int d = 0; d < numDevices; ++d)
              for (int id : fromPiece(piece, d))
                preds.push_back(id);
        } else {
          for (int d : group)
            preds.insert(preds.end(), ready[d].begin(), ready[d].end());
        }
        key[4] = static_cast<int32_t>(g);
        int id = addCollective(*kind, key, step.bytes, group, preds);
        ids.push_back(id);
        for (int d : group)
          ready[d] = {id};
      }
    } else if (step.kind == layout::StepKind::SendRecv ||
               step.kind == layout::StepKind::HaloExchange) {
      std::vector<std::vector<int>> received(numDevices);
      for (size_t i = 0; i < step.transfers.size(); ++i) {
        const layout::Transfer &t = step.transfers[i];
        std::vector<int> source =
            t.piece >= 0 ? fromPiece(t.piece, t.from) : ready[t.from];
        if (t.from == t.to) {
          received[t.to].insert(received[t.to].end(), source.begin(),
                                source.end());
          continue;
        }
        key[4] = t.from;
        key[5] = t.to;
        int id = addTransfer(transferKind, key, t.block.volume() * elementBytes,
                             t.from, t.to, source.empty() ? -1 : source[0]);
        Task &task = tasks[id];
        if (source.empty())
          task.preds.clear();
        else
          task.preds.append(source.begin() + 1, source.end());
        ids.push_back(id);
        received[t.to].push_back(id);
      }
      for (int d = 0; d < numDevices; ++d)
        if (step.result.blocks[d])
          ready[d] = std::move(received[d]);
    }
    if (!ids.empty())
      groups.push_back(std::move(ids));
  }
  return ready;
}

static bool sameBox(BoxRef a, BoxRef b) {
  return a.rank == b.rank && std::equal(a.first, a.first + a.rank, b.first);
}

/// Whether an edge's data stays where it is: every consumer task reads
/// exactly a block its device produced (the producer task's index in
/// `producerOf[u]`: planReshard gives no step), and, for the gradient,
/// no two consumer tasks read the same elements (no partial sums) and
/// every producer task's block is exactly one consumer task's on its device
/// (`consumerOf[s]`).
bool Simulator::sameBlocksOnSameDevices(const Placement &pp, size_t pa,
                                        const Placement &cp, size_t ca,
                                        bool backward,
                                        std::vector<int> &producerOf,
                                        std::vector<int> &consumerOf) {
  auto local = [](const Placement &from, size_t fa, const Placement &to,
                  size_t ta, size_t t) {
    for (size_t s = 0; s < from.devices.size(); ++s)
      if (from.devices[s] == to.devices[t] &&
          sameBox(from.box(s, fa), to.box(t, ta)))
        return static_cast<int>(s);
    return -1;
  };
  producerOf.assign(cp.devices.size(), -1);
  for (size_t u = 0; u < cp.devices.size(); ++u)
    if ((producerOf[u] = local(pp, pa, cp, ca, u)) < 0)
      return false;
  if (!backward)
    return true;
  for (size_t u = 0; u < cp.devices.size(); ++u)
    for (size_t v = u + 1; v < cp.devices.size(); ++v)
      if (overlapVolume(cp.box(u, ca), cp.box(v, ca)) > 0)
        return false;
  consumerOf.assign(pp.devices.size(), -1);
  for (size_t s = 0; s < pp.devices.size(); ++s)
    if ((consumerOf[s] = local(cp, ca, pp, pa, s)) < 0)
      return false;
  return true;
}

void Simulator::buildEdge(int edgeId) {
  auto [producer, consumer] = edgeEnds[edgeId];
  const OpNode &pn = graph.nodes[producer];
  const OpNode &cn = graph.nodes[consumer];
  const Placement &pp = placement(producer);
  const Placement &cp = placement(consumer);
  EdgeTasks &edge = edges[edgeId];
  edge = EdgeTasks();
  std::vector<std::vector<int>> groupsOfEdge;
  std::vector<int> producerOf, consumerOf;
  fwdPairs.clear();
  bwdPairs.clear();
  bool backward = options.training && pn.needsBackward && cn.needsBackward;
  int numDevices = machine.numDevices();
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
    const NodeTasks &made = nodeTasks[producer];
    auto producedBy = [&](int s) {
      if (pp.splitsReduction && made.reducedBy[pa][s] >= 0)
        return made.reducedBy[pa][s];
      return made.fwd[s];
    };
    if (sameBlocksOnSameDevices(pp, pa, cp, ca, backward, producerOf,
                                consumerOf)) {
      for (size_t u = 0; u < producerOf.size(); ++u)
        fwdPairs.emplace_back(u, producedBy(producerOf[u]));
      if (backward)
        for (size_t s = 0; s < consumerOf.size(); ++s)
          bwdPairs.emplace_back(s, nodeTasks[consumer].bwd[consumerOf[s]]);
      continue;
    }
    // The reshards lib/layout plans, as the partitioner emits them: the
    // consumer's blocks of each slot from the producer's blocks (complete
    // once a split reduction's all-reduce ran) ...
    layout::TensorShape shape{tensor.shape, tensor.elementBytes};
    const SlotLayouts &produced = slotLayouts(pp, pa, /*gradients=*/false);
    const SlotLayouts &read = slotLayouts(cp, ca, /*gradients=*/false);
    std::vector<PlanCache::Copy> &copies = plans->copies[producer][pa];
    auto producedIn = [&](int piece, int device) -> std::vector<int> {
      size_t own = produced.pieces.size();
      if (static_cast<size_t>(piece) >= own)
        return copies[piece - own].madeBy[device];
      int s = produced.task[piece][device];
      return s < 0 ? std::vector<int>{} : std::vector<int>{producedBy(s)};
    };
    for (size_t k = 0; k < read.pieces.size(); ++k) {
      std::vector<layout::Layout> pieces = produced.pieces;
      for (const PlanCache::Copy &copy : copies)
        pieces.push_back(copy.layout);
      const layout::ReshardPlan &plan =
          planFor(shape, pieces, read.pieces[k], /*zerosElsewhere=*/false);
      TaskKey base{2,
                   consumer,
                   producer,
                   static_cast<int32_t>(ca),
                   static_cast<int32_t>(k),
                   0};
      std::vector<std::vector<int>> ready =
          addPlanTasks(plan, /*forward=*/true, base, producedIn,
                       tensor.elementBytes, groupsOfEdge);
      // What the steps made stays for the next readers.
      for (auto step = plan.steps.rbegin(); step != plan.steps.rend(); ++step)
        if (step->kind != layout::StepKind::Slice) {
          copies.push_back({step->result, ready});
          break;
        }
      for (int d = 0; d < numDevices; ++d)
        if (int u = read.task[k][d]; u >= 0)
          for (int id : ready[d])
            fwdPairs.emplace_back(u, id);
    }
    if (!backward)
      continue;
    // ... and the gradient from the consumer's blocks (partial sums where
    // its tasks read the same elements; zeros where it reads nothing) back
    // to the producer's.
    const SlotLayouts &gradients = slotLayouts(cp, ca, /*gradients=*/true);
    const NodeTasks &read_ = nodeTasks[consumer];
    auto gradientBy = [&](int piece, int device) -> std::vector<int> {
      int u = gradients.task[piece][device];
      return u < 0 ? std::vector<int>{} : std::vector<int>{read_.bwd[u]};
    };
    for (size_t k = 0; k < produced.pieces.size(); ++k) {
      const layout::ReshardPlan &plan =
          planFor(shape, gradients.pieces, produced.pieces[k],
                  /*zerosElsewhere=*/true);
      TaskKey base{3,
                   producer,
                   consumer,
                   static_cast<int32_t>(ca),
                   static_cast<int32_t>(k),
                   0};
      std::vector<std::vector<int>> ready =
          addPlanTasks(plan, /*forward=*/false, base, gradientBy,
                       tensor.elementBytes, groupsOfEdge);
      for (int d = 0; d < numDevices; ++d)
        if (int s = produced.task[k][d]; s >= 0)
          for (int id : ready[d])
            bwdPairs.emplace_back(s, id);
    }
  }
  groupByTask(fwdPairs, cp.devices.size(), edge.fwdStart, edge.fwdDeps);
  groupByTask(bwdPairs, pp.devices.size(), edge.bwdStart, edge.bwdDeps);
  for (std::vector<int> &ids : groupsOfEdge)
    edge.groups.push_back(addGroup(std::move(ids)));
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
  accounts->reset(machine.numDevices(), machine.links().size());
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
  accountNodeMemory(node, *placements[node], -1);
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
  return report();
}

bool Simulator::undo() {
  UndoLog &log = *undoLog;
  if (!log.valid)
    return false;
  log.valid = false;
  // The regions the changed ops made resident go (the totals come back
  // from the log at the end).
  for (auto &entry : log.nodes)
    accountNodeMemory(entry.node, *placements[entry.node], -1);
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
    accountNodeMemory(entry.node, *placements[entry.node], 1);
  }
  Accounts &acc = *accounts;
  acc.busyFs = log.busyFs;
  acc.memory = log.memory;
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

std::vector<CommStep> Simulator::communication() const {
  std::vector<CommStep> steps;
  for (const Group &g : groups) {
    if (!g.alive)
      continue;
    for (int id : g.tasks) {
      const Task &t = tasks[id];
      switch (t.kind) {
      case TaskKind::Transfer:
      case TaskKind::GradTransfer:
        steps.push_back({"send", {t.src, t.dst}, t.bytes});
        break;
      case TaskKind::AllReduce:
        if (t.groupSize > 1) {
          steps.push_back({"all_reduce",
                           std::vector<int>(t.members.begin(), t.members.end()),
                           t.bytes});
        }
        break;
      case TaskKind::Collective:
        steps.push_back({collectiveName(t.collective),
                         std::vector<int>(t.members.begin(), t.members.end()),
                         t.bytes});
        break;
      default:
        break;
      }
    }
  }
  std::sort(steps.begin(), steps.end(),
            [](const CommStep &a, const CommStep &b) {
              return std::tie(a.kind, a.group, a.bytes) <
                     std::tie(b.kind, b.group, b.bytes);
            });
  return steps;
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

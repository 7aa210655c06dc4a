//===- SimulatorTasks.h - the simulator's task graph -----------*- C++ -*-===//
//
// Private to lib/sim: the tasks, groups and placements that the simulator's
// files share: Simulator.cpp (building the task graph), GraphAnalyses.cpp
// (facts of the op graph found once for every strategy), Reshards.cpp (the
// communication of each edge, as lib/layout plans it), SimSchedule.cpp
// (scheduling), SimDelta.cpp (full and delta simulation, undo), Memory.cpp
// (memory from liveness) and SimReport.cpp (report and trace).
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_LIB_SIM_SIMULATORTASKS_H
#define SOAP_LIB_SIM_SIMULATORTASKS_H

#include "soap/layout/Layout.h"
#include "soap/machine/Machine.h"
#include "soap/sim/Simulator.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace soap {
/// Orders tasks with equal ready times, independently of their ids, so that
/// a delta rebuild and a full rebuild schedule identically.
using TaskKey = std::array<int32_t, 6>; // kind, node, peer, index, sub, aux

/// The key packed into one integer (20 bits per field) for fast ordering.
using TaskRank = unsigned __int128;
inline TaskRank rankOf(const TaskKey &key) {
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
  TaskInts(const TaskInts &other) { append(other.begin(), other.end()); }
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

/// The report's totals, kept up to date as tasks come and go (memory:
/// summed again after each simulation, lib/sim/Memory.cpp). Everything is
/// an integer (busy time in femtoseconds), so totals do not depend on the
/// order tasks were added in: a delta simulation reports exactly what a
/// full one does.
struct Simulator::Accounts {
  std::vector<int64_t> busyFs, memory, linkBytes;
  int64_t commBytes = 0, numTasks = 0;
  /// Data received by transfers, as differences over the memory timeline's
  /// points (lib/sim/Memory.cpp): numDevices rows of `stride`.
  std::vector<int64_t> received;

  void reset(int numDevices, size_t numLinks, size_t stride) {
    busyFs.assign(numDevices, 0);
    memory.assign(numDevices, 0);
    linkBytes.assign(numLinks, 0);
    received.assign(stride * numDevices, 0);
    commBytes = numTasks = 0;
  }
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
  /// A reshard's step before its plan's last: what it makes dies at the
  /// next step (accountReceived holds nothing for it).
  bool intermediate = false;
  /// An update applied inside a gather's scatter-add (sparseSgdStep): no
  /// work of its own.
  bool inScatter = false;
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
inline double later(double a, double b) { return a < b ? b : a; }

/// The latest of `s` and the free times of resources [first, last).
inline double latestFree(const double *free, const int32_t *first,
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

inline double loadTime(const int32_t *at) {
  double t;
  std::memcpy(&t, at, sizeof(t));
  return t;
}
inline void storeTime(int32_t *at, double t) { std::memcpy(at, &t, sizeof(t)); }

struct Simulator::NodeTasks {
  std::vector<int> fwd, bwd, sync;
  int fwdGroup = -1, bwdGroup = -1, syncGroup = -1;
  /// The steps that make the loss whole on every device, as the
  /// partitioned step returns it (a group per step; ints, so that they
  /// survive the move into the undo log as the other group ids do).
  static constexpr size_t kMaxReturnSteps = 4;
  std::array<int, kMaxReturnSteps> returnGroups = {-1, -1, -1, -1};
  /// [access][task]: the all-reduce that completes the partial sums the
  /// task writes through that access, or -1.
  std::vector<std::vector<int>> reducedBy;

  /// The task after which task `t`'s block of access `access` is made: the
  /// all-reduce that completes it, else the task itself.
  int madeBy(size_t access, size_t t) const {
    return !reducedBy.empty() && reducedBy[access][t] >= 0
               ? reducedBy[access][t]
               : fwd[t];
  }
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
inline void groupByTask(const std::vector<std::pair<int, int>> &pairs,
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

inline int64_t overlapVolume(BoxRef a, BoxRef b) {
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

inline int64_t boxVolume(BoxRef box) { return overlapVolume(box, box); }
/// A task that reads nothing of a tensor (its loops index only outside it:
/// a concatenation's task over another input) has an empty box there.
inline bool isEmpty(BoxRef box) {
  for (size_t d = 0; d < box.rank; ++d)
    if (box.first[d].second < box.first[d].first)
      return true;
  return false;
}
inline int64_t boxVolume(const Box &box) {
  return boxVolume(BoxRef{box.data(), box.size()});
}

/// What accountMemory needs of the graph alone, computed once: which ops
/// are views, the buffer each tensor is (views stand for what they view),
/// each buffer's readers, and the arguments' slots in the flat arrays a
/// simulation fills.
struct Simulator::MemoryPlan {
  std::vector<char> isView;                            ///< per node
  /// Per node: for a copy folded into the products that read it (a view
  /// too), its last reader, where it is made after all on a device that
  /// sends it or takes part in a collective of it; else -1.
  std::vector<int> foldedUntil;
  std::vector<int> lastRead, lastBackward;             ///< per buffer
  std::vector<char> takenOver;                         ///< per buffer
  /// Per buffer: the readers whose backward work reads it again, in graph
  /// order (the first reader's backward work is the last), each with the
  /// node whose result it reads (the buffer's producer or a view of it:
  /// the producer end of the reader's edge).
  std::vector<std::vector<std::pair<int, int>>> savedReaders;
  /// Per tensor: its slot among the arguments some op reads, or -1; per
  /// slot, the tensor and where its ranges start (times the device count).
  std::vector<int> argSlot, argTensor;
  std::vector<size_t> argRangeAt;
  size_t argRanges = 0;
  // A simulation's scratch: per (slot, device) the bounding box of what the
  // device reads, whether it reads any, its last reader with backward work
  // and its gradient's bytes when synchronized.
  std::vector<Range> box;
  std::vector<char> reads;
  std::vector<int> lastReader;
  std::vector<int64_t> gradient;
};

/// The blocks one access of a placement touches, as layouts: one per slot
/// (the k-th task of every device), and each (slot, device)'s task.
/// `gradients`: the blocks hold the tasks' partial gradients of the tensor
/// (partial sums where two tasks touch the same elements).
struct Simulator::SlotLayouts {
  std::vector<layout::Layout> pieces;
  std::vector<std::vector<int>> task; ///< [slot][device] -> task, or -1
};

/// The access of `n` that defines `tensor` (its producer's write), or
/// `n.accesses.size()` when `n` does not make it.
inline size_t definingAccess(const OpNode &n, int tensor) {
  size_t a = 0;
  while (a < n.accesses.size() && !(n.accesses[a].tensor == tensor &&
                                    n.accesses[a].role != AccessRole::Read))
    ++a;
  return a;
}

/// A slice, reshape, concatenation or pad: the ops the partitioner runs
/// whole where their operands are whole everywhere
/// (Simulator::viewOfWholeOperands).
inline bool isView(const OpNode &n) {
  return n.opName == "tensor.extract_slice" ||
         n.opName == "tensor.expand_shape" ||
         n.opName == "tensor.collapse_shape" || n.opName == "tensor.concat" ||
         n.opName == "tensor.pad";
}

/// Whether two layouts hold the same blocks on the same devices, and, for
/// partial sums, sums of the same kind with copies of one partial on the
/// same devices: what a local elementwise add of the two keeps.
inline bool sameLayout(const layout::Layout &a, const layout::Layout &b) {
  if (a.blocks != b.blocks || a.partial != b.partial)
    return false;
  return !a.partial || layout::sameCopies(a.tasks, b.tasks);
}

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
  /// The same for the gradient of a consumer's reads that is its adjoint
  /// itself (NodeAccess::gradientIsAdjoint), per consumer node: one value,
  /// which what its reshard for one producer made serves for the others.
  /// Rebuilt with all the consumer's incoming edges, in reverse program
  /// order of their producers (the backward pass's).
  std::vector<std::vector<Copy>> gradientCopies;
};

struct Simulator::Placement {
  bool replicated = false;
  bool splitsReduction = false;
  std::vector<int> devices;   ///< per task
  std::vector<int64_t> shard; ///< loop extents of every task
  /// The region of each access of each task, in one array: task t's
  /// region of access a has rank accessRank[a] and starts at
  /// t * stride + accessAt[a].
  std::vector<Range> ranges;
  std::vector<size_t> accessAt, accessRank;
  size_t stride = 0;
  /// Per access: a linalg.generic's read of some dimensions at a constant
  /// index (a broadcast of a unit dimension), whose gradient the training
  /// step computes at the lower rank and expands back
  /// (autodiff::finishGradient).
  std::vector<char> expandedGradient;
  int node = -1;
  double forward = 0, backward = 0;
  /// A split reduction whose tasks are on distinct devices: outputs that
  /// ops read stay partial sums, which each reader's reshard combines (a
  /// reduce_scatter or all-reduce, as the partitioner emits at the
  /// reader); outputs nothing reads are all-reduced after the op.
  bool partialOutputs = false;
  /// A gather whose gradient runs whole on each device (one task on
  /// every device), its output's gradient brought there whole, rather than as
  /// partial sums of its table (Simulator::scatterRunsWhole): its
  /// backward work is the whole op's, and its gradients are complete.
  bool wholeScatter = false;
  /// slotLayouts per access, built when first asked for: [kind][access].
  mutable std::vector<std::unique_ptr<SlotLayouts>> layouts[3];

  BoxRef box(size_t task, size_t access) const {
    return {ranges.data() + task * stride + accessAt[access],
            accessRank[access]};
  }
  /// The part of the tensor that access `access` reads: its tasks' boxes'
  /// span.
  Box region(size_t access) const {
    Box span;
    for (size_t t = 0; t < devices.size(); ++t) {
      Box b = box(t, access).toBox();
      if (span.empty()) {
        span = b;
        continue;
      }
      for (size_t d = 0; d < b.size(); ++d) {
        span[d].first = std::min(span[d].first, b[d].first);
        span[d].second = std::max(span[d].second, b[d].second);
      }
    }
    return span;
  }
};

/// The tasks of one parameter's synchronization (Parameters.cpp): its
/// groups (the gradient's steps, the updates, the steps that bring the
/// updated parameter to its readers), and the readers' tasks that wait for
/// those steps, (reader node, its task, the step's task): forward tasks for
/// the parameter, backward tasks for the gradient they accumulate into.
struct Simulator::ParameterTasks {
  std::vector<int> groups;
  std::vector<std::array<int, 3>> forwardDeps, backwardDeps;
  /// Per device, the bytes of the parameter it holds across steps where
  /// buildOwnedParameter keeps it in its gradients' layout; empty where the
  /// parameter's readers decide (accountMemory).
  std::vector<int64_t> keptBytes;
  /// The SGD step goes into the gather's scatter on every device that
  /// updates it (sparseSgdStep, no all-reduce): no gradient buffer.
  bool stepInScatter = false;
  /// Kept whole on every device (buildGatheredParameter): a view of it
  /// (a slice) is taken wherever it is read, whatever the view's config.
  bool wholeEverywhere = false;
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
  std::vector<std::pair<int, ParameterTasks>> parameters;
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
  std::vector<int64_t> orderPosition;
  std::vector<double> checkpointFree, checkpointEnd;
  size_t checkpointsKept = 0;
  double scheduleEnd = 0;
  std::vector<int> taskIds;
  std::vector<double> taskEnds; ///< the end of each of taskIds
  /// Groups taken again: their ready times and places before.
  struct GroupTime {
    int group;
    double ready;
    int64_t position;
  };
  std::vector<GroupTime> groupTimes;
};

} // namespace soap

#endif // SOAP_LIB_SIM_SIMULATORTASKS_H

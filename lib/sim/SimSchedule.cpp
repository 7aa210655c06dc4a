//===- SimSchedule.cpp - list scheduling of the task graph ---------------===//
//
// Takes the task groups onto devices and links in the partitioned
// program's order, as each rank runs its part of the step: a rank runs
// its ops, and waits for its communication, one after the other in the
// order of the training step (the forward pass, the backward pass in
// reverse, then the updates), never a later op first because its operands
// are ready. Resumes from a checkpoint after the prefix a delta simulation
// kept.
//
//===----------------------------------------------------------------------===//

#include "soap/sim/Simulator.h"

#include "SimulatorTasks.h"

#include <algorithm>
#include <limits>
#include <queue>
#include <vector>

namespace soap {
//===----------------------------------------------------------------------===//
// Scheduling
//===----------------------------------------------------------------------===//

// Places, 16 apart per op: op n's forward work at 16 n + 8 (N ops), its
// backward work at 16 (2N - 1 - n) + 8, parameter p's update at
// 16 (2N + p) + 8; what an op's work waits for just before it (the
// partitioner materializes each operand where its reader needs it), what
// follows an op's work (the all-reduce of its partial sums, a result
// returned whole) just after it.
int64_t Simulator::programPosition(int id) const {
  const Group &g = groups[id];
  const TaskKey &key = tasks[g.tasks.front()].key;
  int64_t n = graph.nodes.size();
  auto forward = [&](int64_t node) { return 16 * node + 8; };
  auto backward = [&](int64_t node) { return 16 * (2 * n - 1 - node) + 8; };
  auto atUpdate = [&](int64_t tensor) { return 16 * (2 * n + tensor) + 8; };
  switch (key[0] % 8) {
  case 0:
    return forward(key[1]);
  case 1:
    return backward(key[1]);
  case 2: // a forward edge into op key[1]
    return forward(key[1]) - 4;
  case 3: // a gradient edge into op key[1]'s backward work
    return backward(key[1]) - 4;
  case 4:
    if (key[2] == 1) // the parameter to a reader
      return forward(parameterReaders[key[1]][key[3]].first) - 4;
    if (key[2] == 2) // returned whole at the end of the step
      return atUpdate(graph.tensors.size());
    // The all-reduce of its gradient before its update, where the devices
    // cannot overlap it with computation; else as soon as the gradient is
    // complete (--soap-lower-gpu's overlap-comm). Moves of a gradient's
    // addends: when they are made.
    if (key[2] == -1 && !overlapsCommunication)
      return atUpdate(key[1]) - 4;
    return 0;
  case 5:
    return atUpdate(key[1]);
  case 6: // the all-reduce of op key[1]'s partial sums
  case 7: // op key[1]'s result, returned whole
    return forward(key[1]) + 4;
  }
  return 0;
}

double Simulator::readyTimeOf(const Group &g,
                              std::vector<double> *taskReady) const {
  // When the last of its tasks is ready (each when the last of its
  // predecessors ends), and not before the groups it waits for became
  // ready.
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
                      checkpointFree.begin() + (checkpoint + 1) * numResources);
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
    log.orderPosition.assign(orderPosition.begin() + prefix,
                             orderPosition.end());
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
  orderPosition.resize(prefix);
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
    int64_t position;
    double ready;
    TaskRank rank;
    int group;
    bool operator>(const Entry &o) const {
      if (position != o.position)
        return position > o.position;
      return ready != o.ready ? ready > o.ready : rank > o.rank;
    }
  };
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
  auto push = [&](int id) {
    Group &g = groups[id];
    g.readyAt = readyScratch.size();
    // Its place: never before a group it waits for (taken already).
    int64_t position = programPosition(id);
    for (int p : g.predGroups)
      position = std::max(position, groupPosition[p]);
    heap.push({position, readyTimeOf(g, &readyScratch), g.rank, id});
  };
  for (int g : suffix)
    if (remaining[g] == 0)
      push(g);
  // Groups are taken in order of (place, ready time, key): places never
  // decrease along the order, since a group's place is at least its
  // predecessors'. Each task starts when it is ready and its resources are
  // free, and holds them until it ends.
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
      log.groupTimes.push_back({id, groupReady[id], groupPosition[id]});
    groupReady[id] = top.ready;
    groupPosition[id] = top.position;
    order.push_back(id);
    orderPosition.push_back(top.position);
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

} // namespace soap

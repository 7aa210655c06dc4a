//===- SimSchedule.cpp - list scheduling of the task graph ---------------===//
//
// Takes the task groups in order of ready time onto devices and links,
// resuming from a checkpoint after the prefix a delta simulation kept.
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

} // namespace soap

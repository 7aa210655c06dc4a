//===- SimDelta.cpp - full and delta simulation, undo --------------------===//
//
// The entry points: a whole strategy, a change of some ops' configs
// (rebuilding only their tasks and rescheduling from the first group
// they touch), and putting the last change back.
//
//===----------------------------------------------------------------------===//

#include "soap/sim/Simulator.h"

#include "SimulatorTasks.h"

#include <algorithm>
#include <limits>
#include <set>
#include <vector>

namespace soap {
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
  orderPosition.clear();
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
    const std::vector<std::pair<int, ParallelConfig>> &proposed) {
  // A relayout copy costs what its readers' layouts make it (copyIsMade): a
  // change of a reader rebuilds the copy too, in its config.
  std::vector<std::pair<int, ParallelConfig>> changes = proposed;
  auto changed = [&](int node) {
    return std::any_of(changes.begin(), changes.end(),
                       [&](const auto &c) { return c.first == node; });
  };
  for (const auto &[node, config] : proposed)
    for (int p : producersOf[node])
      if (graph.nodes[p].relayoutCopy && !changed(p))
        changes.emplace_back(p, current.configs[p]);
  // A view of whole operands runs whole (viewOfWholeOperands): a change
  // that makes an op replicated or not, or a view's own change, rebuilds
  // the views that read it, and theirs (their readers' edges).
  std::vector<int> work;
  for (const auto &[node, config] : proposed)
    if (isView(graph.nodes[node]) ||
        Strategy::isReplicated(config) !=
            Strategy::isReplicated(current.configs[node]))
      work.push_back(node);
  while (!work.empty()) {
    int node = work.back();
    work.pop_back();
    for (int c : consumersOf[node])
      if (isView(graph.nodes[c]) && !changed(c)) {
        changes.emplace_back(c, current.configs[c]);
        work.push_back(c);
      }
  }
  // A pad whose config the partitioner cannot follow pads what its
  // producer's tasks hold (padPassThroughConfig): a change of the producer
  // rebuilds the pad.
  for (size_t i = 0; i < changes.size(); ++i)
    for (int c : consumersOf[changes[i].first])
      if (graph.nodes[c].opName == "tensor.pad" && !changed(c))
        changes.emplace_back(c, current.configs[c]);
  // A view whose readers are all replicated takes its adjoint whole where
  // each of its producer's tasks runs, after the readers' backward work
  // there (wholeAdjointReaders): a reader rebuilt rebuilds the view, and
  // that view, a replicated reader of another, that one.
  for (size_t i = 0; i < changes.size(); ++i)
    for (int p : producersOf[changes[i].first])
      if (isView(graph.nodes[p]) && !changed(p))
        changes.emplace_back(p, current.configs[p]);
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
    params.insert(parametersReadBy[node].begin(), parametersReadBy[node].end());
  }
  // A lazy transpose's producer takes its gradient from the transpose's
  // reader, as the producer of an init does from the reader of the result
  // accumulated into it: a change of that reader rebuilds the producer's
  // edges.
  for (int node : nodes)
    for (int t : producersOf[node]) {
      if (lazyGradients[t].reader != node && adjointReaders[t].first != node)
        continue;
      for (int p : producersOf[t]) {
        edgeIds.insert(consumerEdges[p].begin(), consumerEdges[p].end());
        if (!nodes.count(p))
          relinkBackward.insert(p);
        for (int c : consumersOf[p])
          if (!nodes.count(c))
            relinkForward.insert(c);
      }
    }
  // Reads of a consumer whose gradient is its adjoint itself share what
  // its reshards made (PlanCache::gradientCopies): one of the consumer's
  // incoming edges rebuilt rebuilds them all, and with them their
  // producers' outgoing edges (whose forward copies they clear).
  for (bool grew = true; grew;) {
    grew = false;
    std::vector<int> rebuilt(edgeIds.begin(), edgeIds.end());
    for (int e : rebuilt) {
      int c = edgeEnds[e].second;
      if (!sharesAdjointCopies(c))
        continue;
      for (int p : producersOf[c]) {
        for (int id : consumerEdges[p])
          grew |= edgeIds.insert(id).second;
        if (!nodes.count(p))
          relinkBackward.insert(p);
        for (int r : consumersOf[p])
          if (!nodes.count(r))
            relinkForward.insert(r);
      }
    }
  }
  // Nothing taken before the earliest place of a touched group can differ
  // (groups are taken in program order: SimSchedule.cpp).
  int64_t resume = std::numeric_limits<int64_t>::max();
  auto touch = [&](int g) {
    if (g >= 0)
      resume = std::min(resume, groupPosition[g]);
  };
  for (int node : nodes) {
    touch(nodeTasks[node].fwdGroup);
    touch(nodeTasks[node].syncGroup);
    touch(nodeTasks[node].bwdGroup);
    for (int g : nodeTasks[node].returnGroups)
      touch(g);
  }
  for (int t : params)
    for (int g : parameterTasks[t].groups)
      touch(g);
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
  log.parameters.clear();
  log.preds.clear();
  log.removed.clear();
  log.removedGroups.clear();
  log.relinkedGroups.clear();
  log.addedGroups.clear();
  for (int node : nodes)
    log.nodes.push_back(
        {node, current.configs[node], nullptr, std::move(nodeTasks[node])});
  // Node tasks are moved: removeNode() below needs only their group ids,
  // which a move leaves in place. Edges are copied: their groups are a
  // list, which a move would empty before removeEdge() takes them out.
  for (int e : edgeIds)
    log.edges.emplace_back(e, edges[e]);
  for (int t : params)
    log.parameters.emplace_back(t, parameterTasks[t]);
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
  // Readers of a parameter whose tasks waited for its steps, or will wait
  // for them, are relinked.
  std::set<int> relinkReaders;
  auto readersWaiting = [&](int t) {
    const ParameterTasks &sync = parameterTasks[t];
    if (!sync.forwardDeps.empty() || !sync.backwardDeps.empty())
      for (auto [reader, access] : parameterReaders[t])
        if (!nodes.count(reader))
          relinkReaders.insert(reader);
  };
  for (int t : params) {
    readersWaiting(t);
    for (int g : parameterTasks[t].groups)
      removeGroup(g, removed);
    parameterTasks[t] = ParameterTasks();
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
  for (int t : params) {
    buildParameter(t);
    readersWaiting(t);
  }
  for (int c : relinkReaders) {
    auto relink = [&](std::set<int> &relinked, const std::vector<int> &ids,
                      int group) {
      if (!relinked.insert(c).second)
        return; // logged with the change's own
      for (int id : ids)
        log.preds.emplace_back(id, tasks[id].preds);
      if (group >= 0) {
        touch(group);
        log.relinkedGroups.push_back(group);
      }
    };
    relink(relinkForward, nodeTasks[c].fwd, nodeTasks[c].fwdGroup);
    relink(relinkBackward, nodeTasks[c].bwd, nodeTasks[c].bwdGroup);
  }
  for (int e : edgeIds) {
    plans->copies[edgeEnds[e].first].clear();
    plans->gradientCopies[edgeEnds[e].second].clear();
  }
  for (int e : edgeIds)
    buildEdge(e);
  log.addedGroups.assign(changedGroups.begin() + firstNew, changedGroups.end());
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

  // A changed group's place is at least what it is alone and its unchanged
  // predecessors' places in the old schedule (exactly that for a changed
  // group whose predecessors are all unchanged, and every group a change
  // reaches is at least as late as one of those); nothing taken before the
  // earliest (or the earliest old place of a touched group) differs.
  for (int id : changedGroups) {
    int64_t atLeast = programPosition(id);
    for (int p : groups[id].predGroups)
      if (!changedGroup[p])
        atLeast = std::max(atLeast, groupPosition[p]);
    resume = std::min(resume, atLeast);
  }
  size_t prefix =
      std::lower_bound(orderPosition.begin(), orderPosition.end(), resume) -
      orderPosition.begin();
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
  groupPosition.resize(log.groupCount);
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
  for (auto &[t, sync] : log.parameters)
    parameterTasks[t] = std::move(sync);
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
  orderPosition.resize(log.prefix);
  orderPosition.insert(orderPosition.end(), log.orderPosition.begin(),
                       log.orderPosition.end());
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
  for (const UndoLog::GroupTime &time : log.groupTimes)
    if (time.group < static_cast<int>(log.groupCount)) {
      groupReady[time.group] = time.ready;
      groupPosition[time.group] = time.position;
    }
  return true;
}

} // namespace soap

//===- PlanTasks.cpp - reshard plans as the simulator's tasks ------------===//
//
// The layouts of an op's tasks' blocks of an access (slot by slot), the
// plans lib/layout makes between them (remembered), the collective and
// point-to-point tasks of a plan's steps, and the communication a
// simulation priced, step by step, for the checker.
//
//===----------------------------------------------------------------------===//

#include "SimulatorTasks.h"

#include <functional>
#include <optional>
#include <tuple>

namespace soap {
const Simulator::SlotLayouts &
Simulator::slotLayouts(const Placement &p, size_t access, SlotKind kind) const {
  std::vector<std::unique_ptr<SlotLayouts>> &cache =
      p.layouts[static_cast<int>(kind)];
  if (cache.size() <= access)
    cache.resize(access + 1);
  if (!cache[access])
    cache[access] =
        std::make_unique<SlotLayouts>(buildSlotLayouts(p, access, kind));
  return *cache[access];
}

std::optional<Simulator::SlotLayouts>
Simulator::joinedOnHolders(const Placement &p, size_t access,
                           const SlotLayouts &pieces) const {
  const GraphTensor &tensor =
      graph.tensors[graph.nodes[p.node].accesses[access].tensor];
  layout::Block whole = layout::Block::whole(tensor.shape);
  int numDevices = machine.numDevices();
  SlotLayouts joined;
  joined.pieces.emplace_back();
  joined.pieces[0].blocks.resize(numDevices);
  joined.task.emplace_back(numDevices, -1);
  for (int d = 0; d < numDevices; ++d) {
    int64_t volume = 0;
    bool holds = false;
    for (size_t k = 0; k < pieces.pieces.size(); ++k) {
      joined.task[0][d] = std::max(joined.task[0][d], pieces.task[k][d]);
      if (const std::optional<layout::Block> &block =
              pieces.pieces[k].blocks[d]) {
        volume += block->volume();
        holds = true;
      }
    }
    // Disjoint blocks (no two tasks share an element) that add up to the
    // tensor tile it.
    if (!holds)
      continue;
    if (volume != whole.volume())
      return std::nullopt;
    joined.pieces[0].blocks[d] = whole;
  }
  return joined;
}

bool Simulator::hasReaders(int node, size_t access) const {
  int tensor = graph.nodes[node].accesses[access].tensor;
  for (int c : consumersOf[node])
    for (const NodeAccess &a : graph.nodes[c].accesses)
      if (a.tensor == tensor && a.readsValue())
        return true;
  return false;
}

Simulator::SlotLayouts Simulator::wholeOnDevices(const Placement &p,
                                                 size_t access) const {
  int numDevices = machine.numDevices();
  SlotLayouts result;
  result.pieces.emplace_back();
  result.pieces[0].blocks.resize(numDevices);
  result.task.emplace_back(numDevices, -1);
  layout::Block whole = layout::Block::whole(
      graph.tensors[graph.nodes[p.node].accesses[access].tensor].shape);
  for (size_t t = 0; t < p.devices.size(); ++t) {
    result.pieces[0].blocks[p.devices[t]] = whole;
    result.task[0][p.devices[t]] = static_cast<int>(t);
  }
  return result;
}

Simulator::SlotLayouts Simulator::buildSlotLayouts(const Placement &p,
                                                   size_t access,
                                                   SlotKind kind) const {
  if (kind == SlotKind::Gradients && p.wholeScatter)
    return wholeOnDevices(p, access);
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
    result.task[slot][device] = static_cast<int>(t);
    if (isEmpty(box))
      continue; // the task reads none of it
    layout::Block block;
    block.offsets.reserve(box.rank);
    block.sizes.reserve(box.rank);
    for (size_t d = 0; d < box.rank; ++d) {
      block.offsets.push_back(box.first[d].first);
      block.sizes.push_back(box.first[d].second - box.first[d].first + 1);
    }
    result.pieces[slot].blocks[device] = std::move(block);
  }
  // Complete values that the op makes, grouped as the partitioner groups
  // an op's pieces (layout::canonicalPieces), whatever the order of the
  // tasks (a gradient op's follows its own loops); not what tasks read.
  auto regrouped = [&](SlotLayouts slots) {
    if (kind == SlotKind::Blocks || slots.pieces.size() < 2)
      return slots;
    layout::Regrouping canonical = layout::canonicalPieces(slots.pieces);
    SlotLayouts grouped;
    grouped.pieces = std::move(canonical.pieces);
    for (const std::vector<int> &from : canonical.from) {
      grouped.task.emplace_back(numDevices, -1);
      for (int d = 0; d < numDevices; ++d)
        if (from[d] >= 0)
          grouped.task.back()[d] = slots.task[from[d]][d];
    }
    return grouped;
  };
  // A replicated op's tasks compute the same gradient (copies, not partial
  // sums).
  if (kind == SlotKind::Blocks || p.replicated ||
      (kind == SlotKind::Produced && !p.partialOutputs))
    return regrouped(std::move(result));
  // Gradients of elements read by several tasks add up, as do the outputs
  // of a split reduction's tasks.
  bool shared = false;
  for (size_t t = 0; t < p.devices.size() && !shared; ++t)
    for (size_t u = t + 1; u < p.devices.size() && !shared; ++u)
      shared = overlapVolume(p.box(t, access), p.box(u, access)) > 0;
  if (!shared) {
    // Several tasks on a device whose gradients of a broadcast read tile the
    // whole tensor there: the training step's expand_shape of the lower
    // rank gradient runs where they are (SpmdPartitioner::runOnHolders),
    // one whole block per such device, made by that device's last task
    // (its tasks run in order).
    if (kind == SlotKind::Gradients && p.expandedGradient[access] &&
        result.pieces.size() > 1)
      if (std::optional<SlotLayouts> joined =
              joinedOnHolders(p, access, result))
        return std::move(*joined);
    return regrouped(std::move(result));
  }
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
  // Collectives as training steps run them where the profile timed some
  // (CostModel::collectiveTime).
  t.duration = cost.collectiveTime(kind, bytes, group);
  for (LinkId link : machine.collectiveLinks(group))
    t.resources.push_back(numDevices + link);
  occupyDevices(t, group.data(), group.data() + group.size());
  t.preds.append(preds.begin(), preds.end());
  return id;
}

const layout::ReshardPlan &Simulator::planFor(
    const layout::TensorShape &shape, const std::vector<layout::Layout> &pieces,
    const layout::Layout &target, bool zerosElsewhere, size_t firstCopy) {
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
  firstCopy = std::min(firstCopy, pieces.size());
  add(static_cast<int64_t>(firstCopy));
  auto it = plans->plans.find(key);
  if (it != plans->plans.end())
    return it->second;
  if (plans->plans.size() > 100000)
    plans->plans.clear();
  return plans->plans
      .emplace(key, layout::planReshardBesideCopies(shape, pieces, firstCopy,
                                                    target, zerosElsewhere))
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
  if (plan.piece >= 0)
    for (int d = 0; d < numDevices; ++d)
      ready[d] = sourceOf(plan.piece, d);
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
              for (int id : sourceOf(piece, d))
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
    } else if (step.kind == layout::StepKind::LocalSum) {
      // Each device adds up its own partials: nothing moves.
      for (int d = 0; d < numDevices; ++d)
        if (step.result.blocks[d]) {
          ready[d].clear();
          for (int piece : step.pieces)
            for (int id : sourceOf(piece, d))
              ready[d].push_back(id);
        }
    } else if (step.kind == layout::StepKind::SendRecv ||
               step.kind == layout::StepKind::HaloExchange ||
               step.kind == layout::StepKind::SendRecvCombine) {
      std::vector<std::vector<int>> received(numDevices);
      for (size_t i = 0; i < step.transfers.size(); ++i) {
        const layout::Transfer &t = step.transfers[i];
        std::vector<int> source =
            t.piece >= 0 ? sourceOf(t.piece, t.from) : ready[t.from];
        if (t.from == t.to) {
          received[t.to].insert(received[t.to].end(), source.begin(),
                                source.end());
          continue;
        }
        key[4] = t.from;
        key[5] = t.to;
        int id = addTransfer(transferKind, key, t.block.volume() * elementBytes,
                             t.from, t.to, source);
        ids.push_back(id);
        received[t.to].push_back(id);
      }
      for (int d = 0; d < numDevices; ++d)
        if (step.result.blocks[d])
          ready[d] = std::move(received[d]);
    }
    for (int id : ids)
      tasks[id].intermediate = s + 1 < plan.steps.size();
    if (!ids.empty())
      groups.push_back(std::move(ids));
  }
  return ready;
}

std::vector<std::vector<std::vector<int>>>
Simulator::addCompletionTasks(const layout::SharedCompletion &completion,
                              const layout::TensorShape &shape, TaskKey base,
                              const SourceTask &sourceOf,
                              std::vector<std::vector<int>> &groups) {
  base[0] += 8 * static_cast<int32_t>(1 + groups.size());
  std::vector<std::vector<int>> complete;
  std::vector<int> ids;
  for (size_t g = 0; g < completion.groups.size(); ++g) {
    const layout::SharedCompletion::Group &group = completion.groups[g];
    std::vector<int> preds;
    for (auto [piece, device] : group.partials)
      for (int id : sourceOf(piece, device))
        preds.push_back(id);
    if (!group.devices.empty()) {
      base[4] = static_cast<int32_t>(g);
      int id = addCollective(CollectiveKind::AllReduce, base,
                             shape.bytes(group.block), group.devices, preds);
      ids.push_back(id);
      preds = {id};
    }
    complete.push_back(std::move(preds));
  }
  if (!ids.empty())
    groups.push_back(std::move(ids));
  std::vector<std::vector<std::vector<int>>> madeBy;
  for (const std::vector<int> &groupOf : completion.groupOf) {
    madeBy.emplace_back(groupOf.size());
    for (size_t d = 0; d < groupOf.size(); ++d)
      if (groupOf[d] >= 0)
        madeBy.back()[d] = complete[groupOf[d]];
  }
  return madeBy;
}

/// What the communication task with key `key` moves (CommStep::what).
static std::string describeTask(const OpGraph &graph, const TaskKey &key) {
  auto op = [&](int node) {
    if (node < 0 || node >= static_cast<int>(graph.nodes.size()))
      return std::string("?");
    const OpNode &n = graph.nodes[node];
    return n.location.empty() ? n.opName : n.opName + " (" + n.location + ")";
  };
  auto tensor = [&](int id) {
    if (id < 0 || id >= static_cast<int>(graph.tensors.size()))
      return std::string("?");
    const GraphTensor &t = graph.tensors[id];
    return t.name.empty() ? "tensor " + std::to_string(id) : "'" + t.name + "'";
  };
  switch (key[0] % 8) {
  case 2:
    return "forward edge " + op(key[2]) + " -> " + op(key[1]);
  case 3:
    return "gradient edge " + op(key[2]) + " -> " + op(key[1]);
  case 4:
    if (key[2] == 1)
      return "parameter " + tensor(key[1]) + " to its readers";
    if (key[2] == 2)
      return "parameter " + tensor(key[1]) + " returned whole";
    return "gradient of parameter " + tensor(key[1]);
  case 6:
    return "split reduction of " + op(key[1]);
  case 7:
    return "result of " + op(key[1]);
  default:
    return op(key[1]);
  }
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
        steps.push_back(
            {"send", {t.src, t.dst}, t.bytes, describeTask(graph, t.key)});
        break;
      case TaskKind::AllReduce:
        if (t.groupSize > 1) {
          steps.push_back({"all_reduce",
                           std::vector<int>(t.members.begin(), t.members.end()),
                           t.bytes, describeTask(graph, t.key)});
        }
        break;
      case TaskKind::Collective:
        steps.push_back({collectiveName(t.collective),
                         std::vector<int>(t.members.begin(), t.members.end()),
                         t.bytes, describeTask(graph, t.key)});
        break;
      default:
        break;
      }
    }
  }
  std::sort(steps.begin(), steps.end(),
            [](const CommStep &a, const CommStep &b) {
              return std::tie(a.kind, a.group, a.bytes, a.what) <
                     std::tie(b.kind, b.group, b.bytes, b.what);
            });
  return steps;
}

} // namespace soap

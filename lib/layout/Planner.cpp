//===- Planner.cpp - the steps of one reshard -----------------------------===//
//
// Planner (Planner.h): recognizes regular layouts (equal parts along a
// dimension, partial sums over groups) and plans the collectives, sends and
// local steps that take a tensor from the pieces it is held in to one
// target layout.
//
//===----------------------------------------------------------------------===//

#include "Planner.h"

#include "RegularLayouts.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <numeric>

namespace soap::layout::detail {

void Planner::combine(Layout &current) {
  // Whole partial blocks on the target's devices, one distinct partial
  // each, re-split along one dimension: reduce_scatter.
  auto groups = partialGroups(current);
  std::vector<int> holders = current.holders();
  std::vector<int> readers = target.holders();
  if (groups && groups->size() == 1 && holders == readers &&
      holders.size() > 1) {
    const Block &held = *current.blocks[holders.front()];
    Layout only;
    only.blocks.resize(target.numDevices());
    for (int d : readers)
      only.blocks[d] = target.blocks[d];
    int rank = static_cast<int>(held.sizes.size());
    auto reduceScatter = [&](const Layout &into) {
      for (int dim = 0; dim < rank; ++dim) {
        auto parts = partsAlong(into, dim);
        if (!parts || parts->size() != 1 ||
            gathered(into, dim, *parts).blocks[readers.front()] != held)
          continue;
        Step step;
        step.kind = StepKind::ReduceScatter;
        step.groups = *parts;
        step.dim = dim;
        step.combine = *current.partial;
        step.bytes = tensor.bytes(held);
        step.result = into;
        current = into;
        push(std::move(step));
        return true;
      }
      return false;
    };
    if (reduceScatter(only))
      return;
    // Readers of one part of the partials (a slice of a gradient): the
    // reduce_scatter of the whole along the dimension they split, then a
    // local slice (the readers of the other parts slice the same copy).
    Layout extended = widened(only, held);
    if (extended.blocks != only.blocks && reduceScatter(extended))
      return;
  }
  if (groups) {
    Step step;
    step.kind = StepKind::AllReduce;
    step.combine = *current.partial;
    for (std::vector<int> &group : *groups)
      if (group.size() > 1)
        step.groups.push_back(std::move(group));
    step.bytes = tensor.bytes(*current.blocks[holders.front()]);
    current.partial.reset();
    current.tasks.clear();
    step.result = current;
    if (!step.groups.empty())
      push(std::move(step));
    return;
  }
  if (trySendRecvCombine(current))
    return;
  allReduceWhole();
  current = plan.steps.back().result;
}

bool Planner::trySendRecvCombine(Layout &current) {
  std::vector<int> readers = target.holders();
  if (!current.partial || target.partial || readers.empty())
    return false;
  // The devices of each distinct partial, which must hold one block.
  std::map<int64_t, std::vector<int>> holdersOf;
  for (int d : current.holders())
    holdersOf[current.tasks[d]].push_back(d);
  for (const auto &[id, devices] : holdersOf)
    for (int d : devices)
      if (!(*current.blocks[d] == *current.blocks[devices.front()]))
        return false;
  Step step;
  step.kind = StepKind::SendRecvCombine;
  step.combine = *current.partial;
  std::vector<int64_t> sent(target.numDevices(), 0);
  for (int u : readers) {
    const Block &want = *target.blocks[u];
    for (const auto &[id, devices] : holdersOf) {
      std::optional<Block> part = want.intersect(*current.blocks[devices[0]]);
      if (!part)
        continue;
      // Its own copy, else the holder that has sent least so far.
      int from = devices.front();
      if (std::find(devices.begin(), devices.end(), u) != devices.end()) {
        from = u;
      } else {
        for (int d : devices)
          if (sent[d] < sent[from])
            from = d;
        sent[from] += part->volume();
        step.bytes += tensor.bytes(*part);
      }
      step.transfers.push_back({from, u, -1, *part});
    }
  }
  if (step.bytes > tensor.bytes())
    return false; // the whole tensor's all-reduce moves no more
  step.result = target;
  current = target;
  push(std::move(step));
  return true;
}

bool Planner::tryAllToAll(const Layout &current) {
  std::vector<int> holders = current.holders();
  if (holders != target.holders() || holders.size() < 2)
    return false;
  int rank = static_cast<int>(tensor.shape.size());
  for (int from = 0; from < rank; ++from) {
    auto held = partsAlong(current, from);
    if (!held || held->size() != 1)
      continue;
    for (int to = 0; to < rank; ++to) {
      if (to == from)
        continue;
      auto wanted = partsAlong(target, to);
      if (!wanted || *wanted != *held)
        continue;
      // Each member ends with its part along `to` of the gathered range
      // along `from`.
      Layout result = gathered(current, from, *held);
      const std::vector<int> &group = held->front();
      const Block &whole = *result.blocks[group.front()];
      int64_t part = whole.sizes[to] / static_cast<int64_t>(group.size());
      if (part * static_cast<int64_t>(group.size()) != whole.sizes[to])
        continue;
      for (size_t i = 0; i < group.size(); ++i) {
        Block &b = *result.blocks[group[i]];
        b.offsets[to] = whole.offsets[to] + static_cast<int64_t>(i) * part;
        b.sizes[to] = part;
      }
      if (!covers(result, target))
        continue;
      Step step;
      step.kind = StepKind::AllToAll;
      step.groups = *held;
      step.dim = to;
      step.fromDim = from;
      step.bytes = tensor.bytes(*current.blocks[group.front()]);
      step.result = result;
      push(std::move(step));
      return true;
    }
  }
  return false;
}

bool Planner::tryAllGather(Layout &current) {
  std::vector<int> readers = needing(current, target);
  int rank = static_cast<int>(tensor.shape.size());
  for (int dim = 0; dim < rank; ++dim) {
    auto groups = partsAlong(current, dim);
    if (!groups)
      continue;
    // Worth it only when every member reads all of its group's range along
    // `dim` (else only the missing parts move, point to point).
    bool everyoneReads = true;
    for (const std::vector<int> &group : *groups) {
      const Block &first = *current.blocks[group.front()];
      int64_t lo = first.offsets[dim];
      int64_t hi = lo + first.sizes[dim] * static_cast<int64_t>(group.size());
      for (int d : group) {
        const std::optional<Block> &want = target.blocks[d];
        everyoneReads &= want.has_value() && want->offsets[dim] <= lo &&
                         want->offsets[dim] + want->sizes[dim] >= hi;
      }
    }
    if (!everyoneReads || readers.empty())
      continue;
    Step step;
    step.kind = StepKind::AllGather;
    step.dim = dim;
    step.groups = *groups;
    step.result = gathered(current, dim, *groups);
    step.bytes = tensor.bytes(*step.result.blocks[groups->front().front()]);
    current = step.result;
    push(std::move(step));
    return true;
  }
  return false;
}

bool Planner::tryBroadcast(Layout &current) {
  // One device holds a block that contains every block the others need,
  // and at least two read it: a broadcast of that block.
  std::vector<int> readers = needing(current, target);
  if (readers.size() < 2)
    return false;
  std::vector<int> holders = current.holders();
  for (int root : holders) {
    const Block &block = *current.blocks[root];
    bool fits = true;
    for (int d : readers)
      fits &= block.contains(*target.blocks[d]) &&
              target.blocks[d]->volume() == block.volume();
    if (!fits)
      continue;
    // Copies of the block elsewhere send in parallel instead.
    int copies = 0;
    for (int d : holders)
      copies += *current.blocks[d] == block;
    if (copies >= static_cast<int>(readers.size()))
      return false;
    Step step;
    step.kind = StepKind::Broadcast;
    step.root = root;
    std::vector<int> group = readers;
    group.push_back(root);
    std::sort(group.begin(), group.end());
    group.erase(std::unique(group.begin(), group.end()), group.end());
    step.groups = {group};
    step.bytes = tensor.bytes(block);
    for (int d : group)
      current.blocks[d] = block;
    step.result = current;
    push(std::move(step));
    return true;
  }
  return false;
}

bool Planner::trySendRecv(const Layout &current,
                          const std::vector<int> &sourcePieces) {
  bool fromPieces = !sourcePieces.empty();
  std::vector<const Layout *> sources;
  for (int p : sourcePieces)
    sources.push_back(&pieces[p]);
  if (!fromPieces)
    sources.push_back(&current);
  // The distinct blocks held, each with its holders (piece, device); they
  // must not overlap unless equal, so that a part comes from one of them.
  struct Source {
    Block block;
    std::vector<std::pair<int, int>> holders;
  };
  std::vector<Source> distinct;
  for (size_t i = 0; i < sources.size(); ++i) {
    if (sources[i]->partial)
      continue;
    int p = fromPieces ? sourcePieces[i] : -1;
    for (int d : sources[i]->holders()) {
      const Block &b = *sources[i]->blocks[d];
      auto it = std::find_if(distinct.begin(), distinct.end(),
                             [&](const Source &s) { return s.block == b; });
      if (it == distinct.end()) {
        distinct.push_back({b, {}});
        it = distinct.end() - 1;
      }
      it->holders.emplace_back(p, d);
    }
  }
  for (size_t i = 0; i < distinct.size(); ++i)
    for (size_t j = i + 1; j < distinct.size(); ++j)
      if (distinct[i].block.overlaps(distinct[j].block))
        return false;

  Step step;
  step.kind = StepKind::HaloExchange;
  std::vector<int64_t> sent(target.numDevices(), 0);
  for (int u : target.holders()) {
    const Block &want = *target.blocks[u];
    int64_t found = 0;
    bool keepsOwn = false, receives = false;
    for (const Source &source : distinct) {
      std::optional<Block> part = want.intersect(source.block);
      if (!part)
        continue;
      found += part->volume();
      auto local = std::find_if(source.holders.begin(), source.holders.end(),
                                [&](auto &h) { return h.second == u; });
      std::pair<int, int> from;
      if (local != source.holders.end()) {
        keepsOwn |= want.contains(source.block);
        from = *local;
      } else {
        // The holder that has sent least so far, then the nearest.
        auto key = [&](const std::pair<int, int> &h) {
          return std::make_pair(sent[h.second], std::abs(h.second - u));
        };
        from = source.holders.front();
        for (const auto &h : source.holders)
          if (key(h) < key(from))
            from = h;
        sent[from.second] += part->volume();
        step.bytes += tensor.bytes(*part);
        receives = true;
      }
      step.transfers.push_back({from.second, u, from.first, *part});
    }
    if (found != want.volume() && !zerosElsewhere)
      return false;
    if (receives && !keepsOwn)
      step.kind = StepKind::SendRecv;
  }
  step.result = target;
  if (fromPieces)
    plan.piece = -1;
  push(std::move(step));
  return true;
}

bool Planner::tryLocalParts() {
  if (pieces.size() < 2)
    return false;
  Step step;
  step.kind = StepKind::HaloExchange;
  for (int u : target.holders()) {
    const Block &want = *target.blocks[u];
    auto holds = [&](const Layout &piece) {
      return !piece.partial && piece.blocks[u] &&
             piece.blocks[u]->contains(want);
    };
    auto it = std::find_if(pieces.begin(), pieces.end(), holds);
    if (it == pieces.end())
      return false;
    step.transfers.push_back(
        {u, u, static_cast<int>(it - pieces.begin()), want});
  }
  step.result = target;
  plan.piece = -1;
  push(std::move(step));
  return true;
}

void Planner::allReduceWhole() {
  Step step;
  step.kind = StepKind::AllReduceWhole;
  bool anyPartial = false;
  for (const Layout &piece : pieces)
    anyPartial |= piece.partial.has_value();
  for (size_t p = 0; p < pieces.size(); ++p)
    if (!anyPartial || pieces[p].partial) {
      step.pieces.push_back(static_cast<int>(p));
      if (pieces[p].partial)
        step.combine = *pieces[p].partial;
    }
  std::vector<int> all(target.numDevices());
  std::iota(all.begin(), all.end(), 0);
  step.groups = {all};
  step.bytes = tensor.bytes();
  step.result = Layout::whole(tensor.shape, target.numDevices(), all);
  plan.piece = -1;
  push(std::move(step));
}

std::optional<Step> Planner::localSums() const {
  int numDevices = target.numDevices();
  Step step;
  step.kind = StepKind::LocalSum;
  Layout &sum = step.result;
  sum.blocks.resize(numDevices);
  std::vector<std::vector<int64_t>> held(numDevices);
  for (size_t p = 0; p < pieces.size(); ++p) {
    const Layout &piece = pieces[p];
    if (!piece.partial)
      continue;
    if (sum.partial && *sum.partial != *piece.partial)
      return std::nullopt;
    sum.partial = piece.partial;
    step.combine = *piece.partial;
    step.pieces.push_back(static_cast<int>(p));
    for (int d = 0; d < numDevices; ++d) {
      if (!piece.blocks[d])
        continue;
      if (sum.blocks[d] && *sum.blocks[d] != *piece.blocks[d])
        return std::nullopt;
      sum.blocks[d] = piece.blocks[d];
      held[d].push_back(piece.tasks[d]);
    }
  }
  std::vector<int> holders = sum.holders();
  if (holders.empty() ||
      std::any_of(holders.begin(), holders.end(), [&](int d) {
        return sum.blocks[d]->sizes != sum.blocks[holders[0]]->sizes;
      }))
    return std::nullopt;
  sum.tasks.assign(numDevices, -1);
  bool shared = false;
  for (int d : holders) {
    std::sort(held[d].begin(), held[d].end());
    sum.tasks[d] = d;
    for (int e : holders) {
      if (e >= d)
        break;
      if (held[e] == held[d]) {
        sum.tasks[d] = sum.tasks[e];
        break;
      }
      std::vector<int64_t> common;
      std::set_intersection(held[e].begin(), held[e].end(), held[d].begin(),
                            held[d].end(), std::back_inserter(common));
      if (!common.empty())
        return std::nullopt;
    }
    for (int e : holders)
      shared |= e != d && *sum.blocks[e] == *sum.blocks[d];
  }
  // No other device holds a part of the same block: the sums are complete.
  if (!shared) {
    sum.partial.reset();
    sum.tasks.clear();
  }
  return step;
}

ReshardPlan Planner::run() {
  for (size_t p = 0; p < pieces.size(); ++p)
    if (covers(pieces[p], target)) {
      plan.piece = static_cast<int>(p);
      return plan;
    }
  auto slice = [&]() {
    Step step;
    step.kind = StepKind::Slice;
    step.result = target;
    push(std::move(step));
  };
  for (size_t p = 0; p < pieces.size(); ++p)
    if (contains(pieces[p], target)) {
      plan.piece = static_cast<int>(p);
      slice();
      return plan;
    }
  if (tryLocalParts())
    return plan;
  // Start from the first piece (the producer's); several partial pieces
  // (an op that runs several tasks per device) combine as a whole.
  int partialPieces = 0;
  for (const Layout &piece : pieces)
    partialPieces += piece.partial.has_value();
  plan.piece = 0;
  Layout current = pieces.front();
  if (partialPieces > 1) {
    if (std::optional<Step> sums = localSums()) {
      // Each device adds its own up; then as one partial layout.
      plan.piece = -1;
      current = sums->result;
      push(std::move(*sums));
      if (current.partial)
        combine(current);
    } else {
      allReduceWhole();
      current = plan.steps.back().result;
    }
  } else if (partialPieces == 1) {
    auto it = std::find_if(pieces.begin(), pieces.end(),
                           [](const Layout &l) { return l.partial; });
    plan.piece = static_cast<int>(it - pieces.begin());
    current = *it;
    combine(current);
  }
  if (!plan.steps.empty() && covers(current, target))
    return plan;
  // Collectives, one dimension at a time, while they fit (when the one
  // piece holds all of the tensor).
  if (collectives && holdsEverything(current, tensor)) {
    for (int round = 0; round < 8; ++round) {
      if (covers(current, target))
        return plan;
      if (contains(current, target)) {
        slice();
        return plan;
      }
      if (round == 0 && plan.steps.empty() && tryAllToAll(current))
        return plan;
      if (tryAllGather(current) || tryBroadcast(current))
        continue;
      break;
    }
  }
  // What is still missing moves point to point: from what the steps left,
  // or, when no step ran, from all pieces together (the parts of an op
  // that runs several tasks per device), else from one piece.
  if (!plan.steps.empty()) {
    if (trySendRecv(current, {}))
      return plan;
  } else {
    std::vector<int> all(pieces.size());
    std::iota(all.begin(), all.end(), 0);
    if (trySendRecv(current, all))
      return plan;
    // One piece alone, when the others are copies of parts of it; not for
    // a value that is zero elsewhere, whose pieces hold different parts
    // (the others' parts would be taken for zeros).
    if (!zerosElsewhere)
      for (int p = 0; p < static_cast<int>(pieces.size()); ++p)
        if (trySendRecv(current, {p}))
          return plan;
  }
  plan.steps.clear();
  allReduceWhole();
  if (!covers(plan.steps.back().result, target))
    slice();
  return plan;
}

} // namespace soap::layout::detail

//===- ReshardPlanner.cpp - from a producer's layout to a consumer's ------===//
//
// planReshard (soap/layout/Layout.h): the plan that takes a tensor from the
// layout it is held in to the layout a reader needs. Planner (Planner.h)
// plans the steps to one target; this file chooses among its plans for the
// target itself, for the whole range the readers share (a collective, then
// a local slice), for that range alone (narrowedPlan), and without
// collectives (the missing blocks point to point), by the bytes they move.
//
//===----------------------------------------------------------------------===//

#include "soap/layout/Layout.h"

#include "Planner.h"
#include "RegularLayouts.h"

#include <algorithm>
#include <cstdint>

namespace soap::layout {

using namespace detail;

static bool pointToPoint(const ReshardPlan &plan) {
  return std::any_of(plan.steps.begin(), plan.steps.end(), [](const Step &s) {
    return s.kind == StepKind::SendRecv || s.kind == StepKind::HaloExchange ||
           s.kind == StepKind::SendRecvCombine ||
           s.kind == StepKind::AllReduceWhole;
  });
}

/// Whether the plan falls back to the all-reduce of the whole tensor.
static bool allReducesWhole(const ReshardPlan &plan) {
  return std::any_of(plan.steps.begin(), plan.steps.end(), [](const Step &s) {
    return s.kind == StepKind::AllReduceWhole;
  });
}

int communicatedStep(const ReshardPlan &plan) {
  int lastMoving = -1, lastLocal = -1;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step &step = plan.steps[i];
    if (step.kind == StepKind::Slice)
      continue;
    bool local = (step.kind == StepKind::SendRecv ||
                  step.kind == StepKind::HaloExchange) &&
                 std::all_of(step.transfers.begin(), step.transfers.end(),
                             [](const Transfer &t) { return t.from == t.to; });
    (local ? lastLocal : lastMoving) = static_cast<int>(i);
  }
  return lastMoving >= 0 ? lastMoving : lastLocal;
}

const Layout *communicatedLayout(const ReshardPlan &plan) {
  int step = communicatedStep(plan);
  return step >= 0 ? &plan.steps[step].result : nullptr;
}

/// The elements a plan's steps move between devices, all devices
/// together: a collective over g members moves (g-1)/g of each member's
/// buffer (an all-reduce twice that), a broadcast the root's buffer to
/// each other member, transfers their blocks.
static int64_t movedBytes(const ReshardPlan &plan) {
  int64_t moved = 0;
  for (const Step &step : plan.steps) {
    switch (step.kind) {
    case StepKind::Slice:
    case StepKind::LocalSum:
      break;
    case StepKind::SendRecv:
    case StepKind::HaloExchange:
      moved += step.bytes;
      break;
    case StepKind::AllReduceWhole:
      moved += 2 * step.bytes * (step.result.numDevices() - 1);
      break;
    default:
      for (const std::vector<int> &group : step.groups)
        moved += (step.kind == StepKind::AllReduce ? 2 : 1) * step.bytes *
                 (static_cast<int64_t>(group.size()) - 1);
    }
  }
  return moved;
}

/// Whether the readers of `target`, all together, read every element of
/// `gathered` along each dimension they do not all read alike: a re-split
/// of what was gathered, not a slice of it that other readers of the
/// value would read the rest of (an LSTM's gates).
static bool readAcrossGathered(const Layout &target, const Layout &gathered) {
  std::vector<int> readers = target.holders(), holders = gathered.holders();
  if (readers.empty() || holders.empty())
    return false;
  size_t rank = target.blocks[readers.front()]->sizes.size();
  std::vector<bool> alike = readAlike(target, rank);
  for (size_t dim = 0; dim < rank; ++dim) {
    if (alike[dim])
      continue;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (int d : holders) {
      const Block &b = *gathered.blocks[d];
      lo = std::min(lo, b.offsets[dim]);
      hi = std::max(hi, b.offsets[dim] + b.sizes[dim]);
    }
    std::vector<std::pair<int64_t, int64_t>> ranges;
    for (int d : readers) {
      const Block &b = *target.blocks[d];
      ranges.emplace_back(b.offsets[dim], b.offsets[dim] + b.sizes[dim]);
    }
    std::sort(ranges.begin(), ranges.end());
    int64_t reached = lo;
    for (auto [begin, end] : ranges)
      if (begin <= reached)
        reached = std::max(reached, end);
    if (reached < hi)
      return false;
  }
  return true;
}

/// Planner's plan, or, when its collectives gather blocks that each reader
/// then slices (an all-gather or broadcast, then a local slice) and the
/// readers together read all of what was gathered (readAcrossGathered),
/// the point-to-point transfers of exactly the missing blocks where they
/// move fewer bytes (a batch split re-split along channels on the devices
/// in another order, which no all-to-all fits: gathering the batch moves
/// twice what the transfers do).
static ReshardPlan planned(const TensorShape &tensor,
                           const std::vector<Layout> &pieces,
                           const Layout &target, bool zerosElsewhere) {
  ReshardPlan plan = Planner(tensor, pieces, target, zerosElsewhere).run();
  bool gathers =
      std::any_of(plan.steps.begin(), plan.steps.end(), [](const Step &s) {
        return s.kind == StepKind::AllGather || s.kind == StepKind::Broadcast;
      });
  if (!gathers || plan.steps.back().kind != StepKind::Slice ||
      !readAcrossGathered(target, *communicatedLayout(plan)))
    return plan;
  ReshardPlan transfers =
      Planner(tensor, pieces, target, zerosElsewhere, /*collectives=*/false)
          .run();
  if (!allReducesWhole(transfers) && movedBytes(transfers) < movedBytes(plan))
    return transfers;
  return plan;
}

/// Readers that all read one range along some dimensions (a pad's
/// interior along the image's rows and columns): the plan on that range
/// alone — each device first slices its piece to the range, then the
/// collectives re-split the range — when it needs no point-to-point
/// transfer. None when the readers read no dimension alike in part, a
/// piece is partial, the devices' parts of the range differ in shape, or
/// nothing moves.
static std::optional<ReshardPlan>
narrowedPlan(const TensorShape &tensor, const std::vector<Layout> &pieces,
             const Layout &target, bool zerosElsewhere) {
  size_t rank = tensor.shape.size();
  // The range the readers all take along the dimensions they read alike;
  // whole along the others.
  std::vector<bool> alike = readAlike(target, rank);
  if (std::none_of(alike.begin(), alike.end(), [](bool a) { return a; }))
    return std::nullopt;
  const Block &first = *target.blocks[target.holders().front()];
  Block range = Block::whole(tensor.shape);
  for (size_t dim = 0; dim < rank; ++dim)
    if (alike[dim]) {
      range.offsets[dim] = first.offsets[dim];
      range.sizes[dim] = first.sizes[dim];
    }
  if (range == Block::whole(tensor.shape))
    return std::nullopt;
  auto shifted = [&](std::optional<Block> &block, int64_t sign) {
    if (block)
      for (size_t dim = 0; dim < rank; ++dim)
        block->offsets[dim] += sign * range.offsets[dim];
  };
  // The pieces' parts of the range, in the range's coordinates.
  std::vector<Layout> parts;
  for (const Layout &piece : pieces) {
    if (piece.partial)
      return std::nullopt;
    Layout part;
    for (const std::optional<Block> &block : piece.blocks) {
      std::optional<Block> common =
          block ? block->intersect(range) : std::nullopt;
      shifted(common, -1);
      part.blocks.push_back(std::move(common));
    }
    parts.push_back(std::move(part));
  }
  Layout local = target;
  for (std::optional<Block> &block : local.blocks)
    shifted(block, -1);
  TensorShape sub{range.sizes, tensor.elementBytes};
  ReshardPlan plan = planned(sub, parts, local, zerosElsewhere);
  if (plan.piece < 0 || pointToPoint(plan) ||
      std::all_of(plan.steps.begin(), plan.steps.end(),
                  [](const Step &s) { return s.kind == StepKind::Slice; }))
    return std::nullopt;
  // Collectives only (no transfers): their results back in the tensor's
  // coordinates.
  for (Step &step : plan.steps)
    for (std::optional<Block> &block : step.result.blocks)
      shifted(block, 1);
  // The first step reads the piece's part of the range: a local slice
  // takes it out of the piece unless the piece holds no more than that.
  Layout sliced = parts[plan.piece];
  const Block *shape = nullptr;
  bool slice = false;
  for (size_t d = 0; d < sliced.blocks.size(); ++d) {
    std::optional<Block> &block = sliced.blocks[d];
    shifted(block, 1);
    if (block != pieces[plan.piece].blocks[d])
      slice = true;
    if (!block)
      continue;
    if (shape && shape->sizes != block->sizes)
      return std::nullopt;
    shape = &*block;
  }
  if (slice) {
    Step step;
    step.kind = StepKind::Slice;
    step.result = std::move(sliced);
    plan.steps.insert(plan.steps.begin(), std::move(step));
  }
  return plan;
}

ReshardPlan planReshard(const TensorShape &tensor,
                        const std::vector<Layout> &pieces, const Layout &target,
                        bool zerosElsewhere) {
  // One piece that holds every element leaves no zeros elsewhere.
  if (pieces.size() == 1 && holdsEverything(pieces.front(), tensor))
    zerosElsewhere = false;
  ReshardPlan direct = planned(tensor, pieces, target, zerosElsewhere);
  if (!zerosElsewhere && pointToPoint(direct)) {
    // Readers of a part of a tensor that would need point-to-point
    // transfers: the collective that brings the whole range they share,
    // then a local slice, when one fits (the slices of an LSTM's gates,
    // taken out of a re-split of the whole gate matrix that the other
    // slices then read).
    // Readers that all read one range re-split that range alone instead
    // when that moves no more (narrowedPlan below).
    Layout wide = widened(target, Block::whole(tensor.shape));
    if (wide.blocks != target.blocks) {
      ReshardPlan plan = planned(tensor, pieces, wide, zerosElsewhere);
      if (!plan.steps.empty() && !pointToPoint(plan)) {
        std::optional<ReshardPlan> narrow =
            narrowedPlan(tensor, pieces, target, zerosElsewhere);
        if (narrow && movedBytes(*narrow) <= movedBytes(plan))
          return *narrow;
        Step slice;
        slice.kind = StepKind::Slice;
        slice.result = target;
        plan.steps.push_back(std::move(slice));
        return plan;
      }
    }
  }
  if (!communicatedLayout(direct))
    return direct;
  // Readers that all read one range along some dimensions: re-splitting
  // that range alone when it moves less (a pad's gradient read by a pad
  // split otherwise: the interior moves, not the gathered whole), or as
  // much without point-to-point transfers.
  std::optional<ReshardPlan> narrow =
      narrowedPlan(tensor, pieces, target, zerosElsewhere);
  if (!narrow)
    return direct;
  int64_t narrowBytes = movedBytes(*narrow), directBytes = movedBytes(direct);
  if (narrowBytes < directBytes ||
      (narrowBytes == directBytes && pointToPoint(direct)))
    return *narrow;
  return direct;
}

ReshardPlan planReshardBesideCopies(const TensorShape &tensor,
                                    const std::vector<Layout> &pieces,
                                    size_t firstCopy, const Layout &target,
                                    bool zerosElsewhere) {
  ReshardPlan plan = planReshard(tensor, pieces, target, zerosElsewhere);
  if (firstCopy == 0 || firstCopy >= pieces.size() || !allReducesWhole(plan))
    return plan;
  std::vector<Layout> originals(pieces.begin(), pieces.begin() + firstCopy);
  ReshardPlan alone = planReshard(tensor, originals, target, zerosElsewhere);
  // The originals keep their numbers (they come first). The all-reduce
  // leaves the whole tensor on every device, where the reader's other
  // tasks and later readers take their blocks without moving anything:
  // transfers are taken only when they move at most half of the tensor.
  if (allReducesWhole(alone) || 2 * movedBytes(alone) > tensor.bytes())
    return plan;
  return alone;
}

} // namespace soap::layout

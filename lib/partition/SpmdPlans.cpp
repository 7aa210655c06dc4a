//===- SpmdPlans.cpp - how a linalg op runs: its plan --------------------===//
//
// A plan gives a linalg op's degree per loop and, for each slot, the task
// every device runs: from its #soap.config (checked against what its
// operands allow), or for an op without one from its most split operand's
// layout, or whole everywhere.
//
//===----------------------------------------------------------------------===//

#include "SpmdPartitioner.h"

#include "Reductions.h"

#include "soap/Dialect/PartitionableInterface.h"

using namespace mlir;
using namespace soap;
using namespace soap::partition;

SmallVector<int64_t> soap::partition::coordinatesOf(ArrayRef<int64_t> degrees,
                                                    int64_t task) {
  SmallVector<int64_t> coords(degrees.size());
  for (int64_t l = static_cast<int64_t>(degrees.size()) - 1; l >= 0; --l) {
    coords[l] = task % degrees[l];
    task /= degrees[l];
  }
  return coords;
}

std::optional<Box> soap::partition::accessBox(AffineMap map,
                                              ArrayRef<int64_t> loopSizes,
                                              ArrayRef<int64_t> degrees,
                                              int64_t task,
                                              ArrayRef<int64_t> shape) {
  SmallVector<int64_t> coords = coordinatesOf(degrees, task);
  Box box;
  for (auto [dim, expr] : llvm::enumerate(map.getResults())) {
    IndexExpr linear = toIndexExpr(expr);
    if (!linear.isLinear)
      return std::nullopt;
    int64_t offset = 0, extent = linear.constant + 1;
    for (auto [l, c] : linear.terms) {
      int64_t local = loopSizes[l] / degrees[l];
      int64_t lo = coords[l] * local;
      if (c < 0 && degrees[l] > 1)
        return std::nullopt; // a split loop read backwards
      offset += c * lo;
      if (c > 0)
        extent += c * (local - 1);
    }
    if (offset < 0 || offset + extent > shape[dim])
      return std::nullopt;
    box.offsets.push_back(offset);
    box.sizes.push_back(extent);
  }
  return box;
}

std::optional<Box>
soap::partition::regionOf(AffineMap map, ArrayRef<int64_t> loopSizes,
                          ArrayRef<int64_t> degrees, int64_t task,
                          ArrayRef<int64_t> shape, bool clip) {
  SmallVector<int64_t> coords = coordinatesOf(degrees, task);
  Box box;
  for (auto [dim, expr] : llvm::enumerate(map.getResults())) {
    IndexExpr linear = toIndexExpr(expr);
    if (!linear.isLinear)
      return std::nullopt;
    int64_t lowest = linear.constant, highest = linear.constant;
    for (auto [l, c] : linear.terms) {
      int64_t local = loopSizes[l] / degrees[l];
      int64_t first = coords[l] * local, last = first + local - 1;
      lowest += c * (c >= 0 ? first : last);
      highest += c * (c >= 0 ? last : first);
    }
    if (clip) {
      lowest = std::max<int64_t>(lowest, 0);
      highest = std::min<int64_t>(highest, shape[dim] - 1);
    }
    if (lowest < 0 || highest >= shape[dim] || highest < lowest)
      return std::nullopt;
    box.offsets.push_back(lowest);
    box.sizes.push_back(highest - lowest + 1);
  }
  return box;
}

//===----------------------------------------------------------------------===//
// Plans
//===----------------------------------------------------------------------===//

std::optional<LinalgLoops> SpmdPartitioner::loopNestOf(linalg::LinalgOp op) {
  if (!op.hasPureTensorSemantics())
    return std::nullopt;
  LinalgLoops nest;
  nest.sizes = op.getStaticLoopRanges();
  if (llvm::any_of(nest.sizes, ShapedType::isDynamic))
    return std::nullopt;
  for (Value operand : op->getOperands())
    if (auto type = dyn_cast<RankedTensorType>(operand.getType());
        type && !type.hasStaticShape())
      return std::nullopt;
  nest.iterators = op.getIteratorTypesArray();
  nest.maps = op.getIndexingMapsArray();
  if ((nest.gather = matchGather(op))) {
    nest.sizes.append(nest.gather->lookupSizes);
    nest.iterators.append(nest.gather->lookupSizes.size(),
                          utils::IteratorType::reduction);
  }
  return nest;
}

Plan SpmdPartitioner::replicatedPlan(unsigned numLoops) const {
  return Plan{SmallVector<int64_t>(numLoops, 1),
              {SmallVector<int64_t>(numDevices, 0)}};
}

FailureOr<Plan> soap::partition::planForTasks(ArrayRef<int64_t> degrees,
                                              ArrayRef<int64_t> devices,
                                              int64_t numDevices,
                                              std::string *why) {
  auto refuse = [&](std::string reason) -> FailureOr<Plan> {
    if (why)
      *why = std::move(reason);
    return failure();
  };
  for (int64_t device : devices)
    if (device < 0 || device >= numDevices)
      return refuse("device " + std::to_string(device) + " is not in [0, " +
                    std::to_string(numDevices) + ")");
  int64_t numTasks = 1;
  for (int64_t degree : degrees)
    numTasks *= degree;
  if (static_cast<int64_t>(devices.size()) != numTasks)
    return refuse("it has " + std::to_string(devices.size()) + " devices for " +
                  std::to_string(numTasks) + " tasks");
  Plan plan;
  plan.degrees.assign(degrees.begin(), degrees.end());
  SmallVector<int64_t> used(numDevices, 0);
  for (auto [task, device] : llvm::enumerate(devices)) {
    int64_t slot = used[device]++;
    if (static_cast<int64_t>(plan.slots.size()) <= slot)
      plan.slots.emplace_back(numDevices, -1);
    plan.slots[slot][device] = task;
  }
  return plan;
}

FailureOr<Plan> SpmdPartitioner::planFromConfig(linalg::LinalgOp op,
                                                const LinalgLoops &nest,
                                                ConfigAttr config,
                                                std::string &why) {
  return planFromConfig(nest.sizes, config, why);
}

FailureOr<Plan> SpmdPartitioner::planFromConfig(ArrayRef<int64_t> sizes,
                                                ConfigAttr config,
                                                std::string &why) {
  ArrayRef<int64_t> degrees = config.getDegrees();
  ArrayRef<int64_t> devices = config.getDevices();
  if (degrees.size() != sizes.size()) {
    why = "it has " + std::to_string(sizes.size()) + " loops, not " +
          std::to_string(degrees.size());
    return failure();
  }
  for (auto [l, degree] : llvm::enumerate(degrees))
    if (degree < 1 || ShapedType::isDynamic(sizes[l]) ||
        sizes[l] % degree != 0) {
      why = "degree " + std::to_string(degree) + " does not divide loop " +
            std::to_string(l) + " of size " + std::to_string(sizes[l]);
      return failure();
    }
  return planForTasks(degrees, devices, numDevices, &why);
}

std::optional<std::string> SpmdPartitioner::checkPlan(linalg::LinalgOp op,
                                                      const LinalgLoops &nest,
                                                      const Plan &plan) {
  int64_t numTasks = 1;
  for (int64_t degree : plan.degrees)
    numTasks *= degree;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<RankedTensorType>(operand.get().getType());
    if (!type)
      continue;
    AffineMap map = nest.maps[operand.getOperandNumber()];
    for (int64_t task = 0; task < numTasks; ++task)
      if (!accessBox(map, nest.sizes, plan.degrees, task, type.getShape()))
        return "operand " + std::to_string(operand.getOperandNumber()) +
               " is read through a map that a split loop cannot follow";
  }
  if (nest.gather)
    for (int64_t task = 0; task < numTasks; ++task)
      if (!accessBox(nest.gather->tableMap(), nest.sizes, plan.degrees, task,
                     nest.gather->tableType().getShape()))
        return std::string("the table it looks up is read past its end");
  for (auto [l, degree] : llvm::enumerate(plan.degrees)) {
    if (degree == 1 || nest.iterators[l] == utils::IteratorType::reduction)
      continue;
    for (OpOperand &init : op.getDpsInitsMutable())
      if (!op.getMatchingIndexingMap(&init).isFunctionOfDim(l))
        return "parallel loop " + std::to_string(l) +
               " is split but does not index output " +
               std::to_string(init.getOperandNumber() - op.getNumDpsInputs());
  }
  if (splitsUncombinablePartials(op, plan.degrees))
    return std::string("a reduction loop is split but the op's partial "
                       "results cannot be combined (not a sum, max or min "
                       "of one output)");
  return std::nullopt;
}

bool soap::partition::readsOnlyShapesOfInputs(linalg::LinalgOp op) {
  return op.getNumDpsInputs() > 0 &&
         llvm::none_of(op.getDpsInputOperands(), [&](OpOperand *input) {
           return op.payloadUsesValueFromOperand(input);
         });
}

std::optional<Piece> SpmdPartitioner::completedLayoutOf(Value original) {
  auto found = dist.find(original);
  if (found == dist.end() || found->second.splat)
    return std::nullopt;
  std::optional<Piece> layout = layoutOf(original);
  if (layout) {
    // Partial sums complete among the devices that hold them.
    layout->partial.reset();
    return layout;
  }
  // A lazy transpose: its input's, permuted.
  if (linalg::TransposeOp transpose = found->second.transpose;
      transpose && found->second.pieces.empty()) {
    std::optional<Piece> input = completedLayoutOf(transpose.getInput());
    if (input)
      input->boxes = transposedBoxes(input->boxes, transpose.getPermutation());
    return input;
  }
  // Several tasks per device: partial results each device adds up (a
  // split reduction's), each device holding one box of them; or complete
  // blocks that tile one box per device (a bias gradient whose two halves
  // one device computed).
  const DistValue &value = found->second;
  std::optional<Piece> sum;
  SmallVector<int64_t> volume(numDevices, 0);
  for (const Piece &piece : value.pieces) {
    if (piece.derived)
      continue;
    if (sum && sum->partial != piece.partial)
      return std::nullopt;
    if (!sum)
      sum = Piece{Value(), DeviceBoxes(numDevices), piece.tasks, piece.partial};
    for (auto [device, box] : llvm::enumerate(piece.boxes)) {
      if (!box)
        continue;
      std::optional<Box> &mine = sum->boxes[device];
      if (piece.partial) {
        if (mine && !(*mine == *box))
          return std::nullopt;
        mine = box;
        continue;
      }
      volume[device] += box->volume();
      if (mine)
        mine->extendTo(*box);
      else
        mine = box;
    }
  }
  if (!sum)
    return std::nullopt;
  // Complete blocks: disjoint (one task each) and filling their box.
  if (!sum->partial)
    for (auto [device, box] : llvm::enumerate(sum->boxes))
      if (box && box->volume() != volume[device])
        return std::nullopt;
  sum->partial.reset();
  return sum;
}

std::optional<Plan> SpmdPartitioner::planFromOperands(linalg::LinalgOp op,
                                                      const LinalgLoops &nest) {
  struct Candidate {
    Plan plan;
    int64_t tasks;
    int64_t elements; ///< of the operand that would not move
    int64_t holders;
  };
  SmallVector<Candidate> candidates;
  bool shapesOnly = readsOnlyShapesOfInputs(op);
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<RankedTensorType>(operand.get().getType());
    if (!type || (!op.payloadUsesValueFromOperand(&operand) &&
                  (op.isDpsInit(&operand) || shapesOnly)))
      continue;
    // A value that is zero elsewhere moves only its nonzero part: it does
    // not decide where the op runs either (normalizeOperands).
    if (auto found = dist.find(operand.get());
        found != dist.end() && found->second.zerosElsewhere)
      continue;
    std::optional<Piece> layout = completedLayoutOf(operand.get());
    if (!layout)
      continue;
    const Piece piece = std::move(*layout);
    // A value every device holds whole (a parameter) can be read anywhere:
    // it does not decide where the op runs. The op runs where its other
    // operands are (a backward op on the device of its forward op), or
    // everywhere when they are all replicated (the fallback plan).
    if (covers(piece, everywhere(type)))
      continue;
    AffineMap map = nest.maps[operand.getOperandNumber()];
    const Box *any = nullptr;
    int64_t holders = 0;
    for (const std::optional<Box> &box : piece.boxes)
      if (box) {
        any = &*box;
        ++holders;
      }
    // Blocks of one size at multiples of it (layout::isGridLayout, which
    // the simulator follows): any other block is no task of the grid.
    if (!any || llvm::any_of(piece.boxes, [&](const std::optional<Box> &box) {
          if (!box)
            return false;
          if (box->sizes != any->sizes)
            return true;
          for (auto [offset, size] : llvm::zip(box->offsets, box->sizes))
            if (size <= 0 || offset % size != 0)
              return true;
          return false;
        }))
      continue;
    SmallVector<int64_t> degrees(nest.sizes.size(), 1);
    SmallVector<int64_t> loopOfDim(type.getRank(), -1);
    bool usable = true;
    for (int64_t dim = 0; dim < type.getRank() && usable; ++dim) {
      int64_t size = any->sizes[dim];
      if (size == type.getDimSize(dim))
        continue;
      auto expr = dyn_cast<AffineDimExpr>(map.getResult(dim));
      if (!expr || type.getDimSize(dim) % size != 0 ||
          degrees[expr.getPosition()] != 1) {
        usable = false;
        break;
      }
      degrees[expr.getPosition()] = type.getDimSize(dim) / size;
      loopOfDim[dim] = expr.getPosition();
    }
    if (!usable)
      continue;
    Plan plan;
    plan.degrees = degrees;
    plan.slots.emplace_back(numDevices, -1);
    int64_t numTasks = 1;
    for (int64_t degree : degrees)
      numTasks *= degree;
    SmallVector<bool> covered(numTasks, false);
    for (auto [device, box] : llvm::enumerate(piece.boxes)) {
      if (!box)
        continue;
      SmallVector<int64_t> coords(degrees.size(), 0);
      for (int64_t dim = 0; dim < type.getRank(); ++dim)
        if (loopOfDim[dim] >= 0)
          coords[loopOfDim[dim]] = box->offsets[dim] / box->sizes[dim];
      int64_t task = 0;
      for (auto [l, c] : llvm::enumerate(coords))
        task = task * degrees[l] + c;
      plan.slots[0][device] = task;
      covered[task] = true;
    }
    if (!llvm::all_of(covered, [](bool c) { return c; }))
      continue;
    candidates.push_back(
        {std::move(plan), numTasks, type.getNumElements(), holders});
  }
  // The most parallel plan; among equals, the one that leaves the largest
  // operand where it is (an accumulated weight gradient rather than the
  // activations it adds), then the one on fewest devices.
  llvm::stable_sort(candidates, [](const Candidate &x, const Candidate &y) {
    if (x.tasks != y.tasks)
      return x.tasks > y.tasks;
    if (x.elements != y.elements)
      return x.elements > y.elements;
    return x.holders < y.holders;
  });
  for (Candidate &candidate : candidates)
    if (!checkPlan(op, nest, candidate.plan))
      return std::move(candidate.plan);
  return std::nullopt;
}

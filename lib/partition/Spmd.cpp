//===- Spmd.cpp - a training step partitioned by its #soap.config ---------===//
//
// Walks the function in order and rewrites every op into the local ops of
// the tasks its plan gives each device, keeping for every tensor a
// distributed value: local SSA values ("pieces", one per task slot) and,
// for each device, the box of the global tensor the piece holds there and
// whether it holds partial sums.
//
// An op's plan comes from its #soap.config (degrees per loop, a device per
// task); a linalg op without one follows the layout of its most split
// operand, and any other op runs whole on every device. Before an op, each
// operand is brought to the boxes the op's tasks read (through the
// operand's indexing map, halos included) by the steps lib/layout's reshard
// planner chooses (Reshard.cpp): nothing, a local slice, a collective over
// the device groups that hold the parts (all_reduce or reduce_scatter of
// partial sums, all_gather, all_to_all, broadcast), point-to-point
// transfers of only the missing parts (halos of a split window op, device
// subsets, another device order), and only for irregular partial sums an
// all_reduce of identity-padded pieces. What a collective made is kept for
// the value's other readers.
//
// Several tasks on one device run one after the other (one slot each);
// devices without a task in a slot skip it (soap.on_devices).
//
//===----------------------------------------------------------------------===//

#include "soap/Partition/Partition.h"

#include "RankTables.h"
#include "Reductions.h"
#include "SpmdPartitioner.h"
#include "soap/Partition/ScatterLoops.h"

#include "soap/Dialect/Gather.h"
#include "soap/Dialect/PartitionableInterface.h"
#include "soap/Dialect/SoapDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/MapVector.h"

#include <map>
#include <numeric>

using namespace mlir;
using namespace soap;
using namespace soap::partition;

static constexpr llvm::StringLiteral kPass = "soap-partition";

namespace {

/// The task grid coordinates of `task` (row-major, last loop fastest).
SmallVector<int64_t> coordinatesOf(ArrayRef<int64_t> degrees, int64_t task) {
  SmallVector<int64_t> coords(degrees.size());
  for (int64_t l = static_cast<int64_t>(degrees.size()) - 1; l >= 0; --l) {
    coords[l] = task % degrees[l];
    task /= degrees[l];
  }
  return coords;
}

/// The box of an operand that a task reads through `map`: the local
/// tensor's index i is the global index i + offset, so that the op keeps
/// its maps on local loops that start at 0.
std::optional<Box> accessBox(AffineMap map, ArrayRef<int64_t> loopSizes,
                             ArrayRef<int64_t> degrees, int64_t task,
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

} // namespace

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

/// Slots from a device per task: a device's k-th task runs in slot k.
static Plan planForTasks(ArrayRef<int64_t> degrees, ArrayRef<int64_t> devices,
                         int64_t numDevices) {
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
  ArrayRef<int64_t> degrees = config.getDegrees();
  ArrayRef<int64_t> devices = config.getDevices();
  if (degrees.size() != nest.sizes.size()) {
    why = "it has " + std::to_string(nest.sizes.size()) + " loops, not " +
          std::to_string(degrees.size());
    return failure();
  }
  for (auto [l, degree] : llvm::enumerate(degrees))
    if (degree < 1 || nest.sizes[l] % degree != 0) {
      why = "degree " + std::to_string(degree) + " does not divide loop " +
            std::to_string(l) + " of size " + std::to_string(nest.sizes[l]);
      return failure();
    }
  for (int64_t device : devices)
    if (device < 0 || device >= numDevices) {
      why = "device " + std::to_string(device) + " is not in [0, " +
            std::to_string(numDevices) + ")";
      return failure();
    }
  if (static_cast<int64_t>(devices.size()) != config.getNumTasks()) {
    why = "it has " + std::to_string(devices.size()) + " devices for " +
          std::to_string(config.getNumTasks()) + " tasks";
    return failure();
  }
  return planForTasks(degrees, devices, numDevices);
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
  bool reductionSplit = false;
  for (auto [l, degree] : llvm::enumerate(plan.degrees)) {
    if (degree == 1)
      continue;
    if (nest.iterators[l] == utils::IteratorType::reduction) {
      reductionSplit = true;
      continue;
    }
    for (OpOperand &init : op.getDpsInitsMutable())
      if (!op.getMatchingIndexingMap(&init).isFunctionOfDim(l))
        return "parallel loop " + std::to_string(l) +
               " is split but does not index output " +
               std::to_string(init.getOperandNumber() - op.getNumDpsInputs());
  }
  // A gather's tasks along its lookup loops yield zero where their row is
  // elsewhere: partial sums.
  if (reductionSplit && !nest.gather && !combinerOf(op))
    return std::string("a reduction loop is split but the op's partial "
                       "results cannot be combined (not a sum, max or min "
                       "of one output)");
  return std::nullopt;
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
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<RankedTensorType>(operand.get().getType());
    if (!type || (op.isDpsInit(&operand) &&
                  !op.payloadUsesValueFromOperand(&operand)))
      continue;
    std::optional<Piece> layout = layoutOf(operand.get());
    if (!layout || layout->partial)
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
    if (!any)
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

//===----------------------------------------------------------------------===//
// Rewriting ops
//===----------------------------------------------------------------------===//

LocalTable SpmdPartitioner::localTable(const GatherLookup &gather,
                                       const DeviceBoxes &boxes, Location loc) {
  LocalTable table;
  table.tensor = materialize(gather.table(), boxes, loc);
  RankedTensorType type = gather.tableType();
  for (int64_t dim = 0; dim < type.getRank(); ++dim) {
    SmallVector<int64_t> offsets(numDevices, 0);
    for (auto [device, box] : llvm::enumerate(boxes))
      if (box)
        offsets[device] = box->offsets[dim];
    table.offsets.push_back(llvm::any_of(offsets, [](int64_t o) { return o; })
                                ? perDevice(offsets, loc)
                                : Value());
  }
  return table;
}

/// The leaves of a tree of arith.addf in `body` that ends in `value`.
static bool addedLeaves(Value value, Block &body,
                        SmallVectorImpl<Value> &leaves) {
  auto add = value.getDefiningOp<arith::AddFOp>();
  if (!add || add->getBlock() != &body) {
    leaves.push_back(value);
    return true;
  }
  return addedLeaves(add.getLhs(), body, leaves) &&
         addedLeaves(add.getRhs(), body, leaves);
}

LogicalResult SpmdPartitioner::partitionPartialSum(linalg::LinalgOp op) {
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (!generic || op->getNumResults() != 1 || op.getNumDpsInputs() < 2 ||
      op.getNumParallelLoops() != op.getNumLoops() ||
      !llvm::all_of(op.getIndexingMapsArray(),
                    [](AffineMap map) { return map.isIdentity(); }) ||
      op.payloadUsesValueFromOperand(op.getDpsInitOperand(0)))
    return failure();
  // The body yields the sum of its inputs, each once.
  Block &body = generic.getRegion().front();
  SmallVector<Value> leaves;
  Value yielded = cast<linalg::YieldOp>(body.getTerminator()).getOperand(0);
  if (!addedLeaves(yielded, body, leaves) ||
      static_cast<int64_t>(leaves.size()) != op.getNumDpsInputs() ||
      static_cast<int64_t>(body.getOperations().size()) !=
          static_cast<int64_t>(leaves.size()))
    return failure(); // the adds and the yield, nothing else
  llvm::SmallDenseSet<Value> seen;
  for (Value leaf : leaves) {
    auto arg = dyn_cast<BlockArgument>(leaf);
    if (!arg || arg.getOwner() != &body ||
        arg.getArgNumber() >= op.getNumDpsInputs() || !seen.insert(leaf).second)
      return failure();
  }
  // Every input holds partial sums in one layout.
  const Piece *first = nullptr;
  for (Value input : op.getDpsInputs()) {
    auto found = dist.find(input);
    if (found == dist.end() || found->second.splat || found->second.transpose)
      return failure();
    const Piece *piece = onlyProducedPiece(found->second);
    if (!piece || piece->partial != ReductionKind::sum ||
        (first &&
         (piece->boxes != first->boxes || piece->tasks != first->tasks ||
          piece->local.getType() != first->local.getType())))
      return failure();
    first = piece;
  }
  // Each device adds its partials: the sum stays a partial sum, completed
  // once where a reader needs it.
  b.setInsertionPoint(op);
  auto localType = cast<RankedTensorType>(first->local.getType());
  IRMapping mapping = plain;
  for (Value input : op.getDpsInputs())
    mapping.map(input, onlyProducedPiece(dist[input])->local);
  Value init = op.getDpsInits()[0];
  mapping.map(init,
              tensor::EmptyOp::create(b, op.getLoc(), localType.getShape(),
                                      localType.getElementType()));
  Operation *local = b.clone(*op, mapping);
  local->getResult(0).setType(localType);
  Piece sum{local->getResult(0), first->boxes, first->tasks,
            ReductionKind::sum};
  dist[op->getResult(0)].pieces.push_back(std::move(sum));
  return success();
}

LogicalResult SpmdPartitioner::partitionLinalg(linalg::LinalgOp op,
                                               const LinalgLoops &nest,
                                               const Plan &plan) {
  Location loc = op.getLoc();
  b.setInsertionPoint(op);
  bool reductionSplit = false;
  for (auto [l, degree] : llvm::enumerate(plan.degrees))
    if (degree > 1 && nest.iterators[l] == utils::IteratorType::reduction)
      reductionSplit = true;
  std::optional<ReductionKind> kind;
  if (reductionSplit)
    kind = nest.gather ? ReductionKind::sum : combinerOf(op);

  // Tensors the body reads from above are needed whole, but for a gather's
  // table: each task reads the box its loops cover.
  IRMapping mapping = plain;
  llvm::SetVector<Value> captured;
  getUsedValuesDefinedAbove(op->getRegions(), captured);
  for (Value value : captured)
    if (auto type = dyn_cast<RankedTensorType>(value.getType());
        type && !(nest.gather && value == nest.gather->table()))
      mapping.map(value, materialize(value, everywhere(type), loc));

  SmallVector<SmallVector<Piece>> results(op->getNumResults());
  for (ArrayRef<int64_t> slot : plan.slots) {
    SmallVector<bool> active;
    SmallVector<int64_t> activeDevices;
    for (auto [device, task] : llvm::enumerate(slot)) {
      active.push_back(task >= 0);
      if (task >= 0)
        activeDevices.push_back(device);
    }
    auto boxesOf = [&](AffineMap map, RankedTensorType type) {
      DeviceBoxes boxes(numDevices);
      for (int64_t device : activeDevices)
        boxes[device] = *accessBox(map, nest.sizes, plan.degrees,
                                   slot[device], type.getShape());
      return boxes;
    };

    SmallVector<Value> operands;
    for (OpOperand &operand : op->getOpOperands()) {
      Value value = operand.get();
      auto type = dyn_cast<RankedTensorType>(value.getType());
      if (!type) {
        operands.push_back(mapping.lookupOrDefault(value));
        continue;
      }
      AffineMap map = nest.maps[operand.getOperandNumber()];
      DeviceBoxes boxes = boxesOf(map, type);
      Value local;
      bool isInit = op.isDpsInit(&operand);
      bool partialInit = false;
      if (isInit && !op.payloadUsesValueFromOperand(&operand)) {
        auto localType = RankedTensorType::get(
            boxes[activeDevices.front()]->sizes, type.getElementType());
        local = tensor::EmptyOp::create(b, loc, localType.getShape(),
                                        localType.getElementType());
      } else if (isInit && reductionSplit &&
                 (local = accumulatingInit(value, boxes, *kind))) {
        // Partial sums added to partial sums stay partial sums.
        partialInit = true;
      } else {
        local = materialize(value, boxes, loc);
      }
      if (isInit && reductionSplit && !partialInit &&
          op.payloadUsesValueFromOperand(&operand) &&
          !isIdentityFill(value, *kind)) {
        // Only the tasks at the start of every split reduction loop add
        // the init; the others start from the identity.
        SmallVector<bool> first(numDevices, false);
        for (int64_t device : activeDevices) {
          SmallVector<int64_t> coords =
              coordinatesOf(plan.degrees, slot[device]);
          first[device] = true;
          for (auto [l, c] : llvm::enumerate(coords))
            if (nest.iterators[l] == utils::IteratorType::reduction && c != 0)
              first[device] = false;
        }
        local = arith::SelectOp::create(
            b, loc, deviceIn(first, loc), local,
            identityFilled(b, loc, cast<RankedTensorType>(local.getType()),
                           *kind));
      }
      operands.push_back(local);
    }

    // Offsets of split loops, for linalg.index in the body.
    SmallVector<Value> loopOffsets(nest.sizes.size());
    bool readsIndex = false;
    op->walk([&](linalg::IndexOp) { readsIndex = true; });
    if (readsIndex)
      for (auto [l, degree] : llvm::enumerate(plan.degrees)) {
        if (degree == 1)
          continue;
        SmallVector<int64_t> perDev(numDevices, 0);
        for (int64_t device : activeDevices)
          perDev[device] = coordinatesOf(plan.degrees, slot[device])[l] *
                           (nest.sizes[l] / degree);
        loopOffsets[l] = perDevice(perDev, loc);
      }
    std::optional<LocalTable> table;
    if (nest.gather)
      table = localTable(
          *nest.gather,
          boxesOf(nest.gather->tableMap(), nest.gather->tableType()), loc);

    OnDevicesOp guard;
    OpBuilder::InsertionGuard insertion(b);
    if (static_cast<int64_t>(activeDevices.size()) != numDevices) {
      SmallVector<Type> types;
      for (OpOperand &init : op.getDpsInitsMutable())
        types.push_back(operands[init.getOperandNumber()].getType());
      guard = OnDevicesOp::create(b, loc, types,
                                  b.getDenseI64ArrayAttr(activeDevices));
      b.setInsertionPointToStart(&guard.getBody().emplaceBlock());
    }
    IRMapping slotMapping = mapping; // a clone records its block arguments
    Operation *local = b.clone(*op, slotMapping);
    local->setOperands(operands);
    local->removeAttr(SoapDialect::getConfigAttrName());
    for (OpOperand &init : cast<linalg::LinalgOp>(local).getDpsInitsMutable())
      local->getResult(init.getOperandNumber() - op.getNumDpsInputs())
          .setType(init.get().getType());
    local->walk([&](linalg::IndexOp index) {
      Value offset = loopOffsets[index.getDim()];
      if (!offset)
        return;
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointAfter(index);
      Value global = arith::AddIOp::create(b, index.getLoc(), index, offset);
      index.getResult().replaceAllUsesExcept(global, global.getDefiningOp());
    });
    if (table)
      lookUpLocally(b, *nest.gather, *table,
                    slotMapping.lookup(nest.gather->extract.getResult())
                        .getDefiningOp<tensor::ExtractOp>());
    ValueRange localResults = local->getResults();
    if (guard) {
      YieldOp::create(b, loc, local->getResults());
      localResults = guard.getResults();
    }
    for (OpResult result : op->getResults()) {
      unsigned i = result.getResultNumber();
      auto type = cast<RankedTensorType>(result.getType());
      Piece piece;
      piece.local = localResults[i];
      piece.boxes = boxesOf(op.getIndexingMapMatchingResult(result), type);
      for (int64_t task : slot)
        piece.tasks.push_back(task);
      piece.partial = kind;
      results[i].push_back(std::move(piece));
    }
  }
  for (OpResult result : op->getResults())
    dist[result].pieces = std::move(results[result.getResultNumber()]);
  return success();
}

FailureOr<IRMapping> SpmdPartitioner::localReads(
    Operation *op, function_ref<DeviceBoxes(Value, RankedTensorType)> targetOf,
    bool &moved) {
  Location loc = op->getLoc();
  IRMapping mapping = plain;
  SmallVector<Value> reads(op->getOperands());
  llvm::SetVector<Value> captured;
  getUsedValuesDefinedAbove(op->getRegions(), captured);
  reads.append(captured.begin(), captured.end());
  for (Value value : reads) {
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!type || mapping.contains(value))
      continue;
    if (!type.hasStaticShape())
      return op->emitError() << kPass << ": operand of type " << type
                             << " needs a static shape";
    DeviceBoxes target = targetOf(value, type);
    DistValue &distValue = dist[value];
    if (!distValue.splat && !distValue.transpose &&
        llvm::none_of(distValue.pieces, [&](const Piece &piece) {
          return covers(piece, target);
        }))
      moved = true;
    mapping.map(value, materialize(value, target, loc));
  }
  return mapping;
}

LogicalResult SpmdPartitioner::runReplicated(Operation *op) {
  b.setInsertionPoint(op);
  bool moved = false;
  FailureOr<IRMapping> mapping = localReads(
      op, [&](Value, RankedTensorType type) { return everywhere(type); },
      moved);
  if (failed(mapping))
    return failure();
  if (moved && !isa<func::ReturnOp>(op))
    ++replicatedOps[op->getName().getStringRef()];
  Operation *local = b.clone(*op, *mapping);
  local->removeAttr(SoapDialect::getConfigAttrName());
  for (auto [result, localResult] :
       llvm::zip(op->getResults(), local->getResults())) {
    auto type = dyn_cast<RankedTensorType>(result.getType());
    if (!type) {
      plain.map(result, localResult);
      continue;
    }
    dist[result].pieces.push_back(Piece{localResult, everywhere(type),
                                        SmallVector<int64_t>(numDevices, 0),
                                        std::nullopt});
  }
  return success();
}

/// A scatter-add nest (a gather's gradient, include/soap/Partition/ScatterLoops.h)
/// whose summing loops index tensors split along those dimensions runs
/// each such loop over the part its device holds: every device adds its
/// part of the gradient into zeros, a partial sum that a consumer needing
/// the whole gradient all_reduces (data parallelism's gradient of an
/// embedding table). Fails, changing nothing, when no loop can be split
/// that way.
LogicalResult SpmdPartitioner::partitionScatterAdd(scf::ForOp loop) {
  std::optional<ScatterAddNest> nest = matchScatterAdd(loop);
  if (!nest || !isIdentityFill(nest->init(), ReductionKind::sum))
    return failure();
  // Per split loop: each device's offset, the local trip count, and the
  // dimension of the result it picks (a column loop; none: it sums).
  struct Split {
    SmallVector<int64_t> offsets;
    int64_t count;
    std::optional<unsigned> resultDim;
  };
  llvm::SmallDenseMap<unsigned, Split> splits;
  auto readsOf = [&](unsigned index) -> const SmallVector<LoopRead> * {
    if (nest->summable[index])
      return &*nest->summable[index];
    if (nest->columns[index])
      return &nest->columns[index]->reads;
    return nullptr;
  };
  for (unsigned index = 0; index < nest->loops.size(); ++index) {
    const SmallVector<LoopRead> *reads = readsOf(index);
    if (!reads)
      continue;
    for (const LoopRead &read : *reads) {
      std::optional<Piece> layout = layoutOf(read.tensor->get());
      auto type = cast<RankedTensorType>(read.tensor->get().getType());
      if (!layout || layout->partial ||
          type.getDimSize(read.dim) != nest->tripCounts[index] ||
          llvm::any_of(layout->boxes, [](auto &box) { return !box; }))
        continue;
      Split split{{}, layout->boxes.front()->sizes[read.dim], std::nullopt};
      if (nest->columns[index])
        split.resultDim = nest->columns[index]->resultDim;
      for (const std::optional<Box> &box : layout->boxes)
        split.offsets.push_back(box->offsets[read.dim]);
      if (split.count == nest->tripCounts[index] ||
          llvm::any_of(layout->boxes, [&](auto &box) {
            return box->sizes[read.dim] != split.count;
          }))
        continue;
      splits[index] = std::move(split);
      break;
    }
  }
  if (splits.empty())
    return failure();

  // Every read of a tensor a split loop indexes must index that dimension
  // with that loop: the tensor is then held in its part on each device.
  llvm::MapVector<Value, llvm::SmallDenseMap<unsigned, unsigned>> splitDims;
  for (auto &[index, split] : splits)
    for (const LoopRead &read : *readsOf(index)) {
      auto [it, inserted] =
          splitDims[read.tensor->get()].try_emplace(read.dim, index);
      if (!inserted && it->second != index)
        return failure();
    }
  for (auto &[tensor, dims] : splitDims)
    for (Operation *user : tensor.getUsers()) {
      if (!loop->isProperAncestor(user))
        continue;
      auto extract = dyn_cast<tensor::ExtractOp>(user);
      if (!extract)
        return failure();
      for (auto [dim, index] : dims)
        if (extract.getIndices()[dim] != nest->loops[index].getInductionVar())
          return failure();
    }

  // The task of each device: which part of the split loops it runs.
  SmallVector<int64_t> tasks(numDevices);
  std::map<SmallVector<int64_t>, int64_t> taskOf;
  for (int64_t device = 0; device < numDevices; ++device) {
    SmallVector<int64_t> part;
    for (auto &[index, split] : splits)
      part.push_back(split.offsets[device]);
    tasks[device] = taskOf.try_emplace(part, taskOf.size()).first->second;
  }

  // The part of the result each device computes: the columns of its
  // column loops.
  auto type = cast<RankedTensorType>(loop.getResult(0).getType());
  DeviceBoxes resultBoxes = everywhere(type);
  bool partial = false;
  for (auto &[index, split] : splits) {
    partial |= !split.resultDim;
    if (split.resultDim)
      for (int64_t device = 0; device < numDevices; ++device) {
        resultBoxes[device]->offsets[*split.resultDim] = split.offsets[device];
        resultBoxes[device]->sizes[*split.resultDim] = split.count;
      }
  }

  b.setInsertionPoint(loop);
  bool moved = false;
  FailureOr<IRMapping> mapping = localReads(
      loop,
      [&](Value value, RankedTensorType type) {
        if (value == nest->init())
          return resultBoxes; // zeros, at the local shape
        DeviceBoxes target = everywhere(type);
        if (auto dims = splitDims.find(value); dims != splitDims.end())
          for (int64_t device = 0; device < numDevices; ++device)
            for (auto [dim, index] : dims->second) {
              target[device]->offsets[dim] = splits[index].offsets[device];
              target[device]->sizes[dim] = splits[index].count;
            }
        return target;
      },
      moved);
  if (failed(mapping))
    return failure();
  auto local = cast<scf::ForOp>(b.clone(*loop, *mapping));
  std::optional<ScatterAddNest> localNest = matchScatterAdd(local);
  for (auto &[index, split] : splits)
    localNest->setTripCount(index, split.count);
  localNest->setCarriedType(
      cast<RankedTensorType>(localNest->init().getType()));
  std::optional<ReductionKind> kind;
  if (partial)
    kind = ReductionKind::sum;
  dist[loop.getResult(0)].pieces.push_back(
      Piece{local.getResult(0), resultBoxes, tasks, kind});
  return success();
}

/// tensor.empty, a fill of a splat, and splat constants.
static bool isSplat(Operation *op,
                    const llvm::DenseMap<Value, DistValue> &dist) {
  if (auto empty = dyn_cast<tensor::EmptyOp>(op))
    return empty.getType().hasStaticShape();
  if (auto fill = dyn_cast<linalg::FillOp>(op)) {
    auto found = dist.find(fill.getDpsInits()[0]);
    return fill.hasPureTensorSemantics() && found != dist.end() &&
           found->second.splat;
  }
  if (auto constant = dyn_cast<arith::ConstantOp>(op))
    return isa<RankedTensorType>(constant.getType()) &&
           isa<SplatElementsAttr>(constant.getValue());
  return false;
}

/// The boxes of a transpose's result given its input's: result dimension i
/// is input dimension perm[i].
static DeviceBoxes transposedBoxes(const DeviceBoxes &input,
                                   ArrayRef<int64_t> perm) {
  DeviceBoxes boxes(input.size());
  for (auto [device, box] : llvm::enumerate(input)) {
    if (!box)
      continue;
    Box out{SmallVector<int64_t>(perm.size()),
            SmallVector<int64_t>(perm.size())};
    for (auto [i, p] : llvm::enumerate(perm)) {
      out.offsets[i] = box->offsets[p];
      out.sizes[i] = box->sizes[p];
    }
    boxes[device] = std::move(out);
  }
  return boxes;
}

std::optional<Piece> SpmdPartitioner::layoutOf(Value original) {
  auto found = dist.find(original);
  if (found == dist.end() || found->second.splat)
    return std::nullopt;
  const DistValue &value = found->second;
  if (const Piece *only = onlyProducedPiece(value))
    return *only;
  linalg::TransposeOp transpose = value.transpose;
  if (!transpose || !value.pieces.empty())
    return std::nullopt;
  std::optional<Piece> input = layoutOf(transpose.getInput());
  if (!input)
    return std::nullopt;
  ArrayRef<int64_t> perm = transpose.getPermutation();
  return Piece{Value(), transposedBoxes(input->boxes, perm), input->tasks,
               input->partial};
}

void SpmdPartitioner::realizeTranspose(Value original, Operation *user) {
  auto found = dist.find(original);
  if (found == dist.end() || !found->second.transpose ||
      !found->second.pieces.empty())
    return;
  linalg::TransposeOp transpose = found->second.transpose;
  Value input = transpose.getInput();
  realizeTranspose(input, user);
  auto in = dist.find(input);
  if (in == dist.end() || in->second.splat)
    return;
  ArrayRef<int64_t> perm = transpose.getPermutation();
  auto elementType =
      cast<RankedTensorType>(original.getType()).getElementType();
  SmallVector<Piece> pieces;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(user);
  for (const Piece &piece : in->second.pieces) {
    DeviceBoxes boxes = transposedBoxes(piece.boxes, perm);
    auto localInput = cast<RankedTensorType>(piece.local.getType());
    SmallVector<int64_t> shape;
    for (int64_t p : perm)
      shape.push_back(localInput.getDimSize(p));
    Value init =
        tensor::EmptyOp::create(b, transpose.getLoc(), shape, elementType);
    Value local = linalg::TransposeOp::create(b, transpose.getLoc(),
                                              piece.local, init, perm)
                      .getResult()[0];
    pieces.push_back(Piece{local, std::move(boxes), piece.tasks,
                           piece.partial});
  }
  dist[original].pieces = std::move(pieces);
}

/// collapse_shape/expand_shape of a value split only along the outermost
/// dimension of each group: the local values reshape the same way, and
/// partial sums stay partial sums.
LogicalResult SpmdPartitioner::partitionReshape(Operation *op) {
  Value source = op->getOperand(0);
  realizeTranspose(source, op);
  auto sourceType = cast<RankedTensorType>(source.getType());
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  auto found = dist.find(source);
  if (found == dist.end() || found->second.splat ||
      !onlyProducedPiece(found->second))
    return failure();
  const Piece piece = *onlyProducedPiece(found->second); // dist may grow
  bool collapse = isa<tensor::CollapseShapeOp>(op);
  SmallVector<ReassociationIndices> groups =
      collapse ? cast<tensor::CollapseShapeOp>(op).getReassociationIndices()
               : cast<tensor::ExpandShapeOp>(op).getReassociationIndices();
  // The wide side has one dimension per group member, the narrow side one
  // per group.
  RankedTensorType wide = collapse ? sourceType : resultType;
  DeviceBoxes boxes(numDevices);
  std::optional<SmallVector<int64_t>> localShape;
  for (auto [device, box] : llvm::enumerate(piece.boxes)) {
    if (!box)
      continue;
    Box out;
    for (auto [g, group] : llvm::enumerate(groups)) {
      int64_t inner = 1;
      for (int64_t dim : llvm::drop_begin(group))
        inner *= wide.getDimSize(dim);
      if (collapse) {
        for (int64_t dim : llvm::drop_begin(group))
          if (box->sizes[dim] != wide.getDimSize(dim))
            return failure();
        out.offsets.push_back(box->offsets[group.front()] * inner);
        out.sizes.push_back(box->sizes[group.front()] * inner);
      } else {
        int64_t offset = box->offsets[g], size = box->sizes[g];
        if (offset % inner != 0 || size % inner != 0)
          return failure();
        out.offsets.push_back(offset / inner);
        out.sizes.push_back(size / inner);
        for (int64_t dim : llvm::drop_begin(group)) {
          out.offsets.push_back(0);
          out.sizes.push_back(wide.getDimSize(dim));
        }
      }
    }
    if (localShape && *localShape != out.sizes)
      return failure();
    localShape = out.sizes;
    boxes[device] = std::move(out);
  }
  if (!localShape)
    return failure();
  b.setInsertionPoint(op);
  auto localType =
      RankedTensorType::get(*localShape, resultType.getElementType());
  Value local;
  if (collapse)
    local = tensor::CollapseShapeOp::create(b, op->getLoc(), localType,
                                            piece.local, groups);
  else
    local = tensor::ExpandShapeOp::create(b, op->getLoc(), localType,
                                          piece.local, groups);
  dist[op->getResult(0)].pieces.push_back(
      Piece{local, std::move(boxes), piece.tasks, piece.partial});
  return success();
}

/// tensor.pad, extract_slice and insert_slice of a value split only along
/// dimensions the op leaves alone (no padding; the slice covers the whole
/// dimension at stride 1; rank-reducing slices drop only whole dimensions):
/// each device pads or slices its own part.
LogicalResult SpmdPartitioner::partitionPassThrough(Operation *op) {
  Value source = op->getOperand(0);
  auto sourceType = dyn_cast<RankedTensorType>(source.getType());
  auto resultType = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!sourceType || !resultType || !resultType.hasStaticShape() ||
      !sourceType.hasStaticShape())
    return failure();
  int64_t sourceRank = sourceType.getRank();
  // For each source dimension: the result dimension it becomes (-1:
  // dropped) and whether the op leaves it alone.
  SmallVector<int64_t> resultDim(sourceRank, -1);
  SmallVector<bool> identity(sourceRank, false);
  auto alone = [](int64_t offset, int64_t size, int64_t stride, int64_t full) {
    return offset == 0 && size == full && stride == 1;
  };
  if (auto pad = dyn_cast<tensor::PadOp>(op)) {
    for (int64_t d = 0; d < sourceRank; ++d) {
      resultDim[d] = d;
      identity[d] = pad.getStaticLow()[d] == 0 && pad.getStaticHigh()[d] == 0;
    }
  } else if (auto extract = dyn_cast<tensor::ExtractSliceOp>(op)) {
    llvm::SmallBitVector dropped = extract.getDroppedDims();
    int64_t next = 0;
    for (int64_t d = 0; d < sourceRank; ++d) {
      if (dropped.test(d))
        continue;
      resultDim[d] = next++;
      identity[d] = alone(extract.getStaticOffsets()[d],
                          extract.getStaticSizes()[d],
                          extract.getStaticStrides()[d],
                          sourceType.getDimSize(d));
    }
  } else if (auto insert = dyn_cast<tensor::InsertSliceOp>(op)) {
    // Source dimension i is the i-th destination dimension of size other
    // than a dropped unit.
    llvm::SmallBitVector dropped = insert.getDroppedDims();
    int64_t d = 0;
    for (int64_t j = 0; j < resultType.getRank(); ++j) {
      if (dropped.test(j))
        continue;
      if (d >= sourceRank)
        return failure();
      resultDim[d] = j;
      identity[d] =
          alone(insert.getStaticOffsets()[j], insert.getStaticSizes()[j],
                insert.getStaticStrides()[j], resultType.getDimSize(j));
      ++d;
    }
  } else {
    return failure();
  }
  realizeTranspose(source, op);
  auto found = dist.find(source);
  if (found == dist.end() || found->second.splat ||
      !onlyProducedPiece(found->second) ||
      onlyProducedPiece(found->second)->partial)
    return failure();
  const Piece piece = *onlyProducedPiece(found->second); // dist may grow
  DeviceBoxes boxes(numDevices);
  SmallVector<int64_t> localShape, localSourceShape;
  bool split = false;
  for (auto [device, box] : llvm::enumerate(piece.boxes)) {
    if (!box)
      continue;
    Box out = wholeBox(resultType);
    for (int64_t d = 0; d < sourceRank; ++d) {
      bool whole = box->offsets[d] == 0 &&
                   box->sizes[d] == sourceType.getDimSize(d);
      if (!whole && !identity[d])
        return failure();
      if (identity[d] && resultDim[d] >= 0) {
        out.offsets[resultDim[d]] = box->offsets[d];
        out.sizes[resultDim[d]] = box->sizes[d];
        split |= !whole;
      }
    }
    localShape = out.sizes;
    localSourceShape = box->sizes;
    boxes[device] = std::move(out);
  }
  // Nothing to gain when every device holds the whole source: run it
  // whole. A source held by some devices only stays there (the others skip
  // the op).
  bool subset = llvm::any_of(piece.boxes,
                             [](const std::optional<Box> &box) { return !box; });
  if ((!split && !subset) || localShape.empty())
    return failure();
  Location loc = op->getLoc();
  b.setInsertionPoint(op);
  auto localType =
      RankedTensorType::get(localShape, resultType.getElementType());
  auto asAttrs = [&](ArrayRef<int64_t> values) {
    return llvm::to_vector(llvm::map_range(
        values, [&](int64_t v) -> OpFoldResult { return b.getIndexAttr(v); }));
  };
  // Communication first: a guard below must not hold a collective.
  Value dest;
  if (auto insert = dyn_cast<tensor::InsertSliceOp>(op))
    dest = materialize(insert.getDest(), boxes, loc);
  // Devices without a part skip the op.
  OnDevicesOp guard;
  OpBuilder::InsertionGuard insertion(b);
  if (subset) {
    SmallVector<int64_t> holders;
    for (auto [device, box] : llvm::enumerate(boxes))
      if (box)
        holders.push_back(device);
    guard = OnDevicesOp::create(b, loc, TypeRange{localType},
                                b.getDenseI64ArrayAttr(holders));
    b.setInsertionPointToStart(&guard.getBody().emplaceBlock());
  }
  Operation *local;
  if (auto insert = dyn_cast<tensor::InsertSliceOp>(op)) {
    SmallVector<int64_t> sizes(insert.getStaticSizes());
    for (int64_t d = 0; d < sourceRank; ++d)
      if (identity[d])
        sizes[resultDim[d]] = localSourceShape[d];
    local = tensor::InsertSliceOp::create(
        b, loc, piece.local, dest, asAttrs(insert.getStaticOffsets()),
        asAttrs(sizes), asAttrs(insert.getStaticStrides()));
  } else if (auto extract = dyn_cast<tensor::ExtractSliceOp>(op)) {
    SmallVector<int64_t> sizes(extract.getStaticSizes());
    for (int64_t d = 0; d < sourceRank; ++d)
      if (identity[d])
        sizes[d] = localSourceShape[d];
    local = tensor::ExtractSliceOp::create(
        b, loc, localType, piece.local, asAttrs(extract.getStaticOffsets()),
        asAttrs(sizes), asAttrs(extract.getStaticStrides()));
  } else {
    IRMapping mapping = plain;
    mapping.map(source, piece.local);
    local = b.clone(*op, mapping);
    local->getResult(0).setType(localType);
    local->removeAttr(SoapDialect::getConfigAttrName());
  }
  Value result = local->getResult(0);
  if (guard) {
    YieldOp::create(b, loc, result);
    result = guard.getResult(0);
  }
  dist[op->getResult(0)].pieces.push_back(
      Piece{result, std::move(boxes), piece.tasks, std::nullopt});
  return success();
}

/// tensor.concat of values split alike along the other dimensions (an
/// LSTM cell's [input, state]): each device concatenates its parts.
LogicalResult SpmdPartitioner::partitionConcat(tensor::ConcatOp op) {
  auto resultType = cast<RankedTensorType>(op.getType());
  int64_t dim = op.getDim();
  // The layout comes from the inputs that are not splats (zeros, an
  // initial state): they must agree; splats are rebuilt to match.
  std::optional<Piece> first;
  for (Value input : op.getInputs())
    realizeTranspose(input, op);
  for (Value input : op.getInputs()) {
    auto type = cast<RankedTensorType>(input.getType());
    auto found = dist.find(input);
    if (found == dist.end())
      return failure();
    if (found->second.splat)
      continue;
    const Piece *only = onlyProducedPiece(found->second);
    if (!only || only->partial)
      return failure();
    const Piece &piece = *only;
    for (auto [device, box] : llvm::enumerate(piece.boxes)) {
      if (box && (box->offsets[dim] != 0 ||
                  box->sizes[dim] != type.getDimSize(dim)))
        return failure();
      if (!first)
        continue;
      const std::optional<Box> &other = first->boxes[device];
      if (box.has_value() != other.has_value())
        return failure();
      if (box)
        for (int64_t d = 0; d < type.getRank(); ++d)
          if (d != dim && (box->offsets[d] != other->offsets[d] ||
                           box->sizes[d] != other->sizes[d]))
            return failure();
    }
    if (!first)
      first = piece;
  }
  if (!first)
    return failure();
  DeviceBoxes boxes(numDevices);
  SmallVector<int64_t> localShape;
  bool split = false;
  for (auto [device, box] : llvm::enumerate(first->boxes)) {
    if (!box)
      continue;
    Box out = *box;
    out.sizes[dim] = resultType.getDimSize(dim);
    split |= out.sizes != SmallVector<int64_t>(resultType.getShape());
    localShape = out.sizes;
    boxes[device] = std::move(out);
  }
  if (!split)
    return failure();
  b.setInsertionPoint(op);
  SmallVector<Value> locals;
  for (Value input : op.getInputs()) {
    DistValue &value = dist[input];
    if (!value.splat) {
      locals.push_back(value.pieces.front().local);
      continue;
    }
    SmallVector<int64_t> shape(localShape);
    shape[dim] = cast<RankedTensorType>(input.getType()).getDimSize(dim);
    locals.push_back(rebuildSplat(
        value.splat, RankedTensorType::get(shape, resultType.getElementType()),
        op.getLoc()));
  }
  Value local = tensor::ConcatOp::create(
      b, op.getLoc(),
      RankedTensorType::get(localShape, resultType.getElementType()), dim,
      locals);
  dist[op.getResult()].pieces.push_back(
      Piece{local, std::move(boxes), first->tasks, std::nullopt});
  return success();
}

void SpmdPartitioner::partitionReturn(func::ReturnOp op) {
  b.setInsertionPoint(op);
  SmallVector<Value> operands;
  returnLayouts.clear();
  for (auto [index, value] : llvm::enumerate(op.getOperands())) {
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!type) {
      returnLayouts.push_back(std::nullopt);
      operands.push_back(value);
      continue;
    }
    returnLayouts.push_back(layoutOf(value));
    auto sharded = shardedResults.find(index);
    operands.push_back(materialize(value,
                                   sharded != shardedResults.end()
                                       ? sharded->second
                                       : everywhere(type),
                                   op.getLoc()));
  }
  func::ReturnOp::create(b, op.getLoc(), operands);
}

LogicalResult SpmdPartitioner::run() {
  Block &entry = function.getBody().front();
  SmallVector<Operation *> originals;
  for (Operation &op : entry)
    originals.push_back(&op);
  b.setInsertionPointToStart(&entry);
  rank = RankOp::create(b, function.getLoc(), b.getIndexType());
  // A sharded argument gets a local twin right after it, which holds its
  // shard; the global one (whose type the rewriting reads) goes at the end.
  SmallVector<BlockArgument> globalArgs(entry.getArguments());
  SmallVector<BlockArgument> replaced;
  for (auto [original, argument] : llvm::enumerate(globalArgs))
    if (auto type = dyn_cast<RankedTensorType>(argument.getType())) {
      if (!type.hasStaticShape())
        return function.emitError()
               << kPass << ": argument " << original << " of type " << type
               << " needs a static shape";
      // Keyed by the original position (twins shift later arguments).
      auto sharded = shardedArgs.find(original);
      if (sharded == shardedArgs.end()) {
        dist[argument].pieces.push_back(
            Piece{argument, everywhere(type),
                  SmallVector<int64_t>(numDevices, 0), std::nullopt});
        continue;
      }
      unsigned index = argument.getArgNumber();
      const std::optional<Box> *held = llvm::find_if(
          sharded->second, [](const std::optional<Box> &box) { return box; });
      auto localType =
          RankedTensorType::get((*held)->sizes, type.getElementType());
      if (failed(function.insertArgument(index + 1, localType,
                                         function.getArgAttrDict(index),
                                         argument.getLoc())))
        return function.emitError()
               << kPass << ": cannot add the shard of argument " << index;
      dist[argument].pieces.push_back(
          Piece{function.getArgument(index + 1), sharded->second,
                SmallVector<int64_t>(numDevices, 0), std::nullopt});
      replaced.push_back(argument);
    }

  for (Operation *op : originals) {
    if (isSplat(op, dist)) {
      dist[op->getResult(0)].splat = op;
      continue;
    }
    if (auto transpose = dyn_cast<linalg::TransposeOp>(op);
        transpose && transpose.hasPureTensorSemantics() &&
        !op->hasAttr(SoapDialect::getConfigAttrName())) {
      dist[transpose->getResult(0)].transpose = transpose;
      continue;
    }
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
      if (std::optional<LinalgLoops> nest = loopNestOf(linalgOp)) {
        std::optional<Plan> plan;
        if (auto config = op->getAttrOfType<ConfigAttr>(
                SoapDialect::getConfigAttrName())) {
          std::string why;
          FailureOr<Plan> fromConfig =
              planFromConfig(linalgOp, *nest, config, why);
          if (succeeded(fromConfig)) {
            if (std::optional<std::string> problem =
                    checkPlan(linalgOp, *nest, *fromConfig))
              why = *problem;
            else
              plan = std::move(*fromConfig);
          }
          if (!plan) {
            ++configsNotFollowed;
            if (firstNotFollowed.empty())
              firstNotFollowed =
                  "'" + op->getName().getStringRef().str() + "': " + why;
          }
        } else {
          if (succeeded(partitionPartialSum(linalgOp)))
            continue;
          plan = planFromOperands(linalgOp, *nest);
        }
        if (!plan)
          plan = replicatedPlan(nest->sizes.size());
        if (failed(partitionLinalg(linalgOp, *nest, *plan)))
          return failure();
        continue;
      }
    }
    if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(op) &&
        succeeded(partitionReshape(op)))
      continue;
    if (isa<tensor::PadOp, tensor::ExtractSliceOp, tensor::InsertSliceOp>(op) &&
        succeeded(partitionPassThrough(op)))
      continue;
    if (auto concat = dyn_cast<tensor::ConcatOp>(op);
        concat && succeeded(partitionConcat(concat)))
      continue;
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      partitionReturn(ret);
      continue;
    }
    if (auto loop = dyn_cast<scf::ForOp>(op);
        loop && succeeded(partitionScatterAdd(loop)))
      continue;
    if (failed(runReplicated(op)))
      return failure();
  }

  for (Operation *op : llvm::reverse(originals)) {
    op->dropAllUses();
    op->erase();
  }
  llvm::BitVector unused(function.getNumArguments());
  for (BlockArgument argument : replaced)
    unused.set(argument.getArgNumber());
  if (failed(function.eraseArguments(unused)))
    return function.emitError() << kPass << ": cannot drop global arguments";
  function.setType(FunctionType::get(
      function.getContext(), entry.getArgumentTypes(),
      entry.getTerminator()->getOperandTypes()));

  if (!warn)
    return success();
  if (configsNotFollowed)
    emitWarning(function.getLoc())
        << kPass << ": " << configsNotFollowed
        << " ops run whole on every device instead of following their "
           "#soap.config (first: "
        << firstNotFollowed << ")";
  if (!replicatedOps.empty()) {
    InFlightDiagnostic warning = emitWarning(function.getLoc());
    warning << kPass << ": ops without a partitioned form run whole on "
                        "every device, their split operands gathered first:";
    for (auto [name, count] : replicatedOps)
      warning << " " << name << " x" << count;
  }
  return success();
}

/// The argument that result `result` of a training step updates: the
/// parameter or optimizer state of the same soap.role and soap.name.
static std::optional<unsigned> stateArgumentOf(func::FuncOp function,
                                               unsigned result) {
  auto role = function.getResultAttrOfType<StringAttr>(result, "soap.role");
  auto name = function.getResultAttrOfType<StringAttr>(result, "soap.name");
  if (!role || !name ||
      (role.getValue() != "param" && role.getValue() != "opt_state"))
    return std::nullopt;
  for (unsigned arg = 0; arg < function.getNumArguments(); ++arg)
    if (function.getArgAttrOfType<StringAttr>(arg, "soap.role") == role &&
        function.getArgAttrOfType<StringAttr>(arg, "soap.name") == name &&
        function.getArgumentTypes()[arg] == function.getResultTypes()[result])
      return arg;
  return std::nullopt;
}

/// Whether state in this layout is worth keeping where it is across steps:
/// every device holds a part of the same shape and the parts differ (a
/// split), or some devices hold the whole tensor and the others nothing (an
/// op placed on a device subset).
static bool keepsLayout(const DeviceBoxes &boxes) {
  const std::optional<Box> *first = nullptr;
  bool split = false, subset = false;
  for (const std::optional<Box> &box : boxes) {
    if (!box) {
      subset = true;
      continue;
    }
    if (!first)
      first = &box;
    else if (box->sizes != (*first)->sizes)
      return false;
    else
      split |= box->offsets != (*first)->offsets;
  }
  if (!first)
    return false;
  if (subset) // whole on the holders
    return !split && llvm::all_of((*first)->offsets,
                                  [](int64_t o) { return o == 0; });
  return split;
}

LogicalResult soap::partitionByConfigs(func::FuncOp function,
                                       int64_t devices) {
  if (!function.getBody().hasOneBlock())
    return function.emitError()
           << kPass << ": the function must have a single block";
  // A probing run on a copy finds where each updated parameter and
  // optimizer state ends up; state in a layout worth keeping (keepsLayout)
  // then stays there across steps (the argument arrives as the local part
  // and the result leaves as one), instead of being made whole at the end of
  // every step and split again at the start of the next.
  struct KeptState {
    unsigned arg, result;
    DeviceBoxes boxes;
  };
  SmallVector<KeptState> kept;
  // Keeping one state's layout can change where others end up (a weight
  // kept split along its rows splits the gradient of what it multiplies,
  // and with it an embedding table's gradient): probe again with what was
  // kept, until nothing more is.
  for (int round = 0; round < 3; ++round) {
    func::FuncOp probe = function.clone();
    SpmdPartitioner first(probe, devices);
    first.warn = false;
    for (const KeptState &state : kept) {
      first.shardedArgs[state.arg] = state.boxes;
      first.shardedResults[state.result] = state.boxes;
    }
    bool ok;
    {
      ScopedDiagnosticHandler silence(function.getContext(),
                                      [](Diagnostic &) { return success(); });
      ok = succeeded(first.run());
    }
    SmallVector<KeptState> next;
    if (ok)
      for (auto [result, layout] : llvm::enumerate(first.returnLayouts)) {
        std::optional<unsigned> arg = stateArgumentOf(function, result);
        if (arg && layout && !layout->partial && keepsLayout(layout->boxes))
          next.push_back({*arg, static_cast<unsigned>(result), layout->boxes});
      }
    probe.erase();
    if (!ok || next.size() == kept.size())
      break; // what was kept stays kept: the same states
    kept = std::move(next);
  }
  // The driver initializes, saves and loads the whole tensor: each kept
  // argument and its result say which part of it every device holds (the
  // argument's type, which stateArgumentOf matched to the result's, is the
  // whole tensor's).
  Builder builder(function.getContext());
  SmallVector<DictionaryAttr> shardAttrs;
  SpmdPartitioner partitioner(function, devices);
  for (const KeptState &state : kept) {
    ArrayRef<int64_t> shape =
        cast<RankedTensorType>(function.getArgumentTypes()[state.arg])
            .getShape();
    SmallVector<int64_t> offsets, holders;
    for (auto [device, box] : llvm::enumerate(state.boxes)) {
      if (box)
        holders.push_back(device);
      SmallVector<int64_t> zeros(shape.size(), 0);
      ArrayRef<int64_t> at = box ? ArrayRef<int64_t>(box->offsets) : zeros;
      offsets.append(at.begin(), at.end());
    }
    SmallVector<NamedAttribute> fields = {
        builder.getNamedAttr("global_shape",
                             builder.getDenseI64ArrayAttr(shape)),
        builder.getNamedAttr("offsets", builder.getDenseI64ArrayAttr(offsets))};
    if (holders.size() != state.boxes.size())
      fields.push_back(builder.getNamedAttr(
          "holders", builder.getDenseI64ArrayAttr(holders)));
    shardAttrs.push_back(builder.getDictionaryAttr(fields));
    partitioner.shardedArgs[state.arg] = state.boxes;
    partitioner.shardedResults[state.result] = state.boxes;
  }
  if (failed(partitioner.run()))
    return failure();
  for (auto [state, attr] : llvm::zip(kept, shardAttrs)) {
    function.setArgAttr(state.arg, SoapDialect::getShardAttrName(), attr);
    function.setResultAttr(state.result, SoapDialect::getShardAttrName(),
                           attr);
  }
  return success();
}

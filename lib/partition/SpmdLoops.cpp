//===- SpmdLoops.cpp - linalg ops and scatter-adds, task by task ---------===//
//
// The per-op rewrites of ops that have loops: a linalg op becomes one local
// op per slot of its plan (its operands brought to the boxes the tasks
// read, split reductions left as partial sums, gathers looking up the rows
// each device holds), an elementwise sum of partial sums stays partial,
// and a scatter-add nest runs each summing loop over the part its device
// holds.
//
//===----------------------------------------------------------------------===//

#include "SpmdPartitioner.h"

#include "RankTables.h"
#include "Reductions.h"
#include "soap/Partition/ScatterLoops.h"

#include "soap/Dialect/Gather.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Transforms/RegionUtils.h"

using namespace mlir;
using namespace soap;
using namespace soap::partition;

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
    if (found == dist.end() || found->second.rebuiltByReaders())
      return failure();
    const Piece *piece = onlyProducedPiece(found->second);
    if (!piece || piece->partial != ReductionKind::sum ||
        (first && (!sameLayout(*piece, *first) ||
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

LogicalResult SpmdPartitioner::partitionLoops(Operation *op) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp)
    return failure();
  std::optional<LinalgLoops> nest = loopNestOf(linalgOp);
  if (!nest)
    return failure();
  std::optional<Plan> plan;
  if (auto config =
          op->getAttrOfType<ConfigAttr>(SoapDialect::getConfigAttrName())) {
    std::string why;
    FailureOr<Plan> fromConfig = planFromConfig(linalgOp, *nest, config, why);
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
      return success();
    plan = planFromOperands(linalgOp, *nest);
  }
  if (!plan)
    plan = replicatedPlan(nest->sizes.size());
  partitionLinalg(linalgOp, *nest, *plan);
  return success();
}

void SpmdPartitioner::partitionLinalg(linalg::LinalgOp op,
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
        boxes[device] = *accessBox(map, nest.sizes, plan.degrees, slot[device],
                                   type.getShape());
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
      // An output the body overwrites, or an input the body does not read
      // (a gradient rule's forward operand, kept to place the op; the
      // inputs of an op that reads only their shapes), needs only its
      // local shape: nothing moves for it, as the simulator moves nothing.
      if (!op.payloadUsesValueFromOperand(&operand)) {
        auto localType = RankedTensorType::get(
            boxes[activeDevices.front()]->sizes, type.getElementType());
        local = tensor::EmptyOp::create(b, loc, localType.getShape(),
                                        localType.getElementType());
      } else if (isInit && reductionSplit &&
                 ((local = accumulatingInit(value, boxes, *kind)) ||
                  (op.payloadUsesValueFromOperand(&operand) &&
                   (local = embeddedInit(value, boxes, *kind, loc))))) {
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
  // Partials of one block on several slots' devices, and a max's or min's
  // partials (soap::completesPartialsAtOnce), complete on the op's devices;
  // other partial sums are left for the readers.
  bool slotSums = kind && plan.slots.size() > 1;
  if (kind && (slotSums || completesPartialsAtOnce(*kind)))
    for (SmallVector<Piece> &pieces : results)
      completeSharedPartials(pieces, *kind, loc);
  for (OpResult result : op->getResults()) {
    DistValue &value = dist[result];
    value.pieces = std::move(results[result.getResultNumber()]);
    value.slotSums = slotSums && *kind == ReductionKind::sum;
  }
}

void SpmdPartitioner::completeSharedPartials(SmallVector<Piece> &pieces,
                                             ReductionKind kind, Location loc) {
  // The output blocks, in order of first appearance.
  SmallVector<Box> blocks;
  for (const Piece &piece : pieces)
    for (const std::optional<Box> &box : piece.boxes)
      if (box && !llvm::is_contained(blocks, *box))
        blocks.push_back(*box);
  auto writes = [&](const Piece &piece, const Box &block) {
    SmallVector<bool> flags(numDevices, false);
    for (int64_t device = 0; device < numDevices; ++device)
      flags[device] = piece.boxes[device] && *piece.boxes[device] == block;
    return flags;
  };
  // Each block complete on the devices that wrote it.
  SmallVector<Value> complete;
  for (const Box &block : blocks) {
    Value sum;
    SmallVector<bool> have(numDevices, false);
    for (const Piece &piece : pieces) {
      SmallVector<bool> flags = writes(piece, block);
      if (!llvm::is_contained(flags, true))
        continue;
      // Devices with a partial of the block already add this one to it;
      // the others take it as it is.
      SmallVector<bool> add(numDevices, false), take(numDevices, false);
      for (int64_t device = 0; device < numDevices; ++device) {
        add[device] = flags[device] && have[device];
        take[device] = flags[device] && !have[device];
        have[device] |= flags[device];
      }
      Value added;
      if (llvm::is_contained(add, true))
        added = arith::SelectOp::create(
            b, loc, deviceIn(add, loc),
            combineLocally(sum, piece.local, kind, loc), sum);
      if (llvm::is_contained(take, true))
        sum = sum ? arith::SelectOp::create(b, loc, deviceIn(take, loc),
                                            piece.local, added ? added : sum)
                        .getResult()
                  : piece.local;
      else
        sum = added;
    }
    SmallVector<int64_t> group;
    for (int64_t device = 0; device < numDevices; ++device)
      if (have[device])
        group.push_back(device);
    if (group.size() > 1)
      sum = AllReduceOp::create(b, loc, sum.getType(),
                                ReductionKindAttr::get(b.getContext(), kind),
                                sum, b.getDenseI64ArrayAttr(group));
    complete.push_back(sum);
  }
  // Each slot's blocks, now complete.
  for (Piece &piece : pieces) {
    Value local;
    for (auto [block, value] : llvm::zip(blocks, complete)) {
      SmallVector<bool> flags = writes(piece, block);
      if (!llvm::is_contained(flags, true))
        continue;
      local = local ? arith::SelectOp::create(b, loc, deviceIn(flags, loc),
                                              value, local)
                          .getResult()
                    : value;
    }
    piece.local = local;
    piece.partial.reset();
    piece.tasks.assign(numDevices, 0);
  }
  // A device that wrote one block in several slots now holds copies of it:
  // the first slot keeps it, and slots left holding nothing go.
  for (size_t later = 1; later < pieces.size(); ++later)
    for (int64_t device = 0; device < numDevices; ++device)
      for (size_t earlier = 0; earlier < later; ++earlier)
        if (pieces[later].boxes[device] &&
            pieces[earlier].boxes[device] == pieces[later].boxes[device])
          pieces[later].boxes[device].reset();
  llvm::erase_if(pieces, [](const Piece &piece) {
    return llvm::none_of(piece.boxes,
                         [](const std::optional<Box> &box) { return box; });
  });
}

/// The gather whose gradient `nest` is, when it splits only the table's
/// row lookup, one task per device: a configured gather of the same
/// table shape that reads the ids the nest reads, at the same indices of
/// its loops (the nest runs over the gather's loops). The devices of the
/// tasks, in row order.
static std::optional<SmallVector<int64_t>>
rowSplitOfGather(ScatterAddNest &nest, LookupUpdate &update,
                 int64_t numDevices) {
  Value ids = update.ids.getTensor();
  auto tableType = cast<RankedTensorType>(nest.result().getType());
  // The nest's loop of each index of the ids.
  SmallVector<unsigned> idsLoops;
  for (Value index : update.ids.getIndices()) {
    std::optional<unsigned> loop = nest.loopOf(index);
    if (!loop)
      return std::nullopt;
    idsLoops.push_back(*loop);
  }
  std::optional<SmallVector<int64_t>> devices;
  for (Operation *user : ids.getUsers()) {
    auto op = dyn_cast<linalg::GenericOp>(user);
    auto config =
        op ? op->getAttrOfType<ConfigAttr>(SoapDialect::getConfigAttrName())
           : ConfigAttr();
    std::optional<GatherLookup> gather = op ? matchGather(op) : std::nullopt;
    if (!config || !gather || gather->tableType() != tableType ||
        gather->numOpLoops != nest.loops.size() ||
        !gather->isLookupDim(update.dim))
      continue;
    // The ids are an input read at the nest's loops.
    bool sameRead = false;
    for (OpOperand *input : op.getDpsInputOperands())
      if (input->get() == ids) {
        AffineMap map = op.getMatchingIndexingMap(input);
        sameRead = map.getNumResults() == idsLoops.size();
        for (auto [expr, loop] : llvm::zip(map.getResults(), idsLoops)) {
          auto dim = dyn_cast<AffineDimExpr>(expr);
          sameRead &= dim && dim.getPosition() == loop;
        }
      }
    if (!sameRead)
      continue;
    ArrayRef<int64_t> degrees = config.getDegrees();
    unsigned rowLoop = gather->loopOfDim[update.dim];
    bool rowsOnly = degrees[rowLoop] == numDevices &&
                    tableType.getDimSize(update.dim) % numDevices == 0;
    for (auto [loop, degree] : llvm::enumerate(degrees))
      rowsOnly &= loop == rowLoop || degree == 1;
    SmallVector<int64_t> order(config.getDevices());
    SmallVector<int64_t> sorted = order;
    llvm::sort(sorted);
    for (auto [i, device] : llvm::enumerate(sorted))
      rowsOnly &= device == static_cast<int64_t>(i);
    if (!rowsOnly || (devices && *devices != order))
      return std::nullopt; // two gathers that disagree, or another split
    devices = order;
  }
  return devices;
}

LogicalResult SpmdPartitioner::partitionScatterByRows(scf::ForOp loop,
                                                      ScatterAddNest &nest) {
  std::optional<LookupUpdate> update = matchLookupUpdate(nest);
  if (!update)
    return failure();
  std::optional<SmallVector<int64_t>> devices =
      rowSplitOfGather(nest, *update, numDevices);
  if (!devices)
    return failure();
  auto type = cast<RankedTensorType>(loop.getResult(0).getType());
  int64_t rows = type.getDimSize(update->dim) / numDevices;
  // Device devices[t] holds rows [t * rows, (t + 1) * rows).
  SmallVector<int64_t> offsets(numDevices), tasks(numDevices);
  DeviceBoxes boxes = everywhere(type);
  for (auto [task, device] : llvm::enumerate(*devices)) {
    offsets[device] = static_cast<int64_t>(task) * rows;
    tasks[device] = static_cast<int64_t>(task);
    boxes[device]->offsets[update->dim] = offsets[device];
    boxes[device]->sizes[update->dim] = rows;
  }
  Location loc = loop.getLoc();
  b.setInsertionPoint(loop);
  bool moved = false;
  FailureOr<IRMapping> mapping = localReads(
      loop,
      [&](Value value, RankedTensorType valueType) {
        return value == nest.init() ? boxes : everywhere(valueType);
      },
      moved);
  if (failed(mapping))
    return failure();
  Value offset = perDevice(offsets, loc);
  Value count = arith::ConstantIndexOp::create(b, loc, rows);
  Value zeroIndex = arith::ConstantIndexOp::create(b, loc, 0);
  auto local = cast<scf::ForOp>(b.clone(*loop, *mapping));
  std::optional<ScatterAddNest> localNest = matchScatterAdd(local);
  std::optional<LookupUpdate> localUpdate = matchLookupUpdate(*localNest);
  // The local row: the global one less the device's offset; a row of
  // another device adds zero to local row 0.
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(localUpdate->old);
  Value global = localUpdate->insert.getIndices()[localUpdate->dim];
  Value row = arith::SubIOp::create(b, loc, global, offset);
  Value mine =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, row, count);
  Value safe = arith::SelectOp::create(b, loc, mine, row, zeroIndex);
  localUpdate->old.getIndicesMutable()[localUpdate->dim].assign(safe);
  localUpdate->insert.getIndicesMutable()[localUpdate->dim].assign(safe);
  auto add = localUpdate->insert.getScalar().getDefiningOp<arith::AddFOp>();
  unsigned term = add.getLhs() == localUpdate->old.getResult() ? 1 : 0;
  b.setInsertionPoint(add);
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(add.getType()));
  add->setOperand(
      term, arith::SelectOp::create(b, loc, mine, add->getOperand(term), zero));
  localNest->setCarriedType(
      cast<RankedTensorType>(localNest->init().getType()));
  dist[loop.getResult(0)].pieces.push_back(
      Piece{local.getResult(0), boxes, tasks, std::nullopt});
  return success();
}

/// The bytes of every tensor defined outside `loop` that the nest it heads
/// reads, whole (each counted once).
static int64_t bytesReadByNest(scf::ForOp loop) {
  int64_t bytes = 0;
  llvm::SmallPtrSet<Value, 4> counted;
  loop->walk([&](tensor::ExtractOp extract) {
    Value tensor = extract.getTensor();
    if (loop->isAncestor(tensor.getParentBlock()->getParentOp()) ||
        !counted.insert(tensor).second)
      return;
    bytes += tensorShapeOf(cast<RankedTensorType>(tensor.getType())).bytes();
  });
  return bytes;
}

/// layout::scatterRunsWhole for the nest `loop` heads: its result (the
/// table's gradient) against what it reads.
static bool nestRunsWhole(scf::ForOp loop) {
  return layout::scatterRunsWhole(
      tensorShapeOf(cast<RankedTensorType>(loop.getResult(0).getType()))
          .bytes(),
      bytesReadByNest(loop));
}

/// A scatter-add nest (a gather's gradient,
/// include/soap/Partition/ScatterLoops.h) whose summing loops index tensors
/// split along those dimensions runs each such loop over the part its device
/// holds: every device adds its part of the gradient into zeros, a partial sum
/// that a consumer needing the whole gradient all_reduces; a nest whose
/// gather splits the table's rows scatters into them instead
/// (partitionScatterByRows). Where those partial sums would be of a table
/// larger than what the nest reads (layout::scatterRunsWhole: data
/// parallelism's gradient of an embedding table), the nest runs whole on
/// each of the devices instead, its reads gathered there, and each holds
/// the complete gradient. Fails, changing nothing, when no loop can be
/// split that way.
LogicalResult SpmdPartitioner::partitionScatterAdd(scf::ForOp loop) {
  std::optional<ScatterAddNest> nest = matchScatterAdd(loop);
  if (!nest || !isIdentityFill(nest->init(), ReductionKind::sum))
    return failure();
  if (succeeded(partitionScatterByRows(loop, *nest)))
    return success();
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
  // The gather's config (soap.scatter_config), when each device runs one
  // of its tasks: every loop it splits runs its task's part, its reads
  // brought there, as the simulator prices the gather's backward task.
  if (auto config = loop->getAttrOfType<ConfigAttr>(
          SoapDialect::getScatterConfigAttrName())) {
    ArrayRef<int64_t> degrees = config.getDegrees();
    FailureOr<Plan> tasks =
        planForTasks(degrees, config.getDevices(), numDevices);
    if (failed(tasks))
      return failure(); // the nest runs whole, as without a config
    Plan &plan = *tasks;
    // One task (a gather that runs whole on one device): the loop runs
    // whole there, the gradient it scatters brought there, and the table's
    // gradient is complete there (no partial tables to all-reduce).
    if (config.getDevices().size() == 1 &&
        llvm::all_of(degrees, [](int64_t degree) { return degree == 1; }))
      return runWholeOnDevices(loop, config.getDevices());
    // The gather's loops, then its lookup loops (soap/Dialect/Gather.h):
    // those split the table's rows, which partitionScatterByRows handles.
    bool oneTaskEach =
        degrees.size() >= nest->loops.size() &&
        llvm::all_of(degrees.drop_front(nest->loops.size()),
                     [](int64_t degree) { return degree == 1; }) &&
        plan.slots.size() == 1 && !llvm::is_contained(plan.slots[0], -1);
    for (unsigned index = 0; oneTaskEach && index < nest->loops.size();
         ++index) {
      if (degrees[index] == 1)
        continue;
      int64_t trips = nest->tripCounts[index];
      if (!readsOf(index) || trips % degrees[index] != 0) {
        oneTaskEach = false;
        break;
      }
      Split split{SmallVector<int64_t>(numDevices), trips / degrees[index],
                  std::nullopt};
      if (nest->columns[index])
        split.resultDim = nest->columns[index]->resultDim;
      for (auto [device, task] : llvm::enumerate(plan.slots[0]))
        split.offsets[device] =
            coordinatesOf(degrees, task)[index] * split.count;
      splits[index] = std::move(split);
    }
    if (!oneTaskEach)
      splits.clear();
    // Partial tables (a split loop that does not pick the columns) larger
    // than the reads: the nest runs whole on each of the devices.
    if (llvm::any_of(splits,
                     [](auto &split) { return !split.second.resultDim; }) &&
        nestRunsWhole(loop)) {
      SmallVector<int64_t> devices(config.getDevices());
      llvm::sort(devices);
      return runWholeOnDevices(loop, devices);
    }
  }
  bool byConfig = !splits.empty();
  for (unsigned index = 0; !byConfig && index < nest->loops.size(); ++index) {
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
  // Without the gather's config, the loops split only because the tensors
  // they read happen to be split: each device's partial table then needs
  // an all-reduce of the whole table, which moves more than bringing the
  // reads whole when the table is larger than they are (a position
  // embedding's gradient: 6 looked-up rows of a 512-row table).
  if (!byConfig && nestRunsWhole(loop))
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

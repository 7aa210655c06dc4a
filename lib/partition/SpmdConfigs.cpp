//===- SpmdConfigs.cpp - tensor ops by their configs; zeros elsewhere -----===//
//
// Data-movement ops of the tensor dialect with a #soap.config run as the
// simulator prices them: each task's block of the result from the region of
// each operand its loops read (partitionByConfig), or whole on the one
// device of a one-task config (runWholeOn). A slice's gradient (an
// insertion into zeros) stays where its blocks are, zero elsewhere
// (DistValue::zerosElsewhere): sums of such gradients of disjoint slices
// keep all the parts (addDisjointParts), and readers other than through
// materialize get the value complete first (normalizeOperands).
//
//===----------------------------------------------------------------------===//

#include "SpmdPartitioner.h"

#include "Reductions.h"

#include "soap/Dialect/PartitionableInterface.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace soap;
using namespace soap::partition;

/// Per group of `reassociation`, whether the block `sizes` of the expanded
/// shape `wide` is contiguous in the collapsed dimension: every dimension
/// after the first split one of the group is whole (then the block's
/// region there has exactly the block's number of elements).
static bool contiguousGroups(ArrayRef<ReassociationIndices> reassociation,
                             ArrayRef<int64_t> sizes, ArrayRef<int64_t> wide) {
  for (const ReassociationIndices &group : reassociation) {
    bool split = false;
    for (int64_t dim : group) {
      if (split && sizes[dim] != wide[dim])
        return false;
      split = split || sizes[dim] != 1;
    }
  }
  return true;
}

/// The tensor ops partitionByConfig follows a config of.
static bool isConfiguredView(Operation *op) {
  return op->hasAttr(SoapDialect::getConfigAttrName()) &&
         isa<tensor::ExtractSliceOp, tensor::ExpandShapeOp,
             tensor::CollapseShapeOp, tensor::ConcatOp, tensor::InsertSliceOp,
             tensor::PadOp>(op);
}

LogicalResult SpmdPartitioner::partitionByConfig(Operation *op) {
  // It reads its operands through materialize, which plans a value that
  // is zero elsewhere with its zeros (a model-parallel embedding's
  // gradient, whose slices were read on other devices, goes to the
  // embedding's device alone); the rewrites that follow when it cannot
  // need ordinary values.
  if (succeeded(followConfig(op)))
    return success();
  normalizeOperands(op, /*viewsByConfig=*/false);
  return failure();
}

LogicalResult SpmdPartitioner::followConfig(Operation *op) {
  auto config = op->getAttrOfType<ConfigAttr>(SoapDialect::getConfigAttrName());
  auto partitionable = dyn_cast<PartitionableOpInterface>(op);
  if (!config || !partitionable || op->getNumResults() != 1 ||
      !isa<tensor::ExtractSliceOp, tensor::ExpandShapeOp,
           tensor::CollapseShapeOp, tensor::ConcatOp, tensor::InsertSliceOp,
           tensor::PadOp>(op))
    return failure();
  // An insertion into zeros (a slice's gradient) at stride 1: each device
  // holds its blocks where they go, and the rest is zeros that nobody
  // holds, as the simulator's gradient edges have it. A pad with static
  // padding: each task reads the part of the source its block covers and
  // pads it (below, where those parts have one shape). Other insertions (a
  // transposed convolution's strided spread of its adjoint) follow a
  // config of one task: whole on its device.
  auto insert = dyn_cast<tensor::InsertSliceOp>(op);
  bool intoZeros =
      insert && isIdentityFill(insert.getDest(), ReductionKind::sum) &&
      llvm::all_of(insert.getStaticStrides(), [](int64_t s) { return s == 1; });
  auto pad = dyn_cast<tensor::PadOp>(op);
  bool splitPad = pad && pad.getLow().empty() && pad.getHigh().empty();
  if (insert && !intoZeros &&
      succeeded(followInsertAlongWholeDims(insert, config)))
    return success();
  if ((insert && !intoZeros) || (pad && !splitPad)) {
    if (config.getDevices().size() != 1 ||
        llvm::any_of(config.getDegrees(), [](int64_t d) { return d != 1; }))
      return failure();
    return runWholeOn(op, config.getDevices().front());
  }
  auto resultType = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!resultType || !resultType.hasStaticShape() ||
      llvm::any_of(op->getOperands(), [](Value v) {
        auto type = dyn_cast<RankedTensorType>(v.getType());
        return !type || !type.hasStaticShape();
      }))
    return failure();
  // Views of values their producers left whole on every device (arguments,
  // replicated results) cost nothing where they are: the op runs whole
  // everywhere. (Not so for a whole copy an earlier reader gathered: the
  // simulator keeps the config's layout there too; nor for a fill, which
  // each device makes in its block alone.)
  if (llvm::all_of(op->getOperands(), [&](Value operand) {
        auto found = dist.find(operand);
        if (found == dist.end() || found->second.splat)
          return false;
        auto type = cast<RankedTensorType>(operand.getType());
        return !found->second.pieces.empty() &&
               covers(found->second.pieces.front(), everywhere(type));
      }))
    return failure();
  SmallVector<int64_t> sizes = partitionable.getLoopSizes();
  std::string why;
  FailureOr<Plan> plan = planFromConfig(sizes, config, why);
  if (failed(plan))
    return failure();
  // A concatenation split along its dimension: each task's block must lie
  // in one input, which is all it reads (the other inputs' indices are
  // outside them, as the simulator's empty boxes say).
  auto concat = dyn_cast<tensor::ConcatOp>(op);
  bool splitConcat = concat && plan->degrees[concat.getDim()] != 1;
  SmallVector<OperandAccess> accesses = partitionable.getOperandAccesses();

  // Each slot (the k-th task of every device) is one local op on blocks:
  // first what every slot reads and writes, checked, then the ops.
  struct Slot {
    ArrayRef<int64_t> tasks;
    SmallVector<DeviceBoxes> reads;
    DeviceBoxes written;
    SmallVector<int64_t> activeDevices, localShape;
    SmallVector<int64_t> inputOf; ///< per device: a split concat's input
  };
  SmallVector<Slot, 2> slots;
  for (ArrayRef<int64_t> tasks : plan->slots) {
    Slot &slot = slots.emplace_back();
    slot.tasks = tasks;
    slot.reads.assign(op->getNumOperands(), DeviceBoxes(numDevices));
    slot.written.resize(numDevices);
    slot.inputOf.assign(numDevices, -1);
    bool describesResult = false;
    for (auto [device, task] : llvm::enumerate(tasks)) {
      if (task < 0)
        continue;
      slot.activeDevices.push_back(device);
      for (const OperandAccess &access : accesses) {
        if (access.isDestination)
          continue; // an insertion's zeros: nobody holds them
        auto type = cast<RankedTensorType>(access.value.getType());
        // A concatenation's task reads the part of each input its block
        // covers (none of some when it is split along its dimension).
        bool isInput = concat && access.value != op->getResult(0);
        // A pad's task reads its block of the source, whole along the
        // padded dimensions.
        bool clip = isInput || (pad && access.value == pad.getSource());
        std::optional<Box> region = regionOf(access.map, sizes, plan->degrees,
                                             task, type.getShape(), clip);
        if (!region && splitConcat && isInput)
          continue; // checked below: the task reads one input
        if (!region)
          return failure();
        if (access.value == op->getResult(0)) {
          slot.written[device] = std::move(region);
          describesResult = true;
          continue;
        }
        for (OpOperand &operand : op->getOpOperands())
          if (operand.get() == access.value)
            slot.reads[operand.getOperandNumber()][device] = *region;
      }
    }
    if (!describesResult || slot.activeDevices.empty())
      return failure();
    slot.localShape = slot.written[slot.activeDevices.front()]->sizes;
    for (int64_t device : slot.activeDevices)
      if (slot.written[device]->sizes != slot.localShape)
        return failure();
    // A pad split along a padded dimension: the first and last blocks
    // cover padding, so their parts of the source are smaller, except
    // where each block covers as much padding (2 blocks, padded alike on
    // both sides). Parts of other shapes would need per-device shapes.
    if (pad) {
      ArrayRef<int64_t> part = slot.reads[0][slot.activeDevices.front()]->sizes;
      for (int64_t device : slot.activeDevices)
        if (slot.reads[0][device]->sizes != part)
          return failure();
    }
    for (int64_t device : slot.activeDevices) {
      for (auto [number, boxes] : llvm::enumerate(slot.reads)) {
        if (insert && number == insert.getDestMutable().getOperandNumber())
          continue;
        if (boxes[device] && splitConcat) {
          if (slot.inputOf[device] >= 0 ||
              boxes[device]->sizes[concat.getDim()] !=
                  slot.written[device]->sizes[concat.getDim()])
            return failure(); // a block across inputs
          slot.inputOf[device] = number;
        } else if (!boxes[device] && !splitConcat) {
          return failure(); // an operand its loops do not describe
        }
      }
      if (splitConcat && slot.inputOf[device] < 0)
        return failure();
    }
    // Reshapes: the blocks must be contiguous in the collapsed shape.
    if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op);
        expand && !contiguousGroups(expand.getReassociationIndices(),
                                    slot.localShape, resultType.getShape()))
      return failure();
    if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op);
        collapse &&
        !contiguousGroups(collapse.getReassociationIndices(),
                          slot.reads[0][slot.activeDevices.front()]->sizes,
                          collapse.getSrcType().getShape()))
      return failure();
  }

  Location loc = op->getLoc();
  auto indexAttrs = [&](ArrayRef<int64_t> values) {
    return llvm::to_vector(llvm::map_range(
        values, [&](int64_t v) -> OpFoldResult { return b.getIndexAttr(v); }));
  };
  DistValue result;
  for (Slot &slot : slots) {
    // Communication first: a guard below must not hold a collective.
    b.setInsertionPoint(op);
    SmallVector<Value> locals;
    for (auto [number, operand] : llvm::enumerate(op->getOperands())) {
      if ((splitConcat &&
           llvm::none_of(slot.reads[number],
                         [](const auto &box) { return box.has_value(); })) ||
          (insert && number == insert.getDestMutable().getOperandNumber())) {
        locals.push_back(Value()); // no task reads it
        continue;
      }
      realizeTranspose(operand, op);
      locals.push_back(materialize(operand, slot.reads[number], loc));
    }
    OnDevicesOp guard;
    OpBuilder::InsertionGuard insertion(b);
    auto localType =
        RankedTensorType::get(slot.localShape, resultType.getElementType());
    if (static_cast<int64_t>(slot.activeDevices.size()) != numDevices) {
      guard = OnDevicesOp::create(b, loc, TypeRange{localType},
                                  b.getDenseI64ArrayAttr(slot.activeDevices));
      b.setInsertionPointToStart(&guard.getBody().emplaceBlock());
    }
    Value local;
    if (auto extract = dyn_cast<tensor::ExtractSliceOp>(op)) {
      // The local source starts at the task's first element: the slice
      // starts at 0, keeps the strides and drops the same unit dimensions.
      ArrayRef<int64_t> sourceShape =
          cast<RankedTensorType>(locals[0].getType()).getShape();
      llvm::SmallBitVector dropped = extract.getDroppedDims();
      SmallVector<int64_t> sliceSizes;
      int64_t next = 0;
      for (int64_t d = 0; d < static_cast<int64_t>(sourceShape.size()); ++d)
        sliceSizes.push_back(dropped.test(d) ? 1 : slot.localShape[next++]);
      local = tensor::ExtractSliceOp::create(
          b, loc, localType, locals[0],
          indexAttrs(SmallVector<int64_t>(sourceShape.size(), 0)),
          indexAttrs(sliceSizes), indexAttrs(extract.getStaticStrides()));
    } else if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
      local = tensor::ExpandShapeOp::create(b, loc, localType, locals[0],
                                            expand.getReassociationIndices());
    } else if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op)) {
      local = tensor::CollapseShapeOp::create(
          b, loc, localType, locals[0], collapse.getReassociationIndices());
    } else if (pad) {
      // The same padding around the task's part of the source, then the
      // task's block of that: local row j is row `part offset + j` of the
      // padded tensor (the padding that stands for other devices' rows is
      // not in the block).
      IRMapping mapping = plain;
      mapping.map(pad.getSource(), locals[0]);
      Operation *clone = b.clone(*op, mapping);
      clone->removeAttr(SoapDialect::getConfigAttrName());
      ArrayRef<int64_t> part =
          cast<RankedTensorType>(locals[0].getType()).getShape();
      SmallVector<int64_t> padded;
      for (auto [dim, size] : llvm::enumerate(part))
        padded.push_back(size + pad.getStaticLow()[dim] +
                         pad.getStaticHigh()[dim]);
      clone->getResult(0).setType(
          RankedTensorType::get(padded, resultType.getElementType()));
      local = clone->getResult(0);
      if (padded != slot.localShape) {
        SmallVector<SmallVector<int64_t>> offsets(
            numDevices, SmallVector<int64_t>(padded.size(), 0));
        for (int64_t device : slot.activeDevices)
          for (size_t dim = 0; dim < padded.size(); ++dim)
            offsets[device][dim] = slot.written[device]->offsets[dim] -
                                   slot.reads[0][device]->offsets[dim];
        local = tensor::ExtractSliceOp::create(
            b, loc, localType, local, offsetsPerDevice(offsets, loc),
            indexAttrs(slot.localShape),
            indexAttrs(SmallVector<int64_t>(padded.size(), 1)));
      }
    } else if (insert) {
      // The block itself, with the unit dimensions the insertion drops.
      local = locals[0];
      if (cast<RankedTensorType>(local.getType()).getRank() !=
          static_cast<int64_t>(slot.localShape.size()))
        local = tensor::InsertSliceOp::create(
            b, loc, local,
            tensor::EmptyOp::create(b, loc, slot.localShape,
                                    resultType.getElementType()),
            indexAttrs(SmallVector<int64_t>(slot.localShape.size(), 0)),
            indexAttrs(slot.localShape),
            indexAttrs(SmallVector<int64_t>(slot.localShape.size(), 1)));
    } else if (!splitConcat) {
      local =
          tensor::ConcatOp::create(b, loc, localType, concat.getDim(), locals);
    } else {
      // Each device's block is its input's: the local values have the
      // block's type, and each device picks its own.
      for (auto [number, input] : llvm::enumerate(locals)) {
        if (!input)
          continue;
        if (!local) {
          local = input;
          continue;
        }
        SmallVector<bool> flags(numDevices, false);
        for (int64_t device : slot.activeDevices)
          flags[device] = slot.inputOf[device] == static_cast<int64_t>(number);
        local =
            arith::SelectOp::create(b, loc, deviceIn(flags, loc), input, local);
      }
    }
    if (guard) {
      YieldOp::create(b, loc, local);
      local = guard.getResult(0);
    }
    Piece piece{local, std::move(slot.written), {}, std::nullopt};
    for (int64_t task : slot.tasks)
      piece.tasks.push_back(task);
    result.pieces.push_back(std::move(piece));
  }
  result.zerosElsewhere = static_cast<bool>(insert);
  DistValue &value = dist[op->getResult(0)];
  value.pieces = std::move(result.pieces);
  value.zerosElsewhere = result.zerosElsewhere;
  return success();
}

LogicalResult SpmdPartitioner::runWholeOn(Operation *op, int64_t device) {
  if (device < 0 || device >= numDevices)
    return failure();
  Location loc = op->getLoc();
  b.setInsertionPoint(op);
  IRMapping mapping = plain;
  for (Value operand : op->getOperands()) {
    auto type = dyn_cast<RankedTensorType>(operand.getType());
    if (!type || !type.hasStaticShape()) {
      if (type)
        return failure();
      continue;
    }
    realizeTranspose(operand, op);
    DeviceBoxes target(numDevices);
    target[device] = wholeBox(type);
    mapping.map(operand, materialize(operand, target, loc));
  }
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  Value result = onDevices({device}, resultType, loc, [&] {
    Operation *local = b.clone(*op, mapping);
    local->removeAttr(SoapDialect::getConfigAttrName());
    return local->getResult(0);
  });
  DeviceBoxes boxes(numDevices);
  boxes[device] = wholeBox(resultType);
  SmallVector<int64_t> tasks(numDevices, -1);
  tasks[device] = 0;
  dist[op->getResult(0)].pieces.push_back(
      Piece{result, std::move(boxes), std::move(tasks), std::nullopt});
  return success();
}

/// Whether `op` is an elementwise add of its two inputs into an init it
/// does not read, over identical maps.
static bool isPlainAdd(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() != 0 ||
      !llvm::all_of(op.getIndexingMapsArray(),
                    [](AffineMap map) { return map.isIdentity(); }))
    return false;
  Block &body = op.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto add = yield.getValues()[0].getDefiningOp<arith::AddFOp>();
  if (!add || &body.front() != add.getOperation())
    return false;
  Value x = body.getArgument(0), y = body.getArgument(1);
  return (add.getLhs() == x && add.getRhs() == y) ||
         (add.getLhs() == y && add.getRhs() == x);
}

LogicalResult SpmdPartitioner::addDisjointParts(Operation *op) {
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic || op->hasAttr(SoapDialect::getConfigAttrName()) ||
      !generic.hasPureTensorSemantics() || !isPlainAdd(generic))
    return failure();
  SmallVector<const DistValue *> parts;
  for (Value input : generic.getDpsInputs()) {
    auto found = dist.find(input);
    if (found == dist.end() || !found->second.zerosElsewhere)
      return failure();
    parts.push_back(&found->second);
  }
  for (const Piece &a : parts[0]->pieces)
    for (const Piece &b : parts[1]->pieces)
      for (const std::optional<Box> &x : a.boxes)
        for (const std::optional<Box> &y : b.boxes)
          if (x && y && x->meets(*y))
            return failure(); // the parts overlap: an add must run
  DistValue sum;
  sum.zerosElsewhere = true;
  for (const DistValue *part : parts)
    llvm::append_range(sum.pieces, part->pieces);
  dist[op->getResult(0)] = std::move(sum);
  return success();
}

std::optional<Piece>
SpmdPartitioner::lastCompleteLayout(ArrayRef<Value> addends) {
  for (Value addend : llvm::reverse(addends)) {
    auto found = dist.find(addend);
    if (found != dist.end() && found->second.slotSums)
      continue;
    if (std::optional<Piece> layout = layoutOf(addend);
        layout && !layout->partial)
      return layout;
  }
  return std::nullopt;
}

LogicalResult SpmdPartitioner::deferSum(Operation *op) {
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic || op->hasAttr(SoapDialect::getConfigAttrName()) ||
      !generic.hasPureTensorSemantics() || !isPlainAdd(generic))
    return failure();
  // Beside partial sums, an addend whole on every device is deferred too:
  // the partial sums complete where the reader needs them (a
  // reduce-scatter to its blocks, not an all-reduce of the whole), the
  // whole addend sliced there, as the simulator's gradient edges price it.
  bool besidePartialSums = llvm::any_of(generic.getDpsInputs(), [&](Value v) {
    std::optional<Piece> layout = layoutOf(v);
    return layout && layout->partial == ReductionKind::sum;
  });
  SmallVector<Value> addends;
  for (Value input : generic.getDpsInputs()) {
    auto found = dist.find(input);
    if (found == dist.end())
      return failure();
    const DistValue &value = found->second;
    if (!value.addends.empty()) {
      llvm::append_range(addends, value.addends);
      continue;
    }
    if (value.rebuiltByReaders())
      return failure();
    auto type = cast<RankedTensorType>(input.getType());
    std::optional<Piece> layout = layoutOf(input);
    // Partial sums (a split reduction's gradient) move like the others:
    // each completes where the reader needs it.
    if (layout ? (layout->partial && *layout->partial != ReductionKind::sum) ||
                     (covers(*layout, everywhere(type)) && !besidePartialSums)
               : !hasOnlyComplete(value))
      return failure();
    addends.push_back(input);
  }
  // Addends in one layout are added where they are. A reader without a
  // config adds them where the last complete addend with one layout is;
  // where all are partial sums, whole on every device that holds any
  // (allReducePartialSums: one all-reduce, as the simulator synchronizes
  // a shared bias). Otherwise (pieces of an op with several tasks on a
  // device) only readers with configs take the sum, each addend brought
  // to their blocks (as the simulator moves each reader's gradient).
  std::optional<Piece> first = lastCompleteLayout(addends);
  std::optional<Piece> firstLayout = layoutOf(addends.front());
  if (llvm::all_of(addends, [&](Value addend) {
        std::optional<Piece> layout = layoutOf(addend);
        return layout && firstLayout && sameLayout(*layout, *firstLayout);
      }))
    return failure();
  // A reader that is itself an adjoint sum takes the addends on (the sum
  // of a value's gradients from several readers, added in turn).
  auto takesAddends = [](Operation *user) {
    if (user->hasAttr(SoapDialect::getConfigAttrName()))
      return isa<linalg::LinalgOp>(user);
    auto sum = dyn_cast<linalg::GenericOp>(user);
    return sum && sum.hasPureTensorSemantics() && isPlainAdd(sum);
  };
  if (!first && !onlyPartialSums(addends, nullptr) &&
      !llvm::all_of(op->getResult(0).getUsers(), takesAddends))
    return failure();
  DistValue sum;
  sum.addends = std::move(addends);
  sum.sumOp = op;
  dist[op->getResult(0)] = std::move(sum);
  return success();
}

/// Where a value that is zero elsewhere can become an ordinary one with the
/// least movement: on each device, the smallest box around what it holds,
/// whole along the dimensions no device splits, when those boxes are of
/// one shape and tile the tensor (the gradients of the time steps of a
/// batch-split sequence: each device's rows of all of them, assembled
/// locally; a batch-split first token's gradient: each device's rows, zeros
/// for the other tokens); else the whole tensor everywhere.
DeviceBoxes SpmdPartitioner::completeLayout(const DistValue &value,
                                            RankedTensorType type) const {
  // One rule with the simulator's (a gradient of a slice: its parameter's
  // synchronization).
  std::vector<layout::Layout> pieces;
  for (const Piece &piece : value.pieces)
    pieces.push_back(layoutOfBoxes(piece.boxes));
  return boxesOfLayout(layout::completedZerosElsewhere(
      pieces,
      std::vector<int64_t>(type.getShape().begin(), type.getShape().end())));
}

void SpmdPartitioner::normalizeOperands(Operation *op, bool viewsByConfig) {
  if (viewsByConfig && isConfiguredView(op))
    return; // partitionByConfig
  // A slice without a config of a value zero elsewhere (a replicated
  // pad's gradient) takes its region alone (replicateSlice), as the
  // simulator's gradient edge moves only what the slice reads.
  if (auto extract = dyn_cast<tensor::ExtractSliceOp>(op);
      extract && !op->hasAttr(SoapDialect::getConfigAttrName())) {
    auto found = dist.find(extract.getSource());
    if (found != dist.end() && found->second.zerosElsewhere &&
        found->second.addends.empty())
      return;
  }
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  // A linalg op reads its inputs through materialize when its config or,
  // without one, another input that is split or on a device subset
  // decides where it runs (an adjoint sum of a gradient that is zero
  // elsewhere, such as a strided convolution's input gradient, and one in
  // an ordinary layout: only the nonzero part moves, to the other's
  // devices, as the simulator's gradient edges move it).
  bool readsByPlan = linalgOp && op->hasAttr(SoapDialect::getConfigAttrName());
  if (linalgOp && !readsByPlan)
    for (Value input : linalgOp.getDpsInputs()) {
      auto type = dyn_cast<RankedTensorType>(input.getType());
      auto found = dist.find(input);
      if (!type || found == dist.end() || found->second.zerosElsewhere ||
          found->second.splat || !found->second.addends.empty())
        continue;
      std::optional<Piece> layout = layoutOf(input);
      readsByPlan |=
          layout && !layout->partial && !covers(*layout, everywhere(type));
    }
  for (OpOperand &operand : op->getOpOperands()) {
    auto found = dist.find(operand.get());
    if (found == dist.end() ||
        (!found->second.zerosElsewhere && found->second.addends.empty()))
      continue;
    if (readsByPlan && !linalgOp.isDpsInit(&operand))
      continue;
    if (!found->second.addends.empty()) {
      // Added where the last addend is, the one the backward pass made
      // last (a weight's gradient from its first reader: the update then
      // runs, and the weight stays, where the next step's forward pass
      // starts with it). An addend whose tasks share a device has no one
      // layout, and a partial one is no place to add: then the last
      // complete one with a layout (deferSum keeps one).
      std::optional<Piece> target = lastCompleteLayout(found->second.addends);
      b.setInsertionPoint(op);
      if (target)
        materializeSum(operand.get(), target->boxes, op->getLoc(),
                       /*realize=*/true);
      else
        allReducePartialSums(operand.get(), op->getLoc());
      continue;
    }
    auto type = cast<RankedTensorType>(operand.get().getType());
    DeviceBoxes target = completeLayout(found->second, type);
    b.setInsertionPoint(op);
    Value local = materialize(operand.get(), target, op->getLoc());
    DistValue &value = dist[operand.get()];
    value.pieces = {Piece{local, std::move(target),
                          SmallVector<int64_t>(numDevices, 0), std::nullopt}};
    value.zerosElsewhere = false;
  }
}

LogicalResult
SpmdPartitioner::followInsertAlongWholeDims(tensor::InsertSliceOp insert,
                                            ConfigAttr config) {
  RankedTensorType sourceType = insert.getSourceType();
  RankedTensorType destType = insert.getDestType();
  if (!sourceType.hasStaticShape() || !destType.hasStaticShape() ||
      sourceType.getRank() != destType.getRank() ||
      insert.getDroppedDims().any())
    return failure();
  ArrayRef<int64_t> offsets = insert.getStaticOffsets();
  ArrayRef<int64_t> strides = insert.getStaticStrides();
  std::string why;
  FailureOr<Plan> plan = planFromConfig(sourceType.getShape(), config, why);
  if (failed(plan))
    return failure();
  for (auto [dim, degree] : llvm::enumerate(plan->degrees))
    if (degree != 1 && (offsets[dim] != 0 || strides[dim] != 1 ||
                        sourceType.getDimSize(dim) != destType.getDimSize(dim)))
      return failure();
  // Per slot and device, its block of the source, and the same block of
  // the destination, whole along the dimensions the config does not split.
  AffineMap identity =
      AffineMap::getMultiDimIdentityMap(sourceType.getRank(), b.getContext());
  struct Slot {
    DeviceBoxes source, dest;
    SmallVector<int64_t> activeDevices;
  };
  SmallVector<Slot, 2> slots;
  SmallVector<int64_t> localShape;
  for (ArrayRef<int64_t> tasks : plan->slots) {
    Slot &slot = slots.emplace_back();
    slot.source.resize(numDevices);
    slot.dest.resize(numDevices);
    for (auto [device, task] : llvm::enumerate(tasks)) {
      if (task < 0)
        continue;
      std::optional<Box> block =
          regionOf(identity, sourceType.getShape(), plan->degrees, task,
                   sourceType.getShape());
      if (!block)
        return failure();
      Box whole = wholeBox(destType);
      for (auto [dim, degree] : llvm::enumerate(plan->degrees))
        if (degree != 1) {
          whole.offsets[dim] = block->offsets[dim];
          whole.sizes[dim] = block->sizes[dim];
        }
      if (!localShape.empty() && whole.sizes != localShape)
        return failure();
      localShape = whole.sizes;
      slot.source[device] = std::move(*block);
      slot.dest[device] = std::move(whole);
      slot.activeDevices.push_back(device);
    }
    if (slot.activeDevices.empty())
      return failure();
  }
  Location loc = insert.getLoc();
  auto localType = RankedTensorType::get(localShape, destType.getElementType());
  DistValue result;
  for (auto [slot, tasks] : llvm::zip(slots, plan->slots)) {
    b.setInsertionPoint(insert);
    Value source = materialize(insert.getSource(), slot.source, loc);
    Value dest = materialize(insert.getDest(), slot.dest, loc);
    Value local = onDevices(slot.activeDevices, localType, loc, [&]() -> Value {
      return tensor::InsertSliceOp::create(
          b, loc, source, dest, insert.getMixedOffsets(),
          getAsIndexOpFoldResult(
              b.getContext(),
              cast<RankedTensorType>(source.getType()).getShape()),
          insert.getMixedStrides());
    });
    Piece piece{local, std::move(slot.dest), {}, std::nullopt};
    piece.tasks.append(tasks.begin(), tasks.end());
    result.pieces.push_back(std::move(piece));
  }
  DistValue &value = dist[insert.getResult()];
  value.pieces = std::move(result.pieces);
  value.zerosElsewhere = false;
  return success();
}

Value SpmdPartitioner::onDevices(ArrayRef<int64_t> devices, Type type,
                                 Location loc,
                                 llvm::function_ref<Value()> build) {
  if (static_cast<int64_t>(devices.size()) == numDevices)
    return build();
  OpBuilder::InsertionGuard insertion(b);
  auto guard = OnDevicesOp::create(b, loc, TypeRange{type},
                                   b.getDenseI64ArrayAttr(devices));
  b.setInsertionPointToStart(&guard.getBody().emplaceBlock());
  YieldOp::create(b, loc, build());
  return guard.getResult(0);
}

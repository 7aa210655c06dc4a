//===- SpmdViews.cpp - reshapes, slices, pads, concats, transposes -------===//
//
// The per-op rewrites of ops that move data without loops of their own:
// each device reshapes, slices, pads or concatenates its own part when
// the op leaves the split dimensions alone, and a transpose without a
// config stays lazy (each reader transposes the part it reads) until an
// op that passes split dimensions through needs pieces of its own.
//
//===----------------------------------------------------------------------===//

#include "SpmdPartitioner.h"

#include "Reductions.h"

#include "soap/Dialect/PartitionableInterface.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace soap;
using namespace soap::partition;

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
    pieces.push_back(
        Piece{local, std::move(boxes), piece.tasks, piece.partial});
  }
  dist[original].pieces = std::move(pieces);
}

/// collapse_shape/expand_shape of a value split only along the outermost
/// dimension of each group: the local values reshape the same way, and
/// partial sums stay partial sums.
LogicalResult SpmdPartitioner::partitionReshape(Operation *op) {
  if (!isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(op))
    return failure();
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
  if (!isa<tensor::PadOp, tensor::ExtractSliceOp, tensor::InsertSliceOp>(op))
    return failure();
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
      identity[d] =
          alone(extract.getStaticOffsets()[d], extract.getStaticSizes()[d],
                extract.getStaticStrides()[d], sourceType.getDimSize(d));
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
      bool whole =
          box->offsets[d] == 0 && box->sizes[d] == sourceType.getDimSize(d);
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
  bool subset = llvm::any_of(
      piece.boxes, [](const std::optional<Box> &box) { return !box; });
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
LogicalResult SpmdPartitioner::partitionConcat(Operation *concatOp) {
  auto op = dyn_cast<tensor::ConcatOp>(concatOp);
  if (!op)
    return failure();
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
      if (box &&
          (box->offsets[dim] != 0 || box->sizes[dim] != type.getDimSize(dim)))
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

LogicalResult SpmdPartitioner::partitionByConfig(Operation *op) {
  auto config = op->getAttrOfType<ConfigAttr>(SoapDialect::getConfigAttrName());
  auto partitionable = dyn_cast<PartitionableOpInterface>(op);
  if (!config || !partitionable || op->getNumResults() != 1 ||
      !isa<tensor::ExtractSliceOp, tensor::ExpandShapeOp,
           tensor::CollapseShapeOp, tensor::ConcatOp, tensor::InsertSliceOp,
           tensor::PadOp>(op))
    return failure();
  // An insertion into zeros (a slice's gradient) at stride 1: each device
  // holds its blocks where they go, and the rest is zeros that nobody
  // holds, as the simulator's gradient edges have it. Other insertions (a
  // transposed convolution's strided spread of its adjoint) and pads
  // follow a config of one task: whole on its device.
  auto insert = dyn_cast<tensor::InsertSliceOp>(op);
  bool intoZeros =
      insert && isIdentityFill(insert.getDest(), ReductionKind::sum) &&
      llvm::all_of(insert.getStaticStrides(), [](int64_t s) { return s == 1; });
  if ((insert && !intoZeros) || isa<tensor::PadOp>(op)) {
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
  // simulator keeps the config's layout there too.)
  if (llvm::all_of(op->getOperands(), [&](Value operand) {
        auto found = dist.find(operand);
        if (found == dist.end())
          return false;
        if (found->second.splat)
          return true;
        auto type = cast<RankedTensorType>(operand.getType());
        return !found->second.pieces.empty() &&
               covers(found->second.pieces.front(), everywhere(type));
      }))
    return failure();
  SmallVector<int64_t> sizes = partitionable.getLoopSizes();
  std::string why;
  FailureOr<Plan> plan = planFromConfig(sizes, config, why);
  // One task per device: the local op is one op on blocks.
  if (failed(plan) || plan->slots.size() != 1)
    return failure();
  ArrayRef<int64_t> slot = plan->slots.front();
  // A concatenation split along its dimension: each task's block must lie
  // in one input, which is all it reads (the other inputs' indices are
  // outside them, as the simulator's empty boxes say).
  auto concat = dyn_cast<tensor::ConcatOp>(op);
  bool splitConcat = concat && plan->degrees[concat.getDim()] != 1;

  // Each task's region of every operand it reads and of its result.
  SmallVector<OperandAccess> accesses = partitionable.getOperandAccesses();
  SmallVector<DeviceBoxes> reads(op->getNumOperands(), DeviceBoxes(numDevices));
  DeviceBoxes written(numDevices);
  bool describesResult = false;
  SmallVector<int64_t> activeDevices;
  for (auto [device, task] : llvm::enumerate(slot)) {
    if (task < 0)
      continue;
    activeDevices.push_back(device);
    for (const OperandAccess &access : accesses) {
      if (access.isDestination)
        continue; // an insertion's zeros: nobody holds them
      auto type = cast<RankedTensorType>(access.value.getType());
      // A concatenation's task reads the part of each input its block
      // covers (none of some when it is split along its dimension).
      bool isInput = concat && access.value != op->getResult(0);
      std::optional<Box> region = regionOf(access.map, sizes, plan->degrees,
                                           task, type.getShape(), isInput);
      if (!region && splitConcat && isInput)
        continue; // checked below: the task reads one input
      if (!region)
        return failure();
      if (access.value == op->getResult(0)) {
        written[device] = std::move(region);
        describesResult = true;
        continue;
      }
      for (OpOperand &operand : op->getOpOperands())
        if (operand.get() == access.value)
          reads[operand.getOperandNumber()][device] = *region;
    }
  }
  if (!describesResult || activeDevices.empty())
    return failure();
  SmallVector<int64_t> localShape = written[activeDevices.front()]->sizes;
  for (int64_t device : activeDevices)
    if (written[device]->sizes != localShape)
      return failure();
  // Per device, the input of a split concatenation it reads.
  SmallVector<int64_t> inputOf(numDevices, -1);
  for (int64_t device : activeDevices) {
    for (auto [number, boxes] : llvm::enumerate(reads)) {
      if (insert && number == insert.getDestMutable().getOperandNumber())
        continue;
      if (boxes[device] && splitConcat) {
        if (inputOf[device] >= 0 || boxes[device]->sizes[concat.getDim()] !=
                                        written[device]->sizes[concat.getDim()])
          return failure(); // a block across inputs
        inputOf[device] = number;
      } else if (!boxes[device] && !splitConcat) {
        return failure(); // an operand its loops do not describe
      }
    }
    if (splitConcat && inputOf[device] < 0)
      return failure();
  }
  // Reshapes: the blocks must be contiguous in the collapsed shape.
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op);
      expand && !contiguousGroups(expand.getReassociationIndices(), localShape,
                                  resultType.getShape()))
    return failure();
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op);
      collapse && !contiguousGroups(collapse.getReassociationIndices(),
                                    reads[0][activeDevices.front()]->sizes,
                                    collapse.getSrcType().getShape()))
    return failure();

  // Communication first: a guard below must not hold a collective.
  Location loc = op->getLoc();
  b.setInsertionPoint(op);
  SmallVector<Value> locals;
  for (auto [number, operand] : llvm::enumerate(op->getOperands())) {
    if ((splitConcat &&
         llvm::none_of(reads[number],
                       [](const auto &box) { return box.has_value(); })) ||
        (insert && number == insert.getDestMutable().getOperandNumber())) {
      locals.push_back(Value()); // no task reads it
      continue;
    }
    realizeTranspose(operand, op);
    locals.push_back(materialize(operand, reads[number], loc));
  }
  OnDevicesOp guard;
  OpBuilder::InsertionGuard insertion(b);
  auto localType =
      RankedTensorType::get(localShape, resultType.getElementType());
  if (static_cast<int64_t>(activeDevices.size()) != numDevices) {
    guard = OnDevicesOp::create(b, loc, TypeRange{localType},
                                b.getDenseI64ArrayAttr(activeDevices));
    b.setInsertionPointToStart(&guard.getBody().emplaceBlock());
  }
  auto indexAttrs = [&](ArrayRef<int64_t> values) {
    return llvm::to_vector(llvm::map_range(
        values, [&](int64_t v) -> OpFoldResult { return b.getIndexAttr(v); }));
  };
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
      sliceSizes.push_back(dropped.test(d) ? 1 : localShape[next++]);
    local = tensor::ExtractSliceOp::create(
        b, loc, localType, locals[0],
        indexAttrs(SmallVector<int64_t>(sourceShape.size(), 0)),
        indexAttrs(sliceSizes), indexAttrs(extract.getStaticStrides()));
  } else if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
    local = tensor::ExpandShapeOp::create(b, loc, localType, locals[0],
                                          expand.getReassociationIndices());
  } else if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op)) {
    local = tensor::CollapseShapeOp::create(b, loc, localType, locals[0],
                                            collapse.getReassociationIndices());
  } else if (insert) {
    // The block itself, with the unit dimensions the insertion drops.
    local = locals[0];
    if (cast<RankedTensorType>(local.getType()).getRank() !=
        static_cast<int64_t>(localShape.size()))
      local = tensor::InsertSliceOp::create(
          b, loc, local,
          tensor::EmptyOp::create(b, loc, localShape,
                                  resultType.getElementType()),
          indexAttrs(SmallVector<int64_t>(localShape.size(), 0)),
          indexAttrs(localShape),
          indexAttrs(SmallVector<int64_t>(localShape.size(), 1)));
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
      for (int64_t device : activeDevices)
        flags[device] = inputOf[device] == static_cast<int64_t>(number);
      local =
          arith::SelectOp::create(b, loc, deviceIn(flags, loc), input, local);
    }
  }
  if (guard) {
    YieldOp::create(b, loc, local);
    local = guard.getResult(0);
  }
  Piece piece{local, std::move(written), {}, std::nullopt};
  for (int64_t task : slot)
    piece.tasks.push_back(task);
  DistValue &result = dist[op->getResult(0)];
  result.pieces.push_back(std::move(piece));
  result.zerosElsewhere = static_cast<bool>(insert);
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
  OnDevicesOp guard;
  OpBuilder::InsertionGuard insertion(b);
  if (numDevices > 1) {
    guard = OnDevicesOp::create(b, loc, TypeRange{resultType},
                                b.getDenseI64ArrayAttr({device}));
    b.setInsertionPointToStart(&guard.getBody().emplaceBlock());
  }
  Operation *local = b.clone(*op, mapping);
  local->removeAttr(SoapDialect::getConfigAttrName());
  Value result = local->getResult(0);
  if (guard) {
    YieldOp::create(b, loc, result);
    result = guard.getResult(0);
  }
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
        for (const std::optional<Box> &y : b.boxes) {
          if (!x || !y)
            continue;
          bool meet = true;
          for (size_t d = 0; d < x->sizes.size(); ++d)
            meet &= x->offsets[d] < y->offsets[d] + y->sizes[d] &&
                    y->offsets[d] < x->offsets[d] + x->sizes[d];
          if (meet)
            return failure(); // the parts overlap: an add must run
        }
  DistValue sum;
  sum.zerosElsewhere = true;
  for (const DistValue *part : parts)
    llvm::append_range(sum.pieces, part->pieces);
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
  int64_t rank = type.getRank();
  DeviceBoxes around(numDevices);
  for (const Piece &piece : value.pieces)
    for (auto [device, box] : llvm::enumerate(piece.boxes)) {
      if (!box)
        continue;
      if (!around[device]) {
        around[device] = *box;
        continue;
      }
      Box &b = *around[device];
      for (int64_t d = 0; d < rank; ++d) {
        int64_t lo = std::min(b.offsets[d], box->offsets[d]);
        int64_t hi = std::max(b.offsets[d] + b.sizes[d],
                              box->offsets[d] + box->sizes[d]);
        b.offsets[d] = lo;
        b.sizes[d] = hi - lo;
      }
    }
  // Dimensions along which every device holds the same range are not
  // split: each device holds all of them (zeros where no piece is).
  for (int64_t d = 0; d < rank; ++d) {
    std::optional<std::pair<int64_t, int64_t>> range;
    bool same = true;
    for (const std::optional<Box> &box : around) {
      if (!box)
        continue;
      std::pair<int64_t, int64_t> mine{box->offsets[d], box->sizes[d]};
      same &= !range || *range == mine;
      range = mine;
    }
    if (same)
      for (std::optional<Box> &box : around)
        if (box) {
          box->offsets[d] = 0;
          box->sizes[d] = type.getDimSize(d);
        }
  }
  SmallVector<Box> distinct;
  for (const std::optional<Box> &box : around)
    if (box && !llvm::is_contained(distinct, *box))
      distinct.push_back(*box);
  auto volume = [](const Box &box) {
    int64_t v = 1;
    for (int64_t s : box.sizes)
      v *= s;
    return v;
  };
  auto meet = [&](const Box &x, const Box &y) {
    for (int64_t d = 0; d < rank; ++d)
      if (x.offsets[d] >= y.offsets[d] + y.sizes[d] ||
          y.offsets[d] >= x.offsets[d] + x.sizes[d])
        return false;
    return true;
  };
  bool tiles = !distinct.empty();
  int64_t covered = 0;
  for (size_t i = 0; i < distinct.size() && tiles; ++i) {
    tiles &= distinct[i].sizes == distinct.front().sizes;
    for (size_t j = i + 1; j < distinct.size() && tiles; ++j)
      tiles &= !meet(distinct[i], distinct[j]);
    covered += volume(distinct[i]);
  }
  if (tiles && covered == type.getNumElements())
    return around;
  return everywhere(type);
}

void SpmdPartitioner::normalizeOperands(Operation *op) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  bool readsByConfig =
      linalgOp && op->hasAttr(SoapDialect::getConfigAttrName());
  for (OpOperand &operand : op->getOpOperands()) {
    auto found = dist.find(operand.get());
    if (found == dist.end() || !found->second.zerosElsewhere)
      continue;
    if (readsByConfig && !linalgOp.isDpsInit(&operand))
      continue;
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

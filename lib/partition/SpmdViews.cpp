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

using namespace mlir;
using namespace soap;
using namespace soap::partition;

DeviceBoxes soap::partition::transposedBoxes(const DeviceBoxes &input,
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
/// dimension of each group that is not a unit dimension: the local values
/// reshape the same way, and partial sums stay partial sums.
LogicalResult SpmdPartitioner::partitionReshape(Operation *op) {
  if (!isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(op))
    return failure();
  Value source = op->getOperand(0);
  realizeTranspose(source, op);
  auto sourceType = cast<RankedTensorType>(source.getType());
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  auto found = dist.find(source);
  if (found == dist.end() || found->second.splat)
    return failure();
  // The piece its producer wrote or, where tasks share a device (the
  // pieces of an op with several tasks on one, each complete), each of its
  // pieces: each device reshapes what it holds, as the simulator's edges
  // move each of the reshape's blocks where its reader needs it. Where a
  // device's pieces tile the whole tensor, the reshape runs whole there
  // (runOnHolders), as the simulator joins them (joinedOnHolders).
  SmallVector<Piece> pieces; // copied: dist may grow
  if (const Piece *only = onlyProducedPiece(found->second)) {
    pieces.push_back(*only);
  } else {
    const DistValue &value = found->second;
    if (value.rebuiltByReaders() || value.spread || value.zerosElsewhere ||
        value.slotSums || !value.addends.empty() || !hasOnlyComplete(value))
      return failure();
    if (std::optional<Piece> tiled = completedLayoutOf(source);
        tiled && llvm::any_of(tiled->boxes, [&](const std::optional<Box> &box) {
          return box && *box == wholeBox(sourceType);
        }))
      return failure();
    for (const Piece &piece : value.pieces)
      if (!piece.derived)
        pieces.push_back(piece);
  }
  bool collapse = isa<tensor::CollapseShapeOp>(op);
  SmallVector<ReassociationIndices> groups =
      collapse ? cast<tensor::CollapseShapeOp>(op).getReassociationIndices()
               : cast<tensor::ExpandShapeOp>(op).getReassociationIndices();
  // The wide side has one dimension per group member, the narrow side one
  // per group.
  RankedTensorType wide = collapse ? sourceType : resultType;
  // A piece's boxes on the other side and its local shape there.
  auto reshapedBoxes =
      [&](const Piece &piece,
          DeviceBoxes &boxes) -> std::optional<SmallVector<int64_t>> {
    boxes.assign(numDevices, std::nullopt);
    std::optional<SmallVector<int64_t>> localShape;
    for (auto [device, box] : llvm::enumerate(piece.boxes)) {
      if (!box)
        continue;
      Box out;
      for (auto [g, group] : llvm::enumerate(groups)) {
        // Unit dimensions ahead of the group's first other one hold
        // nothing to split (torch-mlir's [1, N, D] of an [N, D] gradient):
        // the split is along that first other dimension.
        size_t outer = 0;
        while (outer + 1 < group.size() && wide.getDimSize(group[outer]) == 1)
          ++outer;
        int64_t inner = 1;
        for (int64_t dim : llvm::drop_begin(group, outer + 1))
          inner *= wide.getDimSize(dim);
        if (collapse) {
          for (int64_t dim : llvm::drop_begin(group, outer + 1))
            if (box->sizes[dim] != wide.getDimSize(dim))
              return std::nullopt;
          out.offsets.push_back(box->offsets[group[outer]] * inner);
          out.sizes.push_back(box->sizes[group[outer]] * inner);
        } else {
          int64_t offset = box->offsets[g], size = box->sizes[g];
          if (offset % inner != 0 || size % inner != 0)
            return std::nullopt;
          for (size_t i = 0; i < group.size(); ++i) {
            bool split = i == outer;
            out.offsets.push_back(split ? offset / inner : 0);
            out.sizes.push_back(split ? size / inner
                                      : wide.getDimSize(group[i]));
          }
        }
      }
      if (localShape && *localShape != out.sizes)
        return std::nullopt;
      localShape = out.sizes;
      boxes[device] = std::move(out);
    }
    return localShape;
  };
  SmallVector<DeviceBoxes> boxesOf(pieces.size());
  SmallVector<SmallVector<int64_t>> shapes;
  for (auto [piece, boxes] : llvm::zip(pieces, boxesOf)) {
    std::optional<SmallVector<int64_t>> shape = reshapedBoxes(piece, boxes);
    if (!shape)
      return failure();
    shapes.push_back(std::move(*shape));
  }
  b.setInsertionPoint(op);
  for (auto [piece, boxes, shape] : llvm::zip(pieces, boxesOf, shapes)) {
    auto localType = RankedTensorType::get(shape, resultType.getElementType());
    Value local;
    if (collapse)
      local = tensor::CollapseShapeOp::create(b, op->getLoc(), localType,
                                              piece.local, groups);
    else
      local = tensor::ExpandShapeOp::create(b, op->getLoc(), localType,
                                            piece.local, groups);
    dist[op->getResult(0)].pieces.push_back(
        Piece{local, std::move(boxes), piece.tasks, piece.partial});
  }
  return success();
}

/// An insertion into zeros at stride 1 (the gradient of a slice, or of the
/// rows and columns a strided window reads) of a value in complete pieces:
/// the pieces stay where they are, their boxes shifted to where they go,
/// and the rest is zeros nobody holds (DistValue::zerosElsewhere), as the
/// simulator's gradient edges have it: a reader receives the nonzero part
/// of its block only.
LogicalResult SpmdPartitioner::embedIntoZeros(tensor::InsertSliceOp insert) {
  RankedTensorType sourceType = insert.getSourceType();
  if (!sourceType.hasStaticShape() || !insert.getType().hasStaticShape() ||
      !insertionIntoZeros(insert.getResult()) ||
      llvm::any_of(insert.getStaticStrides(), [](int64_t s) { return s != 1; }))
    return failure();
  auto found = dist.find(insert.getSource());
  if (found == dist.end() || found->second.rebuiltByReaders() ||
      found->second.spread || !found->second.addends.empty() ||
      !hasOnlyComplete(found->second))
    return failure();
  ArrayRef<int64_t> offsets = insert.getStaticOffsets();
  DistValue result;
  for (const Piece &piece : found->second.pieces) {
    if (piece.derived)
      continue;
    Piece moved = piece;
    for (std::optional<Box> &box : moved.boxes)
      if (box)
        for (auto [d, offset] : llvm::enumerate(offsets))
          box->offsets[d] += offset;
    result.pieces.push_back(std::move(moved));
  }
  result.zerosElsewhere = true;
  dist[insert.getResult()] = std::move(result);
  return success();
}

LogicalResult
SpmdPartitioner::replicateIntoZeros(tensor::InsertSliceOp insert) {
  // insertionIntoZeros: static offsets and strides, no dropped dimensions.
  RankedTensorType sourceType = insert.getSourceType();
  if (!sourceType.hasStaticShape() || !insertionIntoZeros(insert.getResult()) ||
      !dist.count(insert.getSource()) ||
      llvm::any_of(insert.getStaticStrides(), [](int64_t s) { return s != 1; }))
    return failure();
  b.setInsertionPoint(insert);
  Value local =
      materialize(insert.getSource(), everywhere(sourceType), insert.getLoc());
  Box region{llvm::to_vector(insert.getStaticOffsets()),
             llvm::to_vector(sourceType.getShape())};
  DistValue result;
  result.pieces.push_back(Piece{local, DeviceBoxes(numDevices, region),
                                SmallVector<int64_t>(numDevices, 0),
                                std::nullopt});
  result.zerosElsewhere = true;
  dist[insert.getResult()] = std::move(result);
  return success();
}

Box soap::partition::sliceRegion(tensor::ExtractSliceOp extract) {
  Box region = wholeBox(extract.getSourceType());
  for (auto [d, offset] : llvm::enumerate(extract.getStaticOffsets())) {
    region.offsets[d] = offset;
    region.sizes[d] =
        (extract.getStaticSizes()[d] - 1) * extract.getStaticStrides()[d] + 1;
  }
  return region;
}

/// tensor.pad, extract_slice and insert_slice of a value split only along
/// dimensions the op leaves alone (no padding; the slice covers the whole
/// dimension at stride 1; rank-reducing slices drop only whole dimensions):
/// each device pads or slices its own part.
LogicalResult SpmdPartitioner::partitionPassThrough(Operation *op) {
  if (!isa<tensor::PadOp, tensor::ExtractSliceOp, tensor::InsertSliceOp>(op))
    return failure();
  if (auto insert = dyn_cast<tensor::InsertSliceOp>(op);
      insert && succeeded(embedIntoZeros(insert)))
    return success();
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
  if (found == dist.end() || found->second.splat)
    return failure();
  const Piece *producedPiece = onlyProducedPiece(found->second);
  if (!producedPiece || producedPiece->partial)
    return failure();
  auto extractOp = dyn_cast<tensor::ExtractSliceOp>(op);
  std::optional<Box> sliceRead;
  if (extractOp)
    sliceRead = sliceRegion(extractOp);
  // The result's boxes when each device runs the op on its block of
  // `piece`; none when a device's block does not hold what the op needs.
  // A dimension the op does not leave alone must be whole in the block,
  // except for an extract_slice, whose block need only hold the slice (at
  // the same offset on every device; `offsets`: the block's).
  struct Local {
    DeviceBoxes boxes;
    SmallVector<int64_t> shape, sourceShape, offsets;
    bool split = false;
    int64_t holders = 0;
  };
  auto localOf = [&](const Piece &piece) -> std::optional<Local> {
    Local local;
    local.boxes.resize(numDevices);
    for (auto [device, box] : llvm::enumerate(piece.boxes)) {
      if (!box)
        continue;
      Box out = wholeBox(resultType);
      SmallVector<int64_t> offsets(sourceRank, 0);
      for (int64_t d = 0; d < sourceRank; ++d) {
        bool whole =
            box->offsets[d] == 0 && box->sizes[d] == sourceType.getDimSize(d);
        if (identity[d]) {
          if (resultDim[d] >= 0) {
            out.offsets[resultDim[d]] = box->offsets[d];
            out.sizes[resultDim[d]] = box->sizes[d];
          }
          local.split |= !whole;
          continue;
        }
        if (whole)
          continue;
        if (!extractOp || sliceRead->offsets[d] < box->offsets[d] ||
            sliceRead->offsets[d] + sliceRead->sizes[d] >
                box->offsets[d] + box->sizes[d])
          return std::nullopt;
        offsets[d] = box->offsets[d];
      }
      if (local.holders++ && offsets != local.offsets)
        return std::nullopt;
      local.offsets = std::move(offsets);
      local.shape = out.sizes;
      local.sourceShape = box->sizes;
      local.boxes[device] = std::move(out);
    }
    return local;
  };
  // The piece its producer wrote, or a copy an earlier reader received
  // that holds the slice on more devices (a convolution's input that its
  // forward read on another device, sliced again for its weight
  // gradient): the slice is then taken there and need not move again.
  // Among as many holders, such a copy that holds the slice's region and
  // nothing else wins (it was made for a reader of exactly that region:
  // the convolution whose weight gradient reads the slice reads it as its
  // forward did), then the produced piece.
  auto onlyTheSlice = [&](const Piece &piece) {
    return llvm::all_of(piece.boxes, [&](const std::optional<Box> &box) {
      return !box || sliceRead->contains(*box);
    });
  };
  int chosen = -1, bestRank = -1;
  std::optional<Local> best;
  for (auto [p, piece] : llvm::enumerate(found->second.pieces)) {
    bool produced = &piece == producedPiece;
    if (!produced && !(extractOp && piece.derived && !piece.partial))
      continue;
    std::optional<Local> local = localOf(piece);
    int rank = produced ? 1 : onlyTheSlice(piece) ? 2 : 0;
    if (local && (!best || local->holders > best->holders ||
                  (local->holders == best->holders && rank > bestRank))) {
      best = std::move(local);
      chosen = static_cast<int>(p);
      bestRank = rank;
    }
  }
  if (!best)
    return failure();
  const Piece piece = found->second.pieces[chosen]; // dist may grow
  DeviceBoxes boxes = std::move(best->boxes);
  SmallVector<int64_t> localShape = best->shape,
                       localSourceShape = best->sourceShape;
  bool split = best->split;
  // Nothing to gain when every device holds the whole source: run it
  // whole. A source held by some devices only stays there (the others skip
  // the op).
  bool subset =
      llvm::any_of(boxes, [](const std::optional<Box> &box) { return !box; });
  bool wholeSource = llvm::all_of(piece.boxes, [&](const auto &box) {
    return box && *box == wholeBox(sourceType);
  });
  if ((!split && !subset && wholeSource) || localShape.empty())
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
    SmallVector<int64_t> offsets(extract.getStaticOffsets());
    for (int64_t d = 0; d < sourceRank; ++d) {
      if (identity[d])
        sizes[d] = localSourceShape[d];
      else
        offsets[d] -= best->offsets[d];
    }
    local = tensor::ExtractSliceOp::create(b, loc, localType, piece.local,
                                           asAttrs(offsets), asAttrs(sizes),
                                           asAttrs(extract.getStaticStrides()));
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

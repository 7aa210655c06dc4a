//===- Reshard.cpp - distributed values move as lib/layout plans ----------===//
//
// Before an op, each operand is brought to the boxes the op's tasks read:
// the value's pieces and the target become lib/layout layouts, the reshard
// planner chooses the steps (nothing, a local slice, all_reduce,
// reduce_scatter, all_gather, all_to_all, broadcast, point-to-point
// transfers of the missing parts such as halos, or a whole all_reduce for
// irregular partial sums), and this file emits exactly those steps.
//
//===----------------------------------------------------------------------===//

#include "SpmdPartitioner.h"

#include "RankTables.h"
#include "Reductions.h"

#include "soap/layout/Layout.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace soap;
using namespace soap::partition;

/// The one piece the value has besides re-split copies (the piece its
/// producer wrote, or a whole copy made from several).
const Piece *soap::partition::onlyProducedPiece(const DistValue &value) {
  const Piece *only = nullptr;
  for (const Piece &piece : value.pieces) {
    if (piece.derived)
      continue;
    if (only)
      return nullptr;
    only = &piece;
  }
  return only;
}

bool soap::partition::hasOnlyComplete(const DistValue &value) {
  bool any = false;
  for (const Piece &piece : value.pieces) {
    if (piece.partial)
      return false;
    any |= !piece.derived;
  }
  return any;
}

bool soap::partition::sameLayout(const Piece &a, const Piece &b) {
  return a.boxes == b.boxes && a.partial == b.partial &&
         (!a.partial || layout::sameCopies(a.tasks, b.tasks));
}

Box soap::partition::wholeBox(RankedTensorType type) {
  return Box{SmallVector<int64_t>(type.getRank(), 0),
             SmallVector<int64_t>(type.getShape())};
}

//===----------------------------------------------------------------------===//
// Per-device constants
//===----------------------------------------------------------------------===//

Value SpmdPartitioner::perDevice(ArrayRef<int64_t> values, Location loc) {
  return valueOfRank(b, loc, rank, values);
}

Value SpmdPartitioner::deviceIn(ArrayRef<bool> flags, Location loc) {
  return flagOfRank(b, loc, rank, flags);
}

//===----------------------------------------------------------------------===//
// Distributed values
//===----------------------------------------------------------------------===//

bool soap::partition::covers(const Piece &piece, const DeviceBoxes &target) {
  if (piece.partial)
    return false;
  for (auto [have, want] : llvm::zip(piece.boxes, target))
    if (want && (!have || !(*have == *want)))
      return false;
  return true;
}

Value SpmdPartitioner::rebuildSplat(Operation *splat, RankedTensorType type,
                                    Location loc) {
  if (isa<tensor::EmptyOp>(splat))
    return tensor::EmptyOp::create(b, loc, type.getShape(),
                                   type.getElementType());
  if (auto fill = dyn_cast<linalg::FillOp>(splat)) {
    Value empty =
        tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
    return linalg::FillOp::create(
               b, loc, ValueRange{plain.lookupOrDefault(fill.getInputs()[0])},
               ValueRange{empty})
        .getResult(0);
  }
  auto constant = cast<arith::ConstantOp>(splat);
  auto dense = cast<SplatElementsAttr>(constant.getValue());
  return arith::ConstantOp::create(
      b, loc, SplatElementsAttr::get(type, dense.getSplatValue<Attribute>()));
}

/// Each device's offset of its `target` box within what it holds (`held`;
/// null: the whole tensor), one per dimension: constants where every
/// device agrees, else rank tables.
SmallVector<OpFoldResult> SpmdPartitioner::offsetsOf(const DeviceBoxes &target,
                                                     const DeviceBoxes *held,
                                                     int64_t rank,
                                                     Location loc) {
  SmallVector<SmallVector<int64_t>> offsets(numDevices,
                                            SmallVector<int64_t>(rank, 0));
  for (auto [device, box] : llvm::enumerate(target))
    if (box)
      for (int64_t dim = 0; dim < rank; ++dim)
        offsets[device][dim] =
            box->offsets[dim] - (held ? (*held)[device]->offsets[dim] : 0);
  return offsetsPerDevice(offsets, loc);
}

Value SpmdPartitioner::slice(Value source, const DeviceBoxes &target,
                             const DeviceBoxes *held, Location loc) {
  auto type = cast<RankedTensorType>(source.getType());
  const Box *any = nullptr;
  for (const std::optional<Box> &box : target)
    if (box)
      any = &*box;
  if (any->sizes == SmallVector<int64_t>(type.getShape()))
    return source;
  SmallVector<OpFoldResult> offsets =
      offsetsOf(target, held, type.getRank(), loc);
  SmallVector<OpFoldResult> sizes, strides(type.getRank(), b.getIndexAttr(1));
  for (int64_t size : any->sizes)
    sizes.push_back(b.getIndexAttr(size));
  auto sliceType = RankedTensorType::get(any->sizes, type.getElementType());
  return tensor::ExtractSliceOp::create(b, loc, sliceType, source, offsets,
                                        sizes, strides);
}

/// Every device adds its part of the pieces `pieceIds` into a tensor of the
/// combination's identity; an all_reduce over all devices adds them up.
/// A box held by several devices (copies) is counted once.
/// `x (+) y` elementwise, by the combination `kind`.
Value SpmdPartitioner::combineLocally(Value x, Value y, ReductionKind kind,
                                      Location loc) {
  auto localType = cast<RankedTensorType>(x.getType());
  AffineMap identity = b.getMultiDimIdentityMap(localType.getRank());
  Value init = tensor::EmptyOp::create(b, loc, localType.getShape(),
                                       localType.getElementType());
  return linalg::GenericOp::create(
             b, loc, TypeRange{localType}, ValueRange{x, y}, ValueRange{init},
             ArrayRef<AffineMap>{identity, identity, identity},
             SmallVector<utils::IteratorType>(localType.getRank(),
                                              utils::IteratorType::parallel),
             [&](OpBuilder &nb, Location l, ValueRange args) {
               Value r;
               bool isFloat = isa<FloatType>(args[0].getType());
               switch (kind) {
               case ReductionKind::max:
                 r = isFloat
                         ? arith::MaximumFOp::create(nb, l, args[0], args[1])
                               .getResult()
                         : arith::MaxSIOp::create(nb, l, args[0], args[1])
                               .getResult();
                 break;
               case ReductionKind::min:
                 r = isFloat
                         ? arith::MinimumFOp::create(nb, l, args[0], args[1])
                               .getResult()
                         : arith::MinSIOp::create(nb, l, args[0], args[1])
                               .getResult();
                 break;
               default:
                 r = isFloat ? arith::AddFOp::create(nb, l, args[0], args[1])
                                   .getResult()
                             : arith::AddIOp::create(nb, l, args[0], args[1])
                                   .getResult();
               }
               linalg::YieldOp::create(nb, l, r);
             })
      .getResult(0);
}

Value SpmdPartitioner::universalGather(DistValue &value, ArrayRef<int> pieceIds,
                                       RankedTensorType type, Location loc,
                                       ArrayRef<int64_t> group) {
  std::optional<ReductionKind> partial = value.pieces[pieceIds.front()].partial;
  ReductionKind kind = partial.value_or(ReductionKind::sum);
  Value whole = identityFilled(b, loc, type, kind);
  // Complete blocks are summed into zeros, so each element must come from
  // one block only: the pieces the producer wrote cover the tensor, and a
  // re-split copy that an earlier reader made (Piece::derived) overlaps
  // them, so copies count only where no producer's piece is given.
  bool producedGiven = llvm::any_of(pieceIds, [&](int id) {
    return !value.pieces[id].partial && !value.pieces[id].derived;
  });
  SmallVector<Box> seenBoxes;
  for (int id : pieceIds) {
    const Piece &piece = value.pieces[id];
    if (!piece.partial && piece.derived && producedGiven)
      continue;
    SmallVector<bool> contributes(numDevices, false);
    DenseSet<int64_t> seenTasks;
    for (int64_t device = 0; device < numDevices; ++device) {
      const std::optional<Box> &box = piece.boxes[device];
      if (!box)
        continue;
      if (piece.partial) {
        contributes[device] = seenTasks.insert(piece.tasks[device]).second;
      } else if (!llvm::is_contained(seenBoxes, *box)) {
        seenBoxes.push_back(*box);
        contributes[device] = true;
      }
    }
    if (llvm::none_of(contributes, [](bool c) { return c; }))
      continue;
    DeviceBoxes where;
    for (int64_t device = 0; device < numDevices; ++device)
      where.push_back(contributes[device] ? piece.boxes[device]
                                          : std::optional<Box>());
    auto localType = cast<RankedTensorType>(piece.local.getType());
    Value contribution = piece.local;
    if (piece.partial)
      contribution = combineLocally(slice(whole, where, nullptr, loc),
                                    piece.local, kind, loc);
    SmallVector<OpFoldResult> offsets =
        offsetsOf(where, nullptr, type.getRank(), loc);
    SmallVector<OpFoldResult> sizes, strides(type.getRank(), b.getIndexAttr(1));
    for (int64_t size : localType.getShape())
      sizes.push_back(b.getIndexAttr(size));
    Value updated = tensor::InsertSliceOp::create(b, loc, contribution, whole,
                                                  offsets, sizes, strides);
    if (llvm::all_of(contributes, [](bool c) { return c; }))
      whole = updated;
    else
      whole = arith::SelectOp::create(b, loc, deviceIn(contributes, loc),
                                      updated, whole);
  }
  SmallVector<int64_t> members =
      group.empty() ? allDevices() : SmallVector<int64_t>(group);
  return AllReduceOp::create(b, loc, type,
                             ReductionKindAttr::get(b.getContext(), kind),
                             whole, b.getDenseI64ArrayAttr(members));
}

Value SpmdPartitioner::materialize(Value original, const DeviceBoxes &target,
                                   Location loc) {
  auto type = cast<RankedTensorType>(original.getType());
  DistValue &value = dist[original];
  const Box *any = nullptr;
  for (const std::optional<Box> &box : target)
    if (box)
      any = &*box;
  RankedTensorType localType =
      any ? RankedTensorType::get(any->sizes, type.getElementType()) : type;
  if (value.splat)
    return rebuildSplat(value.splat, localType, loc);
  if (linalg::TransposeOp transpose = value.transpose) {
    // Result dimension i is input dimension perm[i].
    ArrayRef<int64_t> perm = transpose.getPermutation();
    DeviceBoxes inputBoxes(numDevices);
    for (auto [device, box] : llvm::enumerate(target)) {
      if (!box)
        continue;
      Box in{SmallVector<int64_t>(perm.size()),
             SmallVector<int64_t>(perm.size())};
      for (auto [i, p] : llvm::enumerate(perm)) {
        in.offsets[p] = box->offsets[i];
        in.sizes[p] = box->sizes[i];
      }
      inputBoxes[device] = std::move(in);
    }
    Value input = materialize(transpose.getInput(), inputBoxes, loc);
    Value init = tensor::EmptyOp::create(b, loc, localType.getShape(),
                                         localType.getElementType());
    return linalg::TransposeOp::create(b, loc, input, init, perm)
        .getResult()[0];
  }
  if (linalg::GenericOp flip = value.flip; flip && any)
    return materializeFlip(flip, target, localType, loc);
  if (tensor::InsertSliceOp spread = value.spread; spread && any)
    return materializeSpread(spread, target, localType, loc);
  if (tensor::ExtractSliceOp trim = value.trim; trim && any) {
    // The source's blocks at the slice's offsets (unit strides).
    DeviceBoxes sourceBoxes(numDevices);
    for (auto [device, box] : llvm::enumerate(target))
      if (box) {
        Box in = *box;
        for (auto [d, offset] : llvm::enumerate(trim.getStaticOffsets()))
          in.offsets[d] += offset;
        sourceBoxes[device] = std::move(in);
      }
    return materialize(trim.getSource(), sourceBoxes, loc);
  }
  if (!any) // no device reads it
    return tensor::EmptyOp::create(b, loc, type.getShape(),
                                   type.getElementType());
  if (!value.addends.empty())
    return materializeSum(original, target, loc);
  return reshard(original, target, loc);
}

bool soap::partition::isLazyTrim(tensor::ExtractSliceOp extract) {
  if (extract->hasAttr(SoapDialect::getConfigAttrName()) ||
      extract->hasAttr(SoapDialect::getReplicatedAttrName()) ||
      !extract.getSourceType().hasStaticShape() ||
      !extract.getType().hasStaticShape() ||
      extract.getType().getRank() != extract.getSourceType().getRank() ||
      !extract.getOffsets().empty() || !extract.getSizes().empty() ||
      !extract.getStrides().empty() ||
      llvm::any_of(extract.getStaticStrides(),
                   [](int64_t s) { return s != 1; }) ||
      extract->use_empty())
    return false;
  // Readers that take blocks: ops with configs, and lazy transposes (each
  // of their readers takes its blocks through them).
  return llvm::all_of(extract->getUsers(), [](Operation *user) {
    if (isa<linalg::TransposeOp>(user))
      return !user->hasAttr(SoapDialect::getConfigAttrName());
    return isa<linalg::LinalgOp>(user) &&
           user->hasAttr(SoapDialect::getConfigAttrName());
  });
}

bool soap::partition::isLazySpread(tensor::InsertSliceOp insert) {
  if (insert->hasAttr(SoapDialect::getConfigAttrName()) ||
      !insert->hasOneUse() || !insert.getSourceType().hasStaticShape() ||
      !insert.getType().hasStaticShape() ||
      !insertionIntoZeros(insert.getResult()))
    return false;
  OpOperand &use = *insert->getUses().begin();
  auto reader = dyn_cast<linalg::LinalgOp>(use.getOwner());
  if (!reader || !reader.isDpsInput(&use) ||
      !reader->hasAttr(SoapDialect::getConfigAttrName()) ||
      reader->hasAttr(SoapDialect::getTransposedConfigAttrName()))
    return false;
  // A convolution, or a generic that reads the spread through a window
  // (the training step's input gradient of a depthwise convolution or a
  // sum pooling: the adjoint spread, read at i + d * k).
  if (linalg::isaConvolutionOpInterface(reader))
    return true;
  return llvm::any_of(reader.getMatchingIndexingMap(&use).getResults(),
                      [](AffineExpr e) {
                        auto sum = dyn_cast<AffineBinaryOpExpr>(e);
                        return sum && sum.getKind() == AffineExprKind::Add &&
                               isa<AffineDimExpr>(sum.getLHS()) &&
                               !isa<AffineConstantExpr>(sum.getRHS());
                      });
}

Value SpmdPartitioner::materializeSpread(tensor::InsertSliceOp spread,
                                         const DeviceBoxes &target,
                                         RankedTensorType localType,
                                         Location loc) {
  RankedTensorType sourceType = spread.getSourceType();
  RankedTensorType type = spread.getType();
  int64_t rank = type.getRank();
  ArrayRef<int64_t> offsets = spread.getStaticOffsets(),
                    strides = spread.getStaticStrides();
  // A dimension the spread covers at stride 1 keeps the target's block;
  // the others must be whole in every block for a device to spread its
  // part of the adjoint alone.
  auto copied = [&](int64_t d) {
    return offsets[d] == 0 && strides[d] == 1 &&
           sourceType.getDimSize(d) == type.getDimSize(d);
  };
  DeviceBoxes sourceBoxes(numDevices);
  bool local = true;
  for (auto [device, box] : llvm::enumerate(target)) {
    if (!box)
      continue;
    Box in = wholeBox(sourceType);
    for (int64_t d = 0; d < rank; ++d) {
      if (copied(d)) {
        in.offsets[d] = box->offsets[d];
        in.sizes[d] = box->sizes[d];
      } else if (box->offsets[d] != 0 || box->sizes[d] != type.getDimSize(d)) {
        local = false;
      }
    }
    sourceBoxes[device] = std::move(in);
  }
  if (!local)
    for (std::optional<Box> &box : sourceBoxes)
      if (box)
        box = wholeBox(sourceType);
  Value source = materialize(spread.getSource(), sourceBoxes, loc);
  auto sourceLocal = cast<RankedTensorType>(source.getType());
  RankedTensorType spreadType = local ? localType : type;
  SmallVector<OpFoldResult> at, sizes, steps;
  for (int64_t d = 0; d < rank; ++d) {
    at.push_back(b.getIndexAttr(copied(d) ? 0 : offsets[d]));
    sizes.push_back(b.getIndexAttr(sourceLocal.getDimSize(d)));
    steps.push_back(b.getIndexAttr(strides[d]));
  }
  Value spreadLocal = tensor::InsertSliceOp::create(
      b, loc, source, identityFilled(b, loc, spreadType, ReductionKind::sum),
      at, sizes, steps);
  // Otherwise: the whole spread where the target is, sliced to it.
  return local ? spreadLocal : slice(spreadLocal, target, nullptr, loc);
}

//===----------------------------------------------------------------------===//
// Reshards as lib/layout plans them
//===----------------------------------------------------------------------===//

layout::TensorShape soap::partition::tensorShapeOf(RankedTensorType type) {
  return {
      std::vector<int64_t>(type.getShape().begin(), type.getShape().end()),
      static_cast<int64_t>(llvm::divideCeil(type.getElementTypeBitWidth(), 8))};
}

layout::Layout soap::partition::layoutOfBoxes(const DeviceBoxes &boxes) {
  layout::Layout result;
  for (const std::optional<Box> &box : boxes) {
    if (!box) {
      result.blocks.emplace_back();
      continue;
    }
    result.blocks.push_back(layout::Block{
        std::vector<int64_t>(box->offsets.begin(), box->offsets.end()),
        std::vector<int64_t>(box->sizes.begin(), box->sizes.end())});
  }
  return result;
}

layout::Layout soap::partition::layoutOfPiece(const Piece &piece) {
  layout::Layout result = layoutOfBoxes(piece.boxes);
  if (piece.partial) {
    result.partial = static_cast<layout::Combine>(*piece.partial);
    result.tasks.assign(piece.tasks.begin(), piece.tasks.end());
  }
  return result;
}

DeviceBoxes soap::partition::boxesOfLayout(const layout::Layout &layout) {
  DeviceBoxes boxes;
  for (const std::optional<layout::Block> &block : layout.blocks) {
    if (!block) {
      boxes.emplace_back();
      continue;
    }
    boxes.push_back(
        Box{SmallVector<int64_t>(block->offsets.begin(), block->offsets.end()),
            SmallVector<int64_t>(block->sizes.begin(), block->sizes.end())});
  }
  return boxes;
}

/// The local type of a value in `layout`: its blocks' shape (equal on
/// every device that holds one).
static FailureOr<RankedTensorType> localTypeOf(const layout::Layout &layout,
                                               RankedTensorType type) {
  std::optional<std::vector<int64_t>> sizes;
  for (const std::optional<layout::Block> &block : layout.blocks) {
    if (!block)
      continue;
    if (sizes && *sizes != block->sizes)
      return failure();
    sizes = block->sizes;
  }
  if (!sizes)
    return type;
  return RankedTensorType::get(*sizes, type.getElementType());
}

SmallVector<OpFoldResult>
SpmdPartitioner::offsetsPerDevice(ArrayRef<SmallVector<int64_t>> offsets,
                                  Location loc) {
  SmallVector<OpFoldResult> result;
  for (size_t dim = 0; dim < offsets.front().size(); ++dim) {
    SmallVector<int64_t> perDim;
    for (const SmallVector<int64_t> &device : offsets)
      perDim.push_back(device[dim]);
    if (llvm::all_equal(perDim))
      result.push_back(b.getIndexAttr(perDim.front()));
    else
      result.push_back(perDevice(perDim, loc));
  }
  return result;
}

Value SpmdPartitioner::onlyOn(ArrayRef<int64_t> group,
                              const layout::Layout &result, Value inGroup,
                              Value otherwise, Location loc) {
  SmallVector<bool> flags(numDevices, false);
  for (int64_t d : group)
    flags[d] = true;
  bool everyHolder = true;
  for (int d : result.holders())
    everyHolder &= flags[d];
  if (everyHolder || !otherwise)
    return inGroup;
  return arith::SelectOp::create(b, loc, deviceIn(flags, loc), inGroup,
                                 otherwise);
}

Value SpmdPartitioner::emitTransfers(DistValue &value, const layout::Step &step,
                                     Value current, const DeviceBoxes &held,
                                     RankedTensorType localType, Location loc) {
  DeviceBoxes target = boxesOfLayout(step.result);
  // Rounds of parts of one shape out of one source, each device sending and
  // receiving at most one part per round.
  struct Round {
    int piece;
    bool local;
    std::vector<int64_t> sizes;
    SmallVector<const layout::Transfer *> parts;
    SmallVector<bool> sends, receives;
  };
  SmallVector<Round> rounds;
  for (const layout::Transfer &t : step.transfers) {
    bool local = t.from == t.to;
    Round *round = nullptr;
    for (Round &r : rounds)
      if (r.piece == t.piece && r.local == local && r.sizes == t.block.sizes &&
          !r.sends[t.from] && !r.receives[t.to]) {
        round = &r;
        break;
      }
    if (!round) {
      rounds.push_back(Round{t.piece,
                             local,
                             t.block.sizes,
                             {},
                             SmallVector<bool>(numDevices, false),
                             SmallVector<bool>(numDevices, false)});
      round = &rounds.back();
    }
    round->parts.push_back(&t);
    round->sends[t.from] = true;
    round->receives[t.to] = true;
  }
  // Parts no piece holds stay zero; partial parts combine into the
  // combination's identity.
  bool combines = step.kind == layout::StepKind::SendRecvCombine;
  auto kind = static_cast<ReductionKind>(step.combine);
  Value assembled = combines ? identityFilled(b, loc, localType, kind)
                    : value.zerosElsewhere
                        ? identityFilled(b, loc, localType, ReductionKind::sum)
                        : tensor::EmptyOp::create(b, loc, localType.getShape(),
                                                  localType.getElementType())
                              .getResult();
  int64_t rank = localType.getRank();
  for (const Round &round : rounds) {
    Value source = round.piece >= 0 ? value.pieces[round.piece].local : current;
    const DeviceBoxes &sourceBoxes =
        round.piece >= 0 ? value.pieces[round.piece].boxes : held;
    SmallVector<SmallVector<int64_t>> from(numDevices,
                                           SmallVector<int64_t>(rank, 0)),
        into(numDevices, SmallVector<int64_t>(rank, 0));
    SmallVector<int64_t> senders, receivers;
    for (const layout::Transfer *t : round.parts) {
      for (int64_t d = 0; d < rank; ++d) {
        from[t->from][d] =
            t->block.offsets[d] - sourceBoxes[t->from]->offsets[d];
        into[t->to][d] = t->block.offsets[d] - target[t->to]->offsets[d];
      }
      senders.push_back(t->from);
      receivers.push_back(t->to);
    }
    SmallVector<OpFoldResult> sizes, strides(rank, b.getIndexAttr(1));
    for (int64_t size : round.sizes)
      sizes.push_back(b.getIndexAttr(size));
    auto partType =
        RankedTensorType::get(round.sizes, localType.getElementType());
    bool wholeSource =
        cast<RankedTensorType>(source.getType()) == partType &&
        llvm::all_of(from, [](ArrayRef<int64_t> o) {
          return llvm::all_of(o, [](int64_t x) { return x == 0; });
        });
    Value part = wholeSource ? source
                             : tensor::ExtractSliceOp::create(
                                   b, loc, partType, source,
                                   offsetsPerDevice(from, loc), sizes, strides)
                                   .getResult();
    if (!round.local) {
      int64_t tag = nextTag;
      nextTag = nextTag % 30000 + 1;
      SendOp::create(b, loc, part, b.getDenseI64ArrayAttr(senders),
                     b.getDenseI64ArrayAttr(receivers), tag);
      part = RecvOp::create(b, loc, partType, b.getDenseI64ArrayAttr(senders),
                            b.getDenseI64ArrayAttr(receivers), tag);
    }
    if (combines)
      part = combineLocally(tensor::ExtractSliceOp::create(
                                b, loc, partType, assembled,
                                offsetsPerDevice(into, loc), sizes, strides),
                            part, kind, loc);
    Value updated = tensor::InsertSliceOp::create(
        b, loc, part, assembled, offsetsPerDevice(into, loc), sizes, strides);
    assembled = onlyOn(receivers, step.result, updated, assembled, loc);
  }
  return assembled;
}

FailureOr<Value>
SpmdPartitioner::emitStep(DistValue &value, const layout::Step &step,
                          Value current, const DeviceBoxes &held,
                          RankedTensorType type, Location loc) {
  FailureOr<RankedTensorType> localType = localTypeOf(step.result, type);
  if (failed(localType))
    return failure();
  auto kindAttr = [&] {
    return ReductionKindAttr::get(b.getContext(),
                                  static_cast<ReductionKind>(step.combine));
  };
  auto group = [&](const std::vector<int> &devices) {
    return b.getDenseI64ArrayAttr(
        SmallVector<int64_t>(devices.begin(), devices.end()));
  };
  switch (step.kind) {
  case layout::StepKind::Slice:
    return slice(current, boxesOfLayout(step.result), &held, loc);
  case layout::StepKind::AllReduce: {
    Value result = current;
    for (const std::vector<int> &g : step.groups)
      result = onlyOn(group(g).asArrayRef(), step.result,
                      AllReduceOp::create(b, loc, current.getType(), kindAttr(),
                                          current, group(g)),
                      result, loc);
    return result;
  }
  case layout::StepKind::ReduceScatter:
    return Value(ReduceScatterOp::create(b, loc, *localType, kindAttr(),
                                         current, b.getI64IntegerAttr(step.dim),
                                         group(step.groups.front())));
  case layout::StepKind::AllGather: {
    Value result;
    for (const std::vector<int> &g : step.groups)
      result =
          onlyOn(group(g).asArrayRef(), step.result,
                 AllGatherOp::create(b, loc, *localType, current,
                                     b.getI64IntegerAttr(step.dim), group(g)),
                 result, loc);
    return result;
  }
  case layout::StepKind::AllToAll:
    return Value(AllToAllOp::create(
        b, loc, *localType, current, b.getI64IntegerAttr(step.dim),
        b.getI64IntegerAttr(step.fromDim), group(step.groups.front())));
  case layout::StepKind::Broadcast: {
    const std::vector<int> &g = step.groups.front();
    return onlyOn(group(g).asArrayRef(), step.result,
                  BroadcastOp::create(b, loc, current.getType(), current,
                                      b.getI64IntegerAttr(step.root), group(g)),
                  current, loc);
  }
  case layout::StepKind::SendRecv:
  case layout::StepKind::HaloExchange:
  case layout::StepKind::SendRecvCombine:
    return emitTransfers(value, step, current, held, *localType, loc);
  case layout::StepKind::LocalSum: {
    // Each device's partials added up: identity, then each piece where the
    // device holds it.
    ReductionKind kind = static_cast<ReductionKind>(step.combine);
    Value sum = identityFilled(b, loc, *localType, kind);
    for (int id : step.pieces) {
      const Piece &piece = value.pieces[id];
      if (piece.local.getType() != *localType)
        return failure();
      SmallVector<bool> holds;
      for (const std::optional<Box> &box : piece.boxes)
        holds.push_back(box.has_value());
      Value added = combineLocally(sum, piece.local, kind, loc);
      sum = llvm::all_of(holds, [](bool h) { return h; })
                ? added
                : arith::SelectOp::create(b, loc, deviceIn(holds, loc), added,
                                          sum)
                      .getResult();
    }
    return sum;
  }
  case layout::StepKind::AllReduceWhole:
    return universalGather(value, step.pieces, type, loc);
  }
  return failure();
}

Value SpmdPartitioner::reshard(Value original, const DeviceBoxes &target,
                               Location loc) {
  auto type = cast<RankedTensorType>(original.getType());
  DistValue &value = dist[original];
  layout::TensorShape tensor = tensorShapeOf(type);
  std::vector<layout::Layout> pieces;
  for (const Piece &piece : value.pieces)
    pieces.push_back(layoutOfPiece(piece));
  layout::ReshardPlan plan;
  // Back to the value's piece numbers from those of `ids`.
  auto renumber = [](layout::ReshardPlan &plan, ArrayRef<int> ids) {
    if (plan.piece >= 0)
      plan.piece = ids[plan.piece];
    for (layout::Step &step : plan.steps) {
      for (int &id : step.pieces)
        id = ids[id];
      for (layout::Transfer &transfer : step.transfers)
        if (transfer.piece >= 0)
          transfer.piece = ids[transfer.piece];
    }
  };
  if (value.zerosElsewhere) {
    // The parts are disjoint; a copy an earlier reader assembled holds all
    // of its blocks and overlaps them. A reader inside such a copy slices
    // it; any other plans from the parts alone (the copy beside the parts
    // would count its elements twice, or hide parts from a plan).
    std::vector<int> ids; // the pieces planned from
    for (auto [p, piece] : llvm::enumerate(value.pieces))
      if (piece.derived &&
          llvm::all_of(llvm::seq<int64_t>(0, numDevices), [&](int64_t d) {
            return !target[d] ||
                   (piece.boxes[d] && piece.boxes[d]->contains(*target[d]));
          })) {
        ids = {static_cast<int>(p)};
        break;
      }
    bool fromCopy = !ids.empty();
    if (!fromCopy)
      for (auto [p, piece] : llvm::enumerate(value.pieces))
        if (!piece.derived)
          ids.push_back(static_cast<int>(p));
    std::vector<layout::Layout> planned;
    for (int id : ids)
      planned.push_back(pieces[id]);
    plan = layout::planReshard(tensor, planned, layoutOfBoxes(target),
                               /*zerosElsewhere=*/!fromCopy);
    renumber(plan, ids);
  } else {
    // The pieces the value was made of, then the re-split copies readers
    // made (planReshardBesideCopies: a copy that overlaps them plans
    // transfers from them alone rather than an all-reduce of the whole).
    std::vector<int> ids;
    size_t firstCopy = 0;
    for (bool copies : {false, true}) {
      for (auto [p, piece] : llvm::enumerate(value.pieces))
        if (piece.derived == copies)
          ids.push_back(static_cast<int>(p));
      if (!copies)
        firstCopy = ids.size();
    }
    std::vector<layout::Layout> ordered;
    for (int id : ids)
      ordered.push_back(pieces[id]);
    plan = layout::planReshardBesideCopies(tensor, ordered, firstCopy,
                                           layoutOfBoxes(target),
                                           /*zerosElsewhere=*/false);
    renumber(plan, ids);
  }
  if (plan.steps.empty())
    return value.pieces[plan.piece].local;

  Value current = plan.piece >= 0 ? value.pieces[plan.piece].local : Value();
  DeviceBoxes held =
      plan.piece >= 0 ? value.pieces[plan.piece].boxes : DeviceBoxes();
  Value moved;
  DeviceBoxes movedBoxes;
  int keep = layout::communicatedStep(plan);
  for (auto [index, step] : llvm::enumerate(plan.steps)) {
    FailureOr<Value> next = emitStep(value, step, current, held, type, loc);
    if (failed(next)) {
      // Steps always leave equal blocks on the devices that hold one; a
      // plan that does not is a planner error, and a whole copy is still
      // right.
      function.emitWarning()
          << "soap-partition: reshard step '" << layout::stepKindName(step.kind)
          << "' left unequal blocks; using a whole copy";
      SmallVector<int> all;
      for (size_t i = 0; i < value.pieces.size(); ++i)
        all.push_back(static_cast<int>(i));
      Value whole = universalGather(value, all, type, loc);
      return slice(whole, target, nullptr, loc);
    }
    current = *next;
    held = boxesOfLayout(step.result);
    if (static_cast<int>(index) == keep) {
      moved = current;
      movedBoxes = held;
    }
  }
  // What the communication made is kept for the value's other readers; a
  // whole copy everywhere is a piece of its own, other layouts are re-split
  // copies (invisible to the choice of plans).
  if (moved) {
    bool wholeEverywhere = llvm::all_of(
        movedBoxes, [&](auto &box) { return box && *box == wholeBox(type); });
    value.pieces.push_back(Piece{moved, movedBoxes,
                                 SmallVector<int64_t>(numDevices, 0),
                                 std::nullopt, !wholeEverywhere});
  }
  return current;
}

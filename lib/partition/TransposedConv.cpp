//===- TransposedConv.cpp - a convolution's input gradient per task ------===//
//
// The input gradient of a convolution that --soap-training-step builds is a
// unit-stride convolution of the adjoint spread into zeros (strided, and
// padded by the dilated window) through the flipped filter. Its rows and
// columns are the input's, not the forward's output rows: a forward config
// that splits those has no counterpart over the gradient's loops. So the
// training step puts the forward's config on it (soap.transposed_config),
// and each device computes its forward task's part of the gradient: the
// adjoint block the task wrote, spread, through the filter block it read,
// into the input box it read. Boxes of neighbouring tasks overlap by the
// window (halos), and tasks that split the output channels hold partial
// sums of one box: the result is a partial sum, zero outside the boxes,
// which its readers complete where they need it. That is the simulator's
// backward task of the convolution and its gradient edge to the input's
// producer (lib/sim/Reshards.cpp: partial sums where tasks read the same
// elements).
//
//===----------------------------------------------------------------------===//

#include "Reductions.h"
#include "SpmdPartitioner.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;
using namespace soap;
using namespace soap::partition;

tensor::InsertSliceOp soap::partition::insertionIntoZeros(Value value) {
  auto insert = value.getDefiningOp<tensor::InsertSliceOp>();
  if (!insert || !isIdentityFill(insert.getDest(), ReductionKind::sum) ||
      ShapedType::isDynamicShape(insert.getStaticOffsets()) ||
      ShapedType::isDynamicShape(insert.getStaticStrides()) ||
      insert.getSourceType().getRank() != insert.getType().getRank())
    return {};
  return insert;
}

std::optional<FlipDims> soap::partition::flippedCopy(Operation *op) {
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic || op->hasAttr(SoapDialect::getConfigAttrName()) ||
      !generic.hasPureTensorSemantics() || generic.getNumDpsInputs() != 1 ||
      generic.getNumDpsInits() != 1 || generic.getNumReductionLoops() != 0 ||
      !op->hasOneUse())
    return std::nullopt;
  // Its one reader: a convolution's filter, or an input of a windowed
  // generic's input gradient that runs task by task
  // (partitionTransposedWindow).
  OpOperand &use = *op->getUses().begin();
  auto reader = dyn_cast<linalg::LinalgOp>(use.getOwner());
  if (!reader || !reader.isDpsInput(&use))
    return std::nullopt;
  bool filter =
      linalg::isaConvolutionOpInterface(reader) && use.getOperandNumber() == 1;
  bool windowed = isa<linalg::GenericOp>(reader.getOperation()) &&
                  reader->hasAttr(SoapDialect::getTransposedConfigAttrName());
  if (!filter && !windowed)
    return std::nullopt;
  Block &body = generic.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  if (&body.front() != yield.getOperation() ||
      yield.getValues()[0] != body.getArgument(0))
    return std::nullopt;
  auto inputType =
      dyn_cast<RankedTensorType>(generic.getDpsInputs()[0].getType());
  auto resultType = dyn_cast<RankedTensorType>(generic.getResult(0).getType());
  if (!inputType || !resultType || !inputType.hasStaticShape() ||
      !resultType.hasStaticShape())
    return std::nullopt;
  AffineMap in = generic.getIndexingMapsArray()[0];
  AffineMap out = generic.getIndexingMapsArray()[1];
  if (!out.isIdentity() || in.getNumResults() != in.getNumDims() ||
      in.getNumSymbols() != 0)
    return std::nullopt;
  FlipDims dims;
  llvm::SmallBitVector used(in.getNumDims());
  MLIRContext *context = op->getContext();
  for (auto [j, expr] : llvm::enumerate(in.getResults())) {
    int64_t found = -1;
    bool reversed = false;
    for (unsigned i = 0; i < in.getNumDims() && found < 0; ++i) {
      AffineExpr dim = getAffineDimExpr(i, context);
      if (expr == dim) {
        found = i;
      } else if (expr ==
                 getAffineConstantExpr(inputType.getDimSize(j) - 1, context) -
                     dim) {
        found = i;
        reversed = true;
      }
    }
    if (found < 0 || used.test(found) ||
        resultType.getDimSize(found) != inputType.getDimSize(j))
      return std::nullopt;
    used.set(found);
    dims.resultDim.push_back(found);
    dims.reversed.push_back(reversed);
  }
  return dims;
}

Value SpmdPartitioner::materializeFlip(linalg::GenericOp flip,
                                       const DeviceBoxes &target,
                                       RankedTensorType localType,
                                       Location loc) {
  FlipDims dims = *flippedCopy(flip);
  Value input = flip.getDpsInputs()[0];
  ArrayRef<int64_t> inputShape =
      cast<RankedTensorType>(input.getType()).getShape();
  // Input dimension j of a block: result dimension resultDim[j], counted
  // from the end where reversed.
  DeviceBoxes inputBoxes(numDevices);
  for (auto [device, box] : llvm::enumerate(target)) {
    if (!box)
      continue;
    Box in;
    for (auto [j, i] : llvm::enumerate(dims.resultDim)) {
      int64_t offset = box->offsets[i], size = box->sizes[i];
      in.offsets.push_back(dims.reversed[j] ? inputShape[j] - offset - size
                                            : offset);
      in.sizes.push_back(size);
    }
    inputBoxes[device] = std::move(in);
  }
  Value local = materialize(input, inputBoxes, loc);
  // The same copy over the block.
  MLIRContext *context = b.getContext();
  SmallVector<AffineExpr> reads;
  for (auto [j, i] : llvm::enumerate(dims.resultDim)) {
    AffineExpr dim = getAffineDimExpr(i, context);
    reads.push_back(
        dims.reversed[j]
            ? getAffineConstantExpr(localType.getDimSize(i) - 1, context) - dim
            : dim);
  }
  unsigned rank = localType.getRank();
  SmallVector<AffineMap> maps = {
      AffineMap::get(rank, 0, reads, context),
      AffineMap::getMultiDimIdentityMap(rank, context)};
  Value init = tensor::EmptyOp::create(b, loc, localType.getShape(),
                                       localType.getElementType());
  return linalg::GenericOp::create(
             b, loc, TypeRange{localType}, ValueRange{local}, ValueRange{init},
             maps,
             SmallVector<utils::IteratorType>(rank,
                                              utils::IteratorType::parallel),
             [](OpBuilder &nb, Location l, ValueRange args) {
               linalg::YieldOp::create(nb, l, args[0]);
             })
      .getResult(0);
}

namespace {
/// A convolution's input gradient that partitionTransposedConv handles.
struct TransposedConv {
  ArrayRef<int64_t> degrees; // the forward config's
  Value adjoint, filter;
  Plan plan;
  SmallVector<int64_t> offsets, strides; // of the spread
  int64_t dilations[2];
  /// Forward block sizes: n, f, oh, ow of the adjoint, c of the gradient,
  /// kh, kw of the window.
  int64_t blocks[7];
  /// Rows and columns of each task's part of the gradient.
  int64_t rows, cols;
};
} // namespace

/// `conv` when it is an input gradient with a forward config
/// (soap.transposed_config) that partitionTransposedConv handles: blocks
/// that divide, the training step's spread of the adjoint (padded by the
/// dilated window), or the adjoint itself through a 1x1 window.
static std::optional<TransposedConv>
matchTransposedConv(linalg::Conv2DNchwFchwOp conv, int64_t numDevices) {
  auto config = conv->getAttrOfType<ConfigAttr>(
      SoapDialect::getTransposedConfigAttrName());
  if (!config || !conv.hasPureTensorSemantics())
    return std::nullopt;
  ArrayRef<int64_t> degrees = config.getDegrees();
  // Forward loops n, f, oh, ow, c, kh, kw.
  if (degrees.size() != 7)
    return std::nullopt;
  TransposedConv match;
  match.degrees = degrees;
  FailureOr<Plan> plan = planForTasks(degrees, config.getDevices(), numDevices);
  if (failed(plan))
    return std::nullopt; // partitioned as any convolution, which says why
  match.plan = std::move(*plan);
  if (!isIdentityFill(conv.getDpsInits()[0], ReductionKind::sum))
    return std::nullopt;
  match.filter = conv.getDpsInputs()[1];
  auto filterType = cast<RankedTensorType>(match.filter.getType());
  auto resultType = cast<RankedTensorType>(conv.getResult(0).getType());
  if (!filterType.hasStaticShape() || !resultType.hasStaticShape())
    return std::nullopt;
  tensor::InsertSliceOp spread = insertionIntoZeros(conv.getDpsInputs()[0]);
  if (spread) {
    if (!spread->hasOneUse())
      return std::nullopt;
    match.adjoint = spread.getSource();
    match.offsets = llvm::to_vector(spread.getStaticOffsets());
    match.strides = llvm::to_vector(spread.getStaticStrides());
  } else if (filterType.getDimSize(2) == 1 && filterType.getDimSize(3) == 1) {
    // A 1x1 window at stride 1 (a pointwise convolution): the training
    // step reads the adjoint itself, nothing to spread or pad.
    match.adjoint = conv.getDpsInputs()[0];
    match.offsets.assign(4, 0);
    match.strides.assign(4, 1);
  } else {
    return std::nullopt;
  }
  auto adjointType = cast<RankedTensorType>(match.adjoint.getType());
  if (!adjointType.hasStaticShape())
    return std::nullopt;
  SmallVector<int64_t> dilations(conv.getDilations().getValues<int64_t>());
  match.dilations[0] = dilations[0];
  match.dilations[1] = dilations[1];
  if (match.offsets[0] != 0 || match.offsets[1] != 0 || match.strides[0] != 1 ||
      match.strides[1] != 1 ||
      llvm::any_of(conv.getStrides().getValues<int64_t>(),
                   [](int64_t s) { return s != 1; }))
    return std::nullopt;
  ArrayRef<int64_t> dy = adjointType.getShape();
  ArrayRef<int64_t> w = filterType.getShape(); // [C, F, KH, KW], flipped
  // The spread pads the adjoint by the dilated window on both sides.
  if (match.offsets[2] != dilations[0] * (w[2] - 1) ||
      match.offsets[3] != dilations[1] * (w[3] - 1))
    return std::nullopt;
  int64_t sizes[7] = {dy[0], dy[1], dy[2], dy[3], w[0], w[2], w[3]};
  for (int i = 0; i < 7; ++i) {
    if (sizes[i] % degrees[i])
      return std::nullopt;
    match.blocks[i] = sizes[i] / degrees[i];
  }
  const int64_t *blocks = match.blocks;
  // A task's rows: its output rows' first input row through the last one
  // its part of the window reaches.
  match.rows =
      (blocks[2] - 1) * match.strides[2] + 1 + dilations[0] * (blocks[5] - 1);
  match.cols =
      (blocks[3] - 1) * match.strides[3] + 1 + dilations[1] * (blocks[6] - 1);
  // The last task's part ends inside the gradient (it does: the gradient
  // has the rows and columns the forward read).
  if ((degrees[2] - 1) * blocks[2] * match.strides[2] +
              (degrees[5] - 1) * blocks[5] * dilations[0] + match.rows >
          resultType.getDimSize(2) ||
      (degrees[3] - 1) * blocks[3] * match.strides[3] +
              (degrees[6] - 1) * blocks[6] * dilations[1] + match.cols >
          resultType.getDimSize(3))
    return std::nullopt;
  return match;
}

bool soap::partition::tasksOverlap(ArrayRef<DeviceBoxes> slots) {
  SmallVector<layout::Block> blocks;
  for (const DeviceBoxes &boxes : slots) {
    layout::Layout parts = layoutOfBoxes(boxes);
    for (std::optional<layout::Block> &block : parts.blocks)
      if (block)
        blocks.push_back(std::move(*block));
  }
  for (size_t i = 0; i < blocks.size(); ++i)
    for (size_t j = i + 1; j < blocks.size(); ++j)
      if (blocks[i].overlaps(blocks[j]))
        return true;
  return false;
}

LogicalResult SpmdPartitioner::partitionTransposedConv(Operation *op) {
  if (auto insert = dyn_cast<tensor::InsertSliceOp>(op)) {
    // The training step's insertion of a handled gradient into zeros (the
    // rows and columns the forward read, at offset 0, in the input's
    // shape): the same pieces, whose boxes are already the input's.
    if (embeddedGradients.contains(op)) {
      DistValue value = dist.lookup(insert.getSource());
      dist[insert.getResult()] = std::move(value);
      return success();
    }
    // The spread of the adjoint that a handled gradient reads: each task
    // spreads its own block instead.
    if (insert->hasOneUse())
      if (auto conv =
              dyn_cast<linalg::Conv2DNchwFchwOp>(*insert->getUsers().begin());
          conv && conv.getDpsInputs()[0] == insert.getResult() &&
          matchTransposedConv(conv, numDevices))
        return success();
    return failure();
  }
  auto conv = dyn_cast<linalg::Conv2DNchwFchwOp>(op);
  if (!conv)
    return failure();
  std::optional<TransposedConv> match = matchTransposedConv(conv, numDevices);
  if (!match)
    return failure();
  ArrayRef<int64_t> degrees = match->degrees;
  Value adjoint = match->adjoint, filter = match->filter;
  auto resultType = cast<RankedTensorType>(conv.getResult(0).getType());
  ArrayRef<int64_t> w = cast<RankedTensorType>(filter.getType()).getShape();
  const int64_t *blocks = match->blocks;
  const int64_t *dilations = match->dilations;
  int64_t rows = match->rows, cols = match->cols;
  ArrayRef<int64_t> strides = match->strides;
  // Each task spreads its adjoint block by its part of the dilated window.
  int64_t padH = dilations[0] * (blocks[5] - 1);
  int64_t padW = dilations[1] * (blocks[6] - 1);

  // The tasks' boxes, slot by slot (a device with several tasks computes
  // one piece per task).
  struct SlotBoxes {
    DeviceBoxes adjoint, filter, result;
    SmallVector<int64_t> active, tasks;
  };
  SmallVector<SlotBoxes, 1> slots;
  for (ArrayRef<int64_t> slot : match->plan.slots) {
    SlotBoxes &boxes = slots.emplace_back();
    boxes.adjoint.resize(numDevices);
    boxes.filter.resize(numDevices);
    boxes.result.resize(numDevices);
    boxes.tasks.assign(numDevices, -1);
    for (auto [device, task] : llvm::enumerate(slot)) {
      if (task < 0)
        continue;
      SmallVector<int64_t> c = coordinatesOf(degrees, task);
      int64_t n0 = c[0] * blocks[0], f0 = c[1] * blocks[1],
              h0 = c[2] * blocks[2], w0 = c[3] * blocks[3],
              c0 = c[4] * blocks[4], kh0 = c[5] * blocks[5],
              kw0 = c[6] * blocks[6];
      boxes.adjoint[device] =
          Box{{n0, f0, h0, w0}, {blocks[0], blocks[1], blocks[2], blocks[3]}};
      // The flipped filter holds window row kh at KH - 1 - kh.
      boxes.filter[device] =
          Box{{c0, f0, w[2] - kh0 - blocks[5], w[3] - kw0 - blocks[6]},
              {blocks[4], blocks[1], blocks[5], blocks[6]}};
      boxes.result[device] = Box{{n0, c0, h0 * strides[2] + kh0 * dilations[0],
                                  w0 * strides[3] + kw0 * dilations[1]},
                                 {blocks[0], blocks[4], rows, cols}};
      boxes.active.push_back(device);
      boxes.tasks[device] = task;
    }
  }
  // Partial sums where two tasks' boxes overlap (halos, parts of the
  // window, or a split of the output channels), as the simulator's
  // gradient edges have it.
  bool overlap = tasksOverlap(llvm::to_vector(
      llvm::map_range(slots, [](const SlotBoxes &s) { return s.result; })));

  Location loc = op->getLoc();
  b.setInsertionPoint(op);
  realizeTranspose(adjoint, op);
  realizeTranspose(filter, op);
  Type element = resultType.getElementType();
  auto localType =
      RankedTensorType::get({blocks[0], blocks[4], rows, cols}, element);
  DistValue result;
  for (SlotBoxes &boxes : slots) {
    Value localAdjoint = materialize(adjoint, boxes.adjoint, loc);
    Value localFilter = materialize(filter, boxes.filter, loc);
    Value local = onDevices(
        boxes.active, localType,
        [&]() -> Value {
          auto zeros = [&](ArrayRef<int64_t> shape) {
            return identityFilled(b, loc, RankedTensorType::get(shape, element),
                                  ReductionKind::sum);
          };
          // The task's adjoint block, spread by the stride and padded by
          // its part of the dilated window.
          SmallVector<int64_t> spreadShape = {
              blocks[0], blocks[1], (blocks[2] - 1) * strides[2] + 1 + 2 * padH,
              (blocks[3] - 1) * strides[3] + 1 + 2 * padW};
          MLIRContext *context = b.getContext();
          Value localSpread = tensor::InsertSliceOp::create(
              b, loc, localAdjoint, zeros(spreadShape),
              getAsIndexOpFoldResult(context, {0, 0, padH, padW}),
              getAsIndexOpFoldResult(
                  context, {blocks[0], blocks[1], blocks[2], blocks[3]}),
              getAsIndexOpFoldResult(context, strides));
          return linalg::Conv2DNchwFchwOp::create(
                     b, loc, TypeRange{localType},
                     ValueRange{localSpread, localFilter},
                     ValueRange{zeros(localType.getShape())}, conv.getStrides(),
                     conv.getDilations())
              .getResult(0);
        },
        loc);
    Piece piece{local, std::move(boxes.result), boxes.tasks, std::nullopt};
    if (overlap)
      piece.partial = ReductionKind::sum;
    result.pieces.push_back(std::move(piece));
  }
  result.zerosElsewhere = true;
  dist[conv.getResult(0)] = std::move(result);
  // The training step's insertion of the result into the input's shape.
  Value gradient = conv.getResult(0);
  if (gradient.hasOneUse())
    if (auto embed =
            dyn_cast<tensor::InsertSliceOp>(*gradient.getUsers().begin());
        embed && embed == insertionIntoZeros(embed.getResult()) &&
        embed.getSource() == gradient &&
        llvm::all_of(embed.getStaticOffsets(),
                     [](int64_t o) { return o == 0; }) &&
        llvm::all_of(embed.getStaticStrides(),
                     [](int64_t s) { return s == 1; }))
      embeddedGradients.insert(embed);
  return success();
}

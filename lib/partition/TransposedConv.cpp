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

namespace {
/// A convolution's input gradient that partitionTransposedConv handles.
struct TransposedConv {
  ArrayRef<int64_t> degrees; // the forward config's
  Value adjoint, filter;
  Plan plan;
  SmallVector<int64_t> offsets, strides; // of the spread
  int64_t padH, padW;
  /// Forward block sizes: n, f, oh, ow of the adjoint; c of the gradient.
  int64_t blocks[5];
  /// Rows and columns of each task's part of the gradient.
  int64_t rows, cols;
};
} // namespace

/// `conv` when it is an input gradient with a forward config
/// (soap.transposed_config) that partitionTransposedConv handles: one task
/// per device, windows not split, blocks that divide, the training step's
/// spread of the adjoint (padded by the dilated window).
static std::optional<TransposedConv>
matchTransposedConv(linalg::Conv2DNchwFchwOp conv, int64_t numDevices) {
  auto config = conv->getAttrOfType<ConfigAttr>(
      SoapDialect::getTransposedConfigAttrName());
  if (!config || !conv.hasPureTensorSemantics())
    return std::nullopt;
  ArrayRef<int64_t> degrees = config.getDegrees();
  // Forward loops n, f, oh, ow, c, kh, kw.
  if (degrees.size() != 7 || degrees[5] != 1 || degrees[6] != 1)
    return std::nullopt;
  TransposedConv match;
  match.degrees = degrees;
  match.plan = planForTasks(degrees, config.getDevices(), numDevices);
  if (match.plan.slots.size() != 1)
    return std::nullopt; // a device with several tasks
  tensor::InsertSliceOp spread = insertionIntoZeros(conv.getDpsInputs()[0]);
  if (!spread || !spread->hasOneUse() ||
      !isIdentityFill(conv.getDpsInits()[0], ReductionKind::sum))
    return std::nullopt;
  match.adjoint = spread.getSource();
  match.filter = conv.getDpsInputs()[1];
  auto adjointType = cast<RankedTensorType>(match.adjoint.getType());
  auto filterType = cast<RankedTensorType>(match.filter.getType());
  auto resultType = cast<RankedTensorType>(conv.getResult(0).getType());
  if (!adjointType.hasStaticShape() || !filterType.hasStaticShape() ||
      !resultType.hasStaticShape())
    return std::nullopt;
  match.offsets = llvm::to_vector(spread.getStaticOffsets());
  match.strides = llvm::to_vector(spread.getStaticStrides());
  SmallVector<int64_t> dilations(conv.getDilations().getValues<int64_t>());
  if (match.offsets[0] != 0 || match.offsets[1] != 0 || match.strides[0] != 1 ||
      match.strides[1] != 1 ||
      llvm::any_of(conv.getStrides().getValues<int64_t>(),
                   [](int64_t s) { return s != 1; }))
    return std::nullopt;
  ArrayRef<int64_t> dy = adjointType.getShape();
  ArrayRef<int64_t> w = filterType.getShape(); // [C, F, KH, KW], flipped
  // The spread pads the adjoint by the dilated window on both sides.
  match.padH = match.offsets[2];
  match.padW = match.offsets[3];
  if (match.padH != dilations[0] * (w[2] - 1) ||
      match.padW != dilations[1] * (w[3] - 1))
    return std::nullopt;
  int64_t sizes[5] = {dy[0], dy[1], dy[2], dy[3], w[0]};
  for (int i = 0; i < 5; ++i) {
    if (sizes[i] % degrees[i])
      return std::nullopt;
    match.blocks[i] = sizes[i] / degrees[i];
  }
  match.rows = (match.blocks[2] - 1) * match.strides[2] + 1 + match.padH;
  match.cols = (match.blocks[3] - 1) * match.strides[3] + 1 + match.padW;
  // The last task's part ends inside the gradient (it does: the gradient
  // has the rows and columns the forward read).
  if ((degrees[2] - 1) * match.blocks[2] * match.strides[2] + match.rows >
          resultType.getDimSize(2) ||
      (degrees[3] - 1) * match.blocks[3] * match.strides[3] + match.cols >
          resultType.getDimSize(3))
    return std::nullopt;
  return match;
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
  int64_t rows = match->rows, cols = match->cols;
  ArrayRef<int64_t> offsets = match->offsets, strides = match->strides;
  int64_t padH = match->padH, padW = match->padW;

  DeviceBoxes adjointBoxes(numDevices), filterBoxes(numDevices),
      resultBoxes(numDevices);
  SmallVector<int64_t> active, tasks(numDevices, -1);
  for (auto [device, task] : llvm::enumerate(match->plan.slots[0])) {
    if (task < 0)
      continue;
    SmallVector<int64_t> c = coordinatesOf(degrees, task);
    int64_t n0 = c[0] * blocks[0], f0 = c[1] * blocks[1], h0 = c[2] * blocks[2],
            w0 = c[3] * blocks[3], c0 = c[4] * blocks[4];
    adjointBoxes[device] =
        Box{{n0, f0, h0, w0}, {blocks[0], blocks[1], blocks[2], blocks[3]}};
    filterBoxes[device] =
        Box{{c0, f0, 0, 0}, {blocks[4], blocks[1], w[2], w[3]}};
    Box result{{n0, c0, h0 * strides[2], w0 * strides[3]},
               {blocks[0], blocks[4], rows, cols}};
    resultBoxes[device] = std::move(result);
    active.push_back(device);
    tasks[device] = task;
  }
  // Partial sums where two tasks' boxes overlap (halos, or a split of the
  // output channels), as the simulator's gradient edges have it.
  layout::Layout parts = layoutOfBoxes(resultBoxes);
  bool overlap = false;
  for (size_t i = 0; i < active.size() && !overlap; ++i)
    for (size_t j = i + 1; j < active.size() && !overlap; ++j)
      overlap = parts.blocks[active[i]]->overlaps(*parts.blocks[active[j]]);

  Location loc = op->getLoc();
  b.setInsertionPoint(op);
  realizeTranspose(adjoint, op);
  realizeTranspose(filter, op);
  Value localAdjoint = materialize(adjoint, adjointBoxes, loc);
  Value localFilter = materialize(filter, filterBoxes, loc);
  Type element = resultType.getElementType();
  auto localType =
      RankedTensorType::get({blocks[0], blocks[4], rows, cols}, element);
  Value local = onDevices(
      active, localType,
      [&]() -> Value {
        auto zeros = [&](ArrayRef<int64_t> shape) {
          return identityFilled(b, loc, RankedTensorType::get(shape, element),
                                ReductionKind::sum);
        };
        // The task's adjoint block, spread as the whole adjoint is.
        SmallVector<int64_t> spreadShape = {
            blocks[0], blocks[1], (blocks[2] - 1) * strides[2] + 1 + 2 * padH,
            (blocks[3] - 1) * strides[3] + 1 + 2 * padW};
        MLIRContext *context = b.getContext();
        Value localSpread = tensor::InsertSliceOp::create(
            b, loc, localAdjoint, zeros(spreadShape),
            getAsIndexOpFoldResult(context, offsets),
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
  Piece piece{local, std::move(resultBoxes), tasks, std::nullopt};
  if (overlap)
    piece.partial = ReductionKind::sum;
  DistValue result;
  result.pieces.push_back(std::move(piece));
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

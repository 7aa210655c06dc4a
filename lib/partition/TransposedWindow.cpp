//===- TransposedWindow.cpp - a windowed generic's input gradient per task ===//
//
// The input gradient of a generic that reads its input through windows
// (a depthwise or grouped convolution, a sum pooling, in any layout) is,
// as --soap-training-step builds it (autodiff/WindowGradient.cpp), a
// generic over the forward loops that reads the output's adjoint spread
// into zeros at `i + d * k` (`i` the input position where the forward had
// the output position `o`, `k` the window offset) and the other operands
// flipped along `k`. A forward config that splits `o` or `k` has no
// counterpart over those loops, so the training step puts it on the
// gradient as soap.transposed_config, and each device computes its forward
// task's part, as for a 2-D convolution (TransposedConv.cpp): the adjoint
// block the task wrote, spread by the stride and padded by its part of the
// dilated window, through the flipped blocks of the other operands it
// read, into the input box it read. Boxes of neighbouring tasks overlap
// (halos, parts of the window): the result is then a partial sum, zero
// outside the boxes, which its readers complete where they need it. That
// is the simulator's backward task of the forward op and its gradient edge
// to the input's producer.
//
//===----------------------------------------------------------------------===//

#include "Reductions.h"
#include "SpmdPartitioner.h"
#include "soap/support/LinearAffine.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;
using namespace soap;
using namespace soap::partition;

namespace {
/// A result of the spread's indexing map that reads `o + d * k`.
struct SpreadWindow {
  unsigned dim;        // of the spread (and of the adjoint)
  unsigned outLoop;    // o: the input position in the gradient
  unsigned windowLoop; // k
  int64_t stride, dilation;
};

/// A windowed generic's input gradient that partitionTransposedWindow
/// handles.
struct TransposedWindow {
  ArrayRef<int64_t> degrees; // the forward config's
  Plan plan;
  unsigned spreadInput; // which input is the spread adjoint
  tensor::InsertSliceOp spread;
  SmallVector<SpreadWindow> windows;
  /// Per loop: the gradient's range, and the forward's block (over the
  /// forward's output positions for an output loop).
  SmallVector<int64_t> ranges, blocks;
};
} // namespace

/// The window over loop `loop` (its output or window loop), if any.
static const SpreadWindow *windowOf(ArrayRef<SpreadWindow> windows,
                                    unsigned loop) {
  for (const SpreadWindow &w : windows)
    if (w.outLoop == loop || w.windowLoop == loop)
      return &w;
  return nullptr;
}

static std::optional<TransposedWindow>
matchTransposedWindow(linalg::GenericOp op, int64_t numDevices) {
  auto config =
      op->getAttrOfType<ConfigAttr>(SoapDialect::getTransposedConfigAttrName());
  if (!config || !op.hasPureTensorSemantics() || op.getNumDpsInits() != 1 ||
      !isIdentityFill(op.getDpsInits()[0], ReductionKind::sum))
    return std::nullopt;
  TransposedWindow match;
  match.ranges = op.getStaticLoopRanges();
  ArrayRef<int64_t> ranges = match.ranges;
  match.degrees = config.getDegrees();
  if (match.degrees.size() != ranges.size() ||
      llvm::any_of(ranges, ShapedType::isDynamic))
    return std::nullopt;
  FailureOr<Plan> plan =
      planForTasks(match.degrees, config.getDevices(), numDevices);
  if (failed(plan))
    return std::nullopt;
  match.plan = std::move(*plan);
  AffineMap resultMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  // The one spread input: read at o + d * k where the result has o.
  std::optional<unsigned> spreadInput;
  for (OpOperand *input : op.getDpsInputOperands()) {
    tensor::InsertSliceOp insert = insertionIntoZeros(input->get());
    if (!insert)
      continue;
    if (spreadInput || !insert->hasOneUse())
      return std::nullopt;
    spreadInput = input->getOperandNumber();
    match.spread = insert;
  }
  if (!spreadInput)
    return std::nullopt;
  match.spreadInput = *spreadInput;
  AffineMap spreadMap = op.getIndexingMapsArray()[*spreadInput];
  ArrayRef<int64_t> offsets = match.spread.getStaticOffsets();
  ArrayRef<int64_t> strides = match.spread.getStaticStrides();
  ArrayRef<int64_t> adjoint = match.spread.getSourceType().getShape();
  for (auto [dim, expr] : llvm::enumerate(spreadMap.getResults())) {
    std::optional<LinearExpr> linear = linearize(expr);
    if (!linear || linear->constant != 0)
      return std::nullopt;
    if (linear->terms.size() == 1 && linear->terms[0].second == 1) {
      // A plain loop: the adjoint's own dimension.
      if (offsets[dim] != 0 || strides[dim] != 1 ||
          adjoint[dim] != ranges[linear->terms[0].first])
        return std::nullopt;
      continue;
    }
    if (linear->terms.size() != 2)
      return std::nullopt;
    auto [first, a] = linear->terms[0];
    auto [second, c] = linear->terms[1];
    bool firstOut = resultMap.isFunctionOfDim(first);
    if (firstOut == resultMap.isFunctionOfDim(second))
      return std::nullopt;
    SpreadWindow w{static_cast<unsigned>(dim), firstOut ? first : second,
                   firstOut ? second : first, strides[dim], firstOut ? c : a};
    // The output position counted once; the spread pads the adjoint by
    // the dilated window on both sides.
    if ((firstOut ? a : c) != 1 || w.dilation <= 0 ||
        offsets[dim] != w.dilation * (ranges[w.windowLoop] - 1))
      return std::nullopt;
    // The windows read inside the gradient.
    if (w.stride * (adjoint[dim] - 1) +
            w.dilation * (ranges[w.windowLoop] - 1) >=
        ranges[w.outLoop])
      return std::nullopt;
    match.windows.push_back(w);
  }
  if (match.windows.empty())
    return std::nullopt;
  // Plain loops elsewhere: the result reads loops, the other inputs loops
  // or unit dimensions at 0.
  for (AffineMap map : op.getIndexingMapsArray())
    for (AffineExpr expr : map.getResults())
      if (map != spreadMap && !isa<AffineDimExpr>(expr)) {
        auto constant = dyn_cast<AffineConstantExpr>(expr);
        if (!constant || constant.getValue() != 0)
          return std::nullopt;
      }
  // Blocks that divide; an output loop's over the forward's output
  // positions (the adjoint's dimension).
  for (auto [loop, range] : llvm::enumerate(ranges)) {
    int64_t size = range;
    for (const SpreadWindow &w : match.windows)
      if (w.outLoop == loop)
        size = adjoint[w.dim];
    if (size % match.degrees[loop] != 0)
      return std::nullopt;
    match.blocks.push_back(size / match.degrees[loop]);
  }
  return match;
}

/// The spread that a handled gradient reads, when `op` is it.
static bool isHandledSpread(Operation *op, int64_t numDevices) {
  auto insert = dyn_cast<tensor::InsertSliceOp>(op);
  if (!insert || !insert->hasOneUse())
    return false;
  auto gradient = dyn_cast<linalg::GenericOp>(*insert->getUsers().begin());
  if (!gradient)
    return false;
  std::optional<TransposedWindow> match =
      matchTransposedWindow(gradient, numDevices);
  return match && match->spread == insert;
}

LogicalResult SpmdPartitioner::partitionTransposedWindow(Operation *op) {
  // The spread: each task spreads its own adjoint block instead.
  if (isa<tensor::InsertSliceOp>(op))
    return success(isHandledSpread(op, numDevices));
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic)
    return failure();
  std::optional<TransposedWindow> match =
      matchTransposedWindow(generic, numDevices);
  if (!match)
    return failure();
  ArrayRef<int64_t> degrees = match->degrees;
  ArrayRef<int64_t> blocks = match->blocks;
  ArrayRef<SpreadWindow> windows = match->windows;
  ArrayRef<int64_t> ranges = match->ranges;
  auto resultType = cast<RankedTensorType>(generic.getResult(0).getType());
  Type element = resultType.getElementType();
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  unsigned numInputs = generic.getNumDpsInputs();

  // A task's box along loop `loop` as an operand that reads it plainly
  // sees it: a window offset flipped (the other operands are read
  // flipped), an output loop as the input rows its windows reach.
  auto loopBox = [&](ArrayRef<int64_t> c, unsigned loop, int64_t &offset,
                     int64_t &size) {
    const SpreadWindow *w = windowOf(windows, loop);
    int64_t start = c[loop] * blocks[loop];
    if (!w) {
      offset = start;
      size = blocks[loop];
    } else if (w->windowLoop == loop) {
      offset = ranges[loop] - start - blocks[loop];
      size = blocks[loop];
    } else {
      int64_t k0 = c[w->windowLoop] * blocks[w->windowLoop];
      offset = start * w->stride + k0 * w->dilation;
      size = (blocks[loop] - 1) * w->stride + 1 +
             w->dilation * (blocks[w->windowLoop] - 1);
    }
  };
  auto boxThrough = [&](AffineMap map, ArrayRef<int64_t> c) {
    Box box;
    for (AffineExpr expr : map.getResults()) {
      int64_t offset = 0, size = 1;
      if (auto dim = dyn_cast<AffineDimExpr>(expr))
        loopBox(c, dim.getPosition(), offset, size);
      box.offsets.push_back(offset);
      box.sizes.push_back(size);
    }
    return box;
  };

  struct SlotBoxes {
    SmallVector<DeviceBoxes> inputs; // the spread's: the adjoint's blocks
    DeviceBoxes result;
    SmallVector<int64_t> active, tasks;
  };
  SmallVector<SlotBoxes, 1> slots;
  for (ArrayRef<int64_t> slot : match->plan.slots) {
    SlotBoxes &boxes = slots.emplace_back();
    boxes.inputs.assign(numInputs, DeviceBoxes(numDevices));
    boxes.result.resize(numDevices);
    boxes.tasks.assign(numDevices, -1);
    for (auto [device, task] : llvm::enumerate(slot)) {
      if (task < 0)
        continue;
      SmallVector<int64_t> c = coordinatesOf(degrees, task);
      for (unsigned i = 0; i < numInputs; ++i) {
        if (i != match->spreadInput) {
          boxes.inputs[i][device] = boxThrough(maps[i], c);
          continue;
        }
        Box adjoint;
        for (AffineExpr expr : maps[i].getResults()) {
          std::optional<LinearExpr> linear = linearize(expr);
          unsigned loop = linear->terms[0].first;
          if (const SpreadWindow *w = windowOf(windows, loop))
            loop = w->outLoop;
          adjoint.offsets.push_back(c[loop] * blocks[loop]);
          adjoint.sizes.push_back(blocks[loop]);
        }
        boxes.inputs[i][device] = std::move(adjoint);
      }
      boxes.result[device] = boxThrough(maps[numInputs], c);
      boxes.active.push_back(device);
      boxes.tasks[device] = task;
    }
  }
  // Partial sums where two tasks' boxes overlap.
  bool overlap = tasksOverlap(llvm::to_vector(
      llvm::map_range(slots, [](const SlotBoxes &s) { return s.result; })));

  Location loc = op->getLoc();
  b.setInsertionPoint(op);
  Block &body = generic.getRegion().front();
  Value adjoint = match->spread.getSource();
  realizeTranspose(adjoint, op);
  for (auto [i, input] : llvm::enumerate(generic.getDpsInputs()))
    if (i != match->spreadInput && !body.getArgument(i).use_empty())
      realizeTranspose(input, op);
  DistValue result;
  for (SlotBoxes &boxes : slots) {
    auto shapeOf = [&](const DeviceBoxes &target) {
      return target[boxes.active.front()]->sizes;
    };
    // The operands the body reads, brought to the task's blocks; those it
    // does not read (the forward input, read for its shape) are empty.
    SmallVector<Value> locals(numInputs);
    for (unsigned i = 0; i < numInputs; ++i) {
      Value input = generic.getDpsInputs()[i];
      if (i == match->spreadInput) {
        locals[i] = materialize(adjoint, boxes.inputs[i], loc);
        continue;
      }
      if (!body.getArgument(i).use_empty())
        locals[i] = materialize(input, boxes.inputs[i], loc);
    }
    auto localType = RankedTensorType::get(shapeOf(boxes.result), element);
    Value local = onDevices(
        boxes.active, localType,
        [&]() -> Value {
          auto zeros = [&](ArrayRef<int64_t> shape) {
            return identityFilled(b, loc, RankedTensorType::get(shape, element),
                                  ReductionKind::sum);
          };
          IRMapping mapping;
          for (unsigned i = 0; i < numInputs; ++i) {
            Value input = generic.getDpsInputs()[i];
            Value value = locals[i];
            if (i == match->spreadInput) {
              // The task's adjoint block, spread by the stride and padded
              // by its part of the dilated window.
              ArrayRef<int64_t> sizes = shapeOf(boxes.inputs[i]);
              SmallVector<int64_t> shape(sizes), offsets(sizes.size(), 0),
                  strides(sizes.size(), 1);
              for (const SpreadWindow &w : windows) {
                int64_t pad = w.dilation * (blocks[w.windowLoop] - 1);
                shape[w.dim] = (sizes[w.dim] - 1) * w.stride + 1 + 2 * pad;
                offsets[w.dim] = pad;
                strides[w.dim] = w.stride;
              }
              MLIRContext *context = b.getContext();
              value = tensor::InsertSliceOp::create(
                  b, loc, value, zeros(shape),
                  getAsIndexOpFoldResult(context, offsets),
                  getAsIndexOpFoldResult(context, sizes),
                  getAsIndexOpFoldResult(context, strides));
            } else if (!value) {
              value = tensor::EmptyOp::create(
                  b, loc, shapeOf(boxes.inputs[i]),
                  cast<RankedTensorType>(input.getType()).getElementType());
            }
            mapping.map(input, value);
          }
          mapping.map(generic.getDpsInits()[0], zeros(localType.getShape()));
          Operation *task = b.clone(*op, mapping);
          task->removeAttr(SoapDialect::getTransposedConfigAttrName());
          task->removeAttr(SoapDialect::getConfigAttrName());
          task->getResult(0).setType(localType);
          return task->getResult(0);
        },
        loc);
    Piece piece{local, std::move(boxes.result), boxes.tasks, std::nullopt};
    if (overlap)
      piece.partial = ReductionKind::sum;
    result.pieces.push_back(std::move(piece));
  }
  result.zerosElsewhere = true;
  dist[generic.getResult(0)] = std::move(result);
  return success();
}

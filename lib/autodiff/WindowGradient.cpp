//===- WindowGradient.cpp - gradients through convolution windows ---------===//
//
// A convolution or pooling, in any layout and with any number of spatial
// dimensions, is a generic that reads its input at `s * o + d * k + c`:
// `o` an output position, `k` a window offset (a reduction loop), `s` the
// stride, `d` the dilation. The gradient with respect to that input:
//
// - for sums (convolutions, depthwise, grouped, sum pooling), the
//   "transposed convolution": the output's adjoint is spread (zeros between
//   its elements for the stride, around them for the window) and read at
//   `i + d * k'`, where `i` now runs over the input's positions and every
//   other operand that reads `k` is read flipped (`k' = K - 1 - k`). One
//   generic over the forward loops, writing the input's gradient through a
//   projection; a body's derivative other than a product is allowed.
// - for max and min (pooling), each window offset's strided slice of the
//   input gets the adjoint where it equals the result, as an update of the
//   gradient's own slice (updated in place after bufferization).
//
//===----------------------------------------------------------------------===//

#include "GenericBody.h"
#include "soap/support/LinearAffine.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;

namespace soap::autodiff {

namespace {

/// One result of the input's map that reads a window.
struct Window {
  unsigned result;    // position in the input's map
  unsigned outLoop;   // o: a loop the output reads
  unsigned windowLoop; // k: a reduction loop the output does not read
  int64_t stride, dilation, offset;
};

/// The input's map, split into plain loops and windows.
struct WindowedMap {
  SmallVector<Window> windows;
  /// The input's map with each window replaced by its output loop: a
  /// projection over the forward loops.
  AffineMap projected;
};

} // namespace

/// Splits `map` (how input `operand` is read) into plain loops and
/// windows; fails when a result is neither.
static FailureOr<WindowedMap> analyzeWindows(linalg::GenericOp op,
                                             AffineMap map,
                                             AffineMap outputMap) {
  auto readsPlain = [](AffineMap m, unsigned loop) {
    return llvm::any_of(m.getResults(), [&](AffineExpr e) {
      auto dim = dyn_cast<AffineDimExpr>(e);
      return dim && dim.getPosition() == loop;
    });
  };
  WindowedMap result;
  SmallVector<AffineExpr> projected;
  SmallVector<unsigned> seen;
  MLIRContext *context = op.getContext();
  for (auto [index, expr] : llvm::enumerate(map.getResults())) {
    std::optional<LinearExpr> linear = linearize(expr);
    if (!linear)
      return failure();
    if (linear->terms.size() == 1 && linear->terms[0].second == 1 &&
        linear->constant == 0) {
      projected.push_back(expr);
      seen.push_back(linear->terms[0].first);
      continue;
    }
    if (linear->terms.empty()) {
      projected.push_back(expr);
      continue;
    }
    if (linear->terms.size() != 2 || linear->constant < 0)
      return failure();
    auto [first, firstCoefficient] = linear->terms[0];
    auto [second, secondCoefficient] = linear->terms[1];
    if (firstCoefficient <= 0 || secondCoefficient <= 0)
      return failure();
    bool firstOut = readsPlain(outputMap, first);
    bool secondOut = readsPlain(outputMap, second);
    if (firstOut == secondOut)
      return failure();
    Window w;
    w.result = index;
    w.outLoop = firstOut ? first : second;
    w.windowLoop = firstOut ? second : first;
    w.stride = firstOut ? firstCoefficient : secondCoefficient;
    w.dilation = firstOut ? secondCoefficient : firstCoefficient;
    w.offset = linear->constant;
    if (outputMap.isFunctionOfDim(w.windowLoop) ||
        op.getIteratorTypesArray()[w.windowLoop] !=
            utils::IteratorType::reduction)
      return failure();
    result.windows.push_back(w);
    projected.push_back(getAffineDimExpr(w.outLoop, context));
    seen.push_back(w.outLoop);
    seen.push_back(w.windowLoop);
  }
  // Each loop at most once.
  SmallVector<unsigned> sorted(seen);
  llvm::sort(sorted);
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    return failure();
  result.projected =
      AffineMap::get(map.getNumDims(), 0, projected, context);
  return result;
}

/// Whether `map` reads `loop` anywhere.
static bool readsLoop(AffineMap map, unsigned loop) {
  return map.isFunctionOfDim(loop);
}

/// `value` with the dimensions `dims` reversed.
static Value reversed(GradientBuilder &g, Location loc, Value value,
                      ArrayRef<unsigned> dims) {
  OpBuilder &b = g.b;
  auto type = cast<RankedTensorType>(value.getType());
  unsigned rank = type.getRank();
  SmallVector<AffineExpr> reads;
  for (unsigned d = 0; d < rank; ++d) {
    AffineExpr dim = b.getAffineDimExpr(d);
    reads.push_back(llvm::is_contained(dims, d)
                        ? type.getDimSize(d) - 1 - dim
                        : dim);
  }
  Value empty =
      tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  return linalg::GenericOp::create(
             b, loc, TypeRange{type}, ValueRange{value}, ValueRange{empty},
             ArrayRef<AffineMap>{AffineMap::get(rank, 0, reads, b.getContext()),
                                 b.getMultiDimIdentityMap(rank)},
             SmallVector<utils::IteratorType>(rank,
                                              utils::IteratorType::parallel),
             [](OpBuilder &nb, Location l, ValueRange args) {
               linalg::YieldOp::create(nb, l, args[0]);
             })
      .getResult(0);
}

/// The index of `linalg.index dim` in a gradient over the forward loops,
/// none for the loops the gradient reinterprets.
static Value sameIndex(ArrayRef<Window> windows, OpBuilder &b, Location loc,
                       unsigned dim) {
  for (const Window &w : windows)
    if (dim == w.outLoop || dim == w.windowLoop)
      return {};
  return linalg::IndexOp::create(b, loc, dim);
}

/// Sums: the transposed convolution.
static FailureOr<Value> spreadGradient(GradientBuilder &g, linalg::GenericOp op,
                                       const OutputForm &form, Value adjoint,
                                       OpOperand &operand,
                                       const WindowedMap &windowed) {
  OpBuilder &b = g.b;
  Location loc = op.getLoc();
  MLIRContext *context = b.getContext();
  Block &body = op.getRegion().front();
  OpOperand *init = op.getDpsInitOperand(form.output);
  AffineMap outputMap = op.getMatchingIndexingMap(init);
  SmallVector<int64_t> loopRanges = op.getStaticLoopRanges();
  auto operandType = cast<RankedTensorType>(operand.get().getType());
  auto adjointType = cast<RankedTensorType>(adjoint.getType());

  // The other inputs: none may read an output position of a window; those
  // the body reads and that read a window offset are flipped along it.
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    if (input == &operand) {
      inputs.push_back(input->get());
      maps.push_back(windowed.projected);
      continue;
    }
    bool used = !body.getArgument(input->getOperandNumber()).use_empty();
    SmallVector<unsigned> flip;
    for (const Window &w : windowed.windows) {
      if (used && readsLoop(map, w.outLoop))
        return form.reportOn->emitOpError("cannot be differentiated: operand ")
               << input->getOperandNumber()
               << " reads the output position its input "
               << operand.getOperandNumber() << " is windowed by";
      if (!used || !readsLoop(map, w.windowLoop))
        continue;
      for (auto [index, expr] : llvm::enumerate(map.getResults())) {
        auto dim = dyn_cast<AffineDimExpr>(expr);
        if (dim && dim.getPosition() == w.windowLoop)
          flip.push_back(index);
        else if (expr.isFunctionOfDim(w.windowLoop))
          return form.reportOn->emitOpError(
                     "cannot be differentiated: operand ")
                 << input->getOperandNumber()
                 << " reads window offset d" << w.windowLoop
                 << " in an index expression";
      }
    }
    inputs.push_back(flip.empty() ? input->get()
                                  : reversed(g, loc, input->get(), flip));
    maps.push_back(map);
  }

  // The adjoint, spread: element o of a window's output dimension moves to
  // d * (K - 1) + c + s * o, in a dimension of the input's size plus
  // d * (K - 1); the gradient reads it at i + d * k'.
  SmallVector<int64_t> spreadShape(adjointType.getShape());
  SmallVector<int64_t> offsets(adjointType.getRank(), 0);
  SmallVector<int64_t> strides(adjointType.getRank(), 1);
  SmallVector<AffineExpr> adjointReads(outputMap.getResults());
  for (const Window &w : windowed.windows) {
    std::optional<unsigned> position =
        outputMap.getResultPosition(getAffineDimExpr(w.outLoop, context));
    if (!position)
      return failure();
    int64_t halo = w.dilation * (loopRanges[w.windowLoop] - 1);
    spreadShape[*position] = operandType.getDimSize(w.result) + halo;
    offsets[*position] = halo + w.offset;
    strides[*position] = w.stride;
    adjointReads[*position] = getAffineDimExpr(w.outLoop, context) +
                              getAffineDimExpr(w.windowLoop, context) *
                                  w.dilation;
  }
  auto spreadType =
      RankedTensorType::get(spreadShape, adjointType.getElementType());
  inputs.push_back(
      g.insertIntoZeros(loc, adjoint, spreadType, offsets, strides));
  maps.push_back(
      AffineMap::get(op.getNumLoops(), 0, adjointReads, context));

  AffineMap gradientMap;
  RankedTensorType gradientType =
      projectedGradientType(windowed.projected, operandType, gradientMap);
  maps.push_back(gradientMap);
  SmallVector<utils::IteratorType> iterators;
  for (unsigned loop = 0; loop < op.getNumLoops(); ++loop)
    iterators.push_back(gradientMap.isFunctionOfDim(loop)
                            ? utils::IteratorType::parallel
                            : utils::IteratorType::reduction);

  unsigned numInputs = op.getNumDpsInputs();
  BlockArgument target = body.getArgument(operand.getOperandNumber());
  LogicalResult status = success();
  auto gradient = linalg::GenericOp::create(
      b, loc, TypeRange{gradientType}, inputs,
      ValueRange{g.zeros(loc, gradientType)}, maps, iterators,
      [&](OpBuilder &nb, Location l, ValueRange args) {
        IRMapping mapping;
        for (unsigned i = 0; i < numInputs; ++i)
          mapping.map(body.getArgument(i), args[i]);
        FailureOr<Value> contribution = emitContribution(
            nb, l, op, form, mapping, args[numInputs], Value(), target,
            [&](OpBuilder &ib, Location il, unsigned dim) {
              return sameIndex(windowed.windows, ib, il, dim);
            });
        yieldAccumulated(nb, l, args[numInputs + 1], contribution, status);
      });
  // The forward config, where it splits neither a window offset nor an
  // output position a window reads (a batch or channel split of a
  // depthwise convolution or a sum pooling): the gradient's loops are the
  // forward loops, and each task computes the gradient of its block of the
  // input where its forward task ran, as the simulator prices the op's
  // backward task. Where it splits them, the gradient's loops over input
  // positions are not the forward's: it goes as soap.transposed_config,
  // and the partitioner runs each forward task's part of the gradient
  // (partition/TransposedWindow.cpp). Without a config, the partitioner
  // runs the gradient where its operands are.
  if (ConfigAttr config = g.forwardConfig) {
    ArrayRef<int64_t> degrees = config.getDegrees();
    bool unsplit = llvm::all_of(windowed.windows, [&](const Window &w) {
      return degrees[w.windowLoop] == 1 && degrees[w.outLoop] == 1;
    });
    gradient->setAttr(unsplit ? SoapDialect::getConfigAttrName()
                              : SoapDialect::getTransposedConfigAttrName(),
                      config);
  }
  return finishGradient(b, gradient, status, operandType, windowed.projected);
}

/// Max and min: per window offset, a masked update of the gradient's
/// strided slice.
static FailureOr<Value> maskedGradient(GradientBuilder &g, linalg::GenericOp op,
                                       const OutputForm &form, Value adjoint,
                                       Value forward, OpOperand &operand,
                                       const WindowedMap &windowed) {
  OpBuilder &b = g.b;
  Location loc = op.getLoc();
  MLIRContext *context = b.getContext();
  Block &body = op.getRegion().front();
  AffineMap outputMap =
      op.getMatchingIndexingMap(op.getDpsInitOperand(form.output));
  SmallVector<int64_t> loopRanges = op.getStaticLoopRanges();
  auto operandType = cast<RankedTensorType>(operand.get().getType());
  unsigned numLoops = op.getNumLoops();

  // The gradient's loops: the forward loops but the window offsets, each
  // of which the projected input map must read (the update writes there).
  auto isWindowLoop = [&](unsigned loop) {
    return llvm::any_of(windowed.windows,
                        [&](const Window &w) { return w.windowLoop == loop; });
  };
  SmallVector<int64_t> newLoop(numLoops, -1);
  unsigned numNewLoops = 0;
  for (unsigned loop = 0; loop < numLoops; ++loop) {
    if (isWindowLoop(loop))
      continue;
    if (!windowed.projected.isFunctionOfDim(loop))
      return form.reportOn->emitOpError(
                 "cannot be differentiated: its min/max reduces over loop ")
             << loop << ", which its windowed input "
             << operand.getOperandNumber() << " does not read";
    newLoop[loop] = numNewLoops++;
  }
  for (AffineExpr expr : windowed.projected.getResults())
    if (!isa<AffineDimExpr>(expr))
      return form.reportOn->emitOpError(
          "cannot be differentiated: its windowed min/max input has a "
          "constant index");
  SmallVector<AffineExpr> compress;
  for (unsigned loop = 0; loop < numLoops; ++loop)
    compress.push_back(newLoop[loop] < 0
                           ? getAffineConstantExpr(0, context)
                           : getAffineDimExpr(newLoop[loop], context));
  auto compressed = [&](AffineMap map) {
    return map.replaceDimsAndSymbols(compress, {}, numNewLoops, 0);
  };

  // The inputs the body reads, but the windowed one, may not read a window
  // offset.
  SmallVector<unsigned> readInputs;
  for (OpOperand *input : op.getDpsInputOperands()) {
    if (input == &operand ||
        body.getArgument(input->getOperandNumber()).use_empty())
      continue;
    AffineMap map = op.getMatchingIndexingMap(input);
    for (const Window &w : windowed.windows)
      if (readsLoop(map, w.windowLoop))
        return form.reportOn->emitOpError("cannot be differentiated: operand ")
               << input->getOperandNumber()
               << " reads a window offset of its min/max";
    readInputs.push_back(input->getOperandNumber());
  }

  AffineMap sliceMap = compressed(windowed.projected);
  SmallVector<int64_t> sizes(operandType.getShape());
  SmallVector<int64_t> strides(operandType.getRank(), 1);
  for (const Window &w : windowed.windows) {
    sizes[w.result] = loopRanges[w.outLoop];
    strides[w.result] = w.stride;
  }
  SmallVector<AffineMap> maps;
  for (unsigned index : readInputs)
    maps.push_back(compressed(op.getIndexingMapsArray()[index]));
  maps.push_back(sliceMap);                // the window's slice of the input
  maps.push_back(compressed(outputMap));   // the adjoint
  maps.push_back(compressed(outputMap));   // the forward result
  maps.push_back(sliceMap);                // the gradient's slice
  SmallVector<utils::IteratorType> iterators(numNewLoops,
                                             utils::IteratorType::parallel);

  // The forward config, where it splits neither a window offset nor an
  // output position a window reads (a batch or channel split): the
  // updates' loops are the forward loops but the window offsets, the
  // slices' and the gradient's dimensions the input's, each read by one
  // forward loop. Each device then updates its part of the gradient in
  // place, as the simulator prices the pooling's backward task; unset, the
  // partitioner made the gradient's zeros whole on every device.
  ConfigAttr updateConfig, sliceConfig;
  if (ConfigAttr config = g.forwardConfig) {
    ArrayRef<int64_t> degrees = config.getDegrees();
    bool plain = llvm::all_of(windowed.windows, [&](const Window &w) {
      return degrees[w.windowLoop] == 1 && degrees[w.outLoop] == 1;
    });
    if (plain) {
      SmallVector<unsigned> kept, dims;
      for (unsigned loop = 0; loop < numLoops; ++loop)
        if (!isWindowLoop(loop))
          kept.push_back(loop);
      for (AffineExpr expr : windowed.projected.getResults())
        dims.push_back(cast<AffineDimExpr>(expr).getPosition());
      // Every split loop must be one of the input's dimensions.
      bool covered = true;
      for (unsigned loop = 0; loop < numLoops; ++loop)
        covered &= degrees[loop] == 1 || llvm::is_contained(dims, loop);
      if (covered) {
        updateConfig = reorderedConfig(config, kept);
        sliceConfig = reorderedConfig(config, dims);
      }
    }
  }
  auto configure = [](Value value, ConfigAttr config) {
    if (config)
      value.getDefiningOp()->setAttr(SoapDialect::getConfigAttrName(), config);
    return value;
  };

  Value gradient = configure(g.zeros(loc, operandType), sliceConfig);
  // Every combination of window offsets.
  SmallVector<int64_t> offsetOf(windowed.windows.size(), 0);
  while (true) {
    SmallVector<int64_t> offsets(operandType.getRank(), 0);
    for (auto [w, k] : llvm::zip(windowed.windows, offsetOf))
      offsets[w.result] = w.dilation * k + w.offset;
    Value window = configure(
        g.slice(loc, operand.get(), offsets, sizes, strides), sliceConfig);
    Value current =
        configure(g.slice(loc, gradient, offsets, sizes, strides), sliceConfig);
    SmallVector<Value> inputs;
    for (unsigned index : readInputs)
      inputs.push_back(op->getOperand(index));
    inputs.append({window, adjoint, forward});
    LogicalResult status = success();
    auto update = linalg::GenericOp::create(
        b, loc, TypeRange{current.getType()}, inputs, ValueRange{current},
        maps, iterators, [&](OpBuilder &nb, Location l, ValueRange args) {
          IRMapping mapping;
          for (auto [i, index] : llvm::enumerate(readInputs))
            mapping.map(body.getArgument(index), args[i]);
          unsigned next = readInputs.size();
          BlockArgument target = body.getArgument(operand.getOperandNumber());
          mapping.map(target, args[next]);
          FailureOr<Value> contribution = emitContribution(
              nb, l, op, form, mapping, args[next + 1], args[next + 2], target,
              [&](OpBuilder &ib, Location il, unsigned dim) -> Value {
                for (auto [w, k] : llvm::zip(windowed.windows, offsetOf))
                  if (w.windowLoop == dim)
                    return arith::ConstantIndexOp::create(ib, il, k);
                return linalg::IndexOp::create(ib, il, newLoop[dim]);
              });
          yieldAccumulated(nb, l, args[next + 3], contribution, status);
        });
    if (failed(status)) {
      update->erase();
      return failure();
    }
    configure(update.getResult(0), updateConfig);
    gradient = configure(
        tensor::InsertSliceOp::create(b, loc, update.getResult(0), gradient,
                                      getAsIndexOpFoldResult(context, offsets),
                                      getAsIndexOpFoldResult(context, sizes),
                                      getAsIndexOpFoldResult(context, strides)),
        sliceConfig);
    // The next combination.
    unsigned w = 0;
    for (; w < offsetOf.size(); ++w) {
      if (++offsetOf[w] < loopRanges[windowed.windows[w].windowLoop])
        break;
      offsetOf[w] = 0;
    }
    if (w == offsetOf.size())
      break;
  }
  return gradient;
}

FailureOr<Value> buildWindowGradient(GradientBuilder &g, linalg::GenericOp op,
                                     const OutputForm &form, Value adjoint,
                                     Value forward, OpOperand &operand) {
  AffineMap map = op.getMatchingIndexingMap(&operand);
  AffineMap outputMap =
      op.getMatchingIndexingMap(op.getDpsInitOperand(form.output));
  FailureOr<WindowedMap> windowed = analyzeWindows(op, map, outputMap);
  if (failed(windowed) || windowed->windows.empty() || form.readsOutput) {
    std::string text;
    llvm::raw_string_ostream os(text);
    map.print(os);
    return form.reportOn->emitOpError("cannot be differentiated: operand ")
           << operand.getOperandNumber() << " is read through " << text
           << ", which is neither a projection of the loops nor a window "
              "(s * o + d * k) over them";
  }
  switch (form.combiner) {
  case Combiner::Add:
    return spreadGradient(g, op, form, adjoint, operand, *windowed);
  case Combiner::Max:
  case Combiner::Min:
    return maskedGradient(g, op, form, adjoint, forward, operand, *windowed);
  case Combiner::None:
  case Combiner::Mul:
    break;
  }
  return form.reportOn->emitOpError("cannot be differentiated: operand ")
         << operand.getOperandNumber()
         << " is read through a window of a reduction that is not a sum, "
            "maximum or minimum";
}

} // namespace soap::autodiff

//===- TensorGradients.cpp - gradients of tensor dialect ops --------------===//
//
// Data movement: a pad's gradient is a slice, a slice's an insertion into
// zeros, an insertion's a slice (for the inserted tensor) and the adjoint
// with zeros where it was inserted (for the destination), a reshape's the
// inverse reshape, a concatenation's the slices of its inputs.
//
//===----------------------------------------------------------------------===//

#include "GradientBuilder.h"
#include "soap/graph/ParallelConfig.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace soap::autodiff {

/// `gradient`, made by an op over the same loops as the forward op (a
/// reshape's inverse, a slice's insertion into zeros), carrying the forward
/// op's #soap.config, so that the partitioned backward pass moves the data the
/// simulator prices for it.
static Value withForwardConfig(GradientBuilder &g, Value gradient) {
  if (g.forwardConfig)
    gradient.getDefiningOp()->setAttr(SoapDialect::getConfigAttrName(),
                                      g.forwardConfig);
  return gradient;
}

/// Whether the parts of a dimension of `size`, padded by `low` and `high`,
/// that `degree` even blocks of the padded dimension read are the even
/// blocks of the dimension itself.
static bool evenPadParts(int64_t size, int64_t low, int64_t high,
                         int64_t degree) {
  int64_t padded = size + low + high;
  if (degree == 1)
    return true;
  if (ShapedType::isDynamic(high) || padded % degree || size % degree)
    return false;
  int64_t block = padded / degree, part = size / degree;
  for (int64_t t = 0; t < degree; ++t)
    if (std::max<int64_t>(0, t * block - low) != t * part ||
        std::min<int64_t>(size, (t + 1) * block - low) != (t + 1) * part)
      return false;
  return true;
}

/// The config of the slice that takes input [offset, offset + length) of a
/// concatenation along `dim` (of `size`) out of its adjoint, given the
/// concatenation's `config`: the tasks whose blocks lie in that input, on
/// the same devices, over the input's loops. Null when a block lies across
/// inputs.
static ConfigAttr inputConfig(ConfigAttr config, int64_t dim, int64_t offset,
                              int64_t length, int64_t size) {
  if (!config)
    return {};
  ArrayRef<int64_t> degrees = config.getDegrees();
  if (degrees[dim] == 1)
    return config; // every task reads its part of every input
  int64_t block = size / degrees[dim];
  if (block == 0 || offset % block != 0 || length % block != 0)
    return {};
  int64_t first = offset / block, last = (offset + length) / block;
  SmallVector<int64_t> sliceDegrees(degrees);
  sliceDegrees[dim] = last - first;
  ParallelConfig grid{{degrees.begin(), degrees.end()}, {}};
  SmallVector<int64_t> devices;
  for (auto [task, device] : llvm::enumerate(config.getDevices())) {
    int64_t coordinate = grid.taskCoordinates(static_cast<int64_t>(task))[dim];
    if (coordinate >= first && coordinate < last)
      devices.push_back(device);
  }
  return ConfigAttr::get(config.getContext(), sliceDegrees, devices);
}

LogicalResult differentiateTensorOp(GradientBuilder &g, Operation *op) {
  OpBuilder &b = g.b;
  Location loc = op->getLoc();
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](tensor::EmptyOp) { return success(); })
      .Case([&](tensor::PadOp pad) -> LogicalResult {
        if (g.isActive(pad.getConstantPaddingValue()))
          return pad.emitOpError("cannot be differentiated: the padding "
                                 "value depends on the parameters");
        // Padding given by constant index values (IREE writes
        // `low[%c0, %c1, %c0]`) is as static as the attribute form.
        std::optional<SmallVector<int64_t>> low =
            getConstantIntValues(pad.getMixedLowPad());
        if (!low || !getConstantIntValues(pad.getMixedHighPad()) ||
            !pad.getSourceType().hasStaticShape())
          return pad.emitOpError(
              "cannot be differentiated: only static padding is supported");
        if (!g.isActive(pad.getSource()))
          return success();
        ArrayRef<int64_t> sizes = pad.getSourceType().getShape();
        SmallVector<int64_t> strides(sizes.size(), 1);
        Value slice =
            g.slice(loc, g.adjoint(pad.getResult()), *low, sizes, strides);
        // The pad's config over the slice's loops (the source's) where each
        // pad task's part of the source is the slice's even block (splits
        // of unpadded dimensions; 2 blocks of a dimension padded alike on
        // both sides): each task slices the source's part out of its block
        // of the adjoint, as the simulator prices the pad's backward task.
        if (g.forwardConfig &&
            llvm::all_of(
                llvm::enumerate(g.forwardConfig.getDegrees()), [&](auto item) {
                  auto [dim, degree] = item;
                  return evenPadParts(sizes[dim], (*low)[dim],
                                      pad.getStaticHigh()[dim], degree);
                }))
          slice.getDefiningOp()->setAttr(SoapDialect::getConfigAttrName(),
                                         g.forwardConfig);
        g.accumulate(loc, pad.getSource(), slice);
        return success();
      })
      .Case([&](tensor::ExtractSliceOp slice) {
        if (!g.isActive(slice.getSource()))
          return success();
        // Over the slice's loops: the insertion carries the slice's config.
        Value zeros = g.zeros(loc, slice.getSourceType());
        g.accumulate(loc, slice.getSource(),
                     withForwardConfig(
                         g, tensor::InsertSliceOp::create(
                                b, loc, g.adjoint(slice.getResult()), zeros,
                                slice.getMixedOffsets(), slice.getMixedSizes(),
                                slice.getMixedStrides())));
        return success();
      })
      .Case([&](tensor::InsertSliceOp insert) {
        Value adjoint = g.adjoint(insert.getResult());
        if (g.isActive(insert.getSource()))
          g.accumulate(loc, insert.getSource(),
                       tensor::ExtractSliceOp::create(
                           b, loc, insert.getSourceType(), adjoint,
                           insert.getMixedOffsets(), insert.getMixedSizes(),
                           insert.getMixedStrides()));
        if (g.isActive(insert.getDest())) {
          Value zeros = g.zeros(loc, insert.getSourceType());
          g.accumulate(loc, insert.getDest(),
                       tensor::InsertSliceOp::create(
                           b, loc, zeros, adjoint, insert.getMixedOffsets(),
                           insert.getMixedSizes(), insert.getMixedStrides()));
        }
        return success();
      })
      .Case([&](tensor::ExpandShapeOp expand) {
        if (g.isActive(expand.getSrc()))
          g.accumulate(
              loc, expand.getSrc(),
              withForwardConfig(g, tensor::CollapseShapeOp::create(
                                       b, loc, expand.getSrcType(),
                                       g.adjoint(expand.getResult()),
                                       expand.getReassociationIndices())));
        return success();
      })
      .Case([&](tensor::CollapseShapeOp collapse) -> LogicalResult {
        if (!collapse.getSrcType().hasStaticShape())
          return collapse.emitOpError(
              "cannot be differentiated: only static shapes are supported");
        if (g.isActive(collapse.getSrc()))
          g.accumulate(
              loc, collapse.getSrc(),
              withForwardConfig(g, tensor::ExpandShapeOp::create(
                                       b, loc, collapse.getSrcType(),
                                       g.adjoint(collapse.getResult()),
                                       collapse.getReassociationIndices())));
        return success();
      })
      .Case([&](tensor::ConcatOp concat) -> LogicalResult {
        if (!concat.getResultType().hasStaticShape())
          return concat.emitOpError(
              "cannot be differentiated: only static shapes are supported");
        Value adjoint = g.adjoint(concat.getResult());
        int64_t dim = static_cast<int64_t>(concat.getDim());
        int64_t offset = 0;
        for (Value input : concat.getInputs()) {
          auto type = cast<RankedTensorType>(input.getType());
          if (g.isActive(input)) {
            SmallVector<int64_t> offsets(type.getRank(), 0);
            offsets[dim] = offset;
            SmallVector<int64_t> strides(type.getRank(), 1);
            // The slice's loops are the concatenation's, but along `dim`
            // (over this input): the tasks of the forward blocks in it.
            Value slice =
                g.slice(loc, adjoint, offsets, type.getShape(), strides);
            if (ConfigAttr config = inputConfig(
                    g.forwardConfig, dim, offset, type.getDimSize(dim),
                    concat.getResultType().getDimSize(dim)))
              slice.getDefiningOp()->setAttr(SoapDialect::getConfigAttrName(),
                                             config);
            g.accumulate(loc, input, slice);
          }
          offset += type.getDimSize(dim);
        }
        return success();
      })
      .Case([&](tensor::CastOp castOp) {
        if (g.isActive(castOp.getSource()))
          g.accumulate(loc, castOp.getSource(),
                       tensor::CastOp::create(b, loc,
                                              castOp.getSource().getType(),
                                              g.adjoint(castOp.getResult())));
        return success();
      })
      .Default([&](Operation *other) {
        return other->emitOpError(
            "cannot be differentiated: no gradient rule for it");
      });
}

} // namespace soap::autodiff

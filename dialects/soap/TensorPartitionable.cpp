//===- TensorPartitionable.cpp - tensor ops seen as loop nests ------------===//
//
// Data-movement ops of the tensor dialect as parallel loop nests over one of
// their tensors, so SOAP can split them like compute ops:
//  - empty, pad, concat, extract_slice: the loops run over the result;
//  - expand_shape, collapse_shape: over the finer (expanded) shape, so every
//    index is linear in the loops (a collapsed index is d0 * n1 + d1);
//  - insert_slice: over the inserted source.
//
//===----------------------------------------------------------------------===//

#include "soap/Dialect/PartitionableInterface.h"
#include "soap/Dialect/SpmdRewriter.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace soap;

namespace {

static SmallVector<int64_t> shapeOf(Value value) {
  return llvm::to_vector(cast<ShapedType>(value.getType()).getShape());
}

/// What every tensor op model shares: parallel loops named d0, d1, ... and
/// no arithmetic.
template <typename Model, typename OpTy>
struct TensorModelBase
    : public PartitionableOpInterface::ExternalModel<Model, OpTy> {
  SmallVector<utils::IteratorType> getLoopIteratorTypes(Operation *op) const {
    size_t numLoops = static_cast<const Model *>(this)->getLoopSizes(op).size();
    return SmallVector<utils::IteratorType>(numLoops,
                                            utils::IteratorType::parallel);
  }
  SmallVector<std::string> getLoopNames(Operation *op) const {
    size_t numLoops = static_cast<const Model *>(this)->getLoopSizes(op).size();
    SmallVector<std::string> names;
    for (size_t i = 0; i < numLoops; ++i)
      names.push_back("d" + std::to_string(i));
    return names;
  }
  double getFlopsPerIteration(Operation *) const { return 0; }
};

/// `offset + stride * loop` for static values; constant 0 / stride 1 stand
/// in for dynamic offsets (they do not change a footprint).
static AffineExpr sliceIndex(MLIRContext *context, unsigned loop,
                             int64_t offset, int64_t stride) {
  AffineExpr expr = getAffineDimExpr(loop, context) *
                    (ShapedType::isDynamic(stride) ? 1 : stride);
  return ShapedType::isDynamic(offset) ? expr : expr + offset;
}

//===----------------------------------------------------------------------===//

struct EmptyModel : TensorModelBase<EmptyModel, tensor::EmptyOp> {
  SmallVector<int64_t> getLoopSizes(Operation *op) const {
    return shapeOf(op->getResult(0));
  }
  SmallVector<OperandAccess> getOperandAccesses(Operation *op) const {
    auto map = AffineMap::getMultiDimIdentityMap(getLoopSizes(op).size(),
                                                 op->getContext());
    return {{op->getResult(0), map, AccessRole::Unread}};
  }
};

/// Map from the expanded shape's loops to the collapsed shape's indices:
/// each group [r0 .. rk] becomes r0 * (n1 * ... * nk) + ... + rk.
static FailureOr<AffineMap>
collapsingMap(ArrayRef<int64_t> expandedShape,
              ArrayRef<ReassociationIndices> groups, MLIRContext *context) {
  SmallVector<AffineExpr> results;
  for (const ReassociationIndices &group : groups) {
    AffineExpr expr = getAffineConstantExpr(0, context);
    int64_t stride = 1;
    for (int64_t i = group.size() - 1; i >= 0; --i) {
      int64_t loop = group[i];
      expr = expr + getAffineDimExpr(loop, context) * stride;
      if (i > 0) {
        if (ShapedType::isDynamic(expandedShape[loop]))
          return failure();
        stride *= expandedShape[loop];
      }
    }
    results.push_back(expr);
  }
  return AffineMap::get(expandedShape.size(), 0, results, context);
}

static std::optional<std::string>
dynamicReshapeReason(ArrayRef<int64_t> expandedShape,
                     ArrayRef<ReassociationIndices> groups) {
  // collapsingMap needs every size of a group but the first.
  for (const ReassociationIndices &group : groups)
    for (size_t i = 1; i < group.size(); ++i)
      if (ShapedType::isDynamic(expandedShape[group[i]]))
        return std::string("a reshape with a dynamic inner dimension");
  return std::nullopt;
}

struct ExpandShapeModel
    : TensorModelBase<ExpandShapeModel, tensor::ExpandShapeOp> {
  LogicalResult partition(Operation *op, SpmdRewriter &rewriter) const {
    if (succeeded(rewriter.partitionByConfig(op)))
      return success();
    return rewriter.partitionReshape(op);
  }
  SmallVector<int64_t> getLoopSizes(Operation *op) const {
    return shapeOf(op->getResult(0));
  }
  SmallVector<OperandAccess> getOperandAccesses(Operation *op) const {
    auto expand = cast<tensor::ExpandShapeOp>(op);
    SmallVector<int64_t> shape = getLoopSizes(op);
    MLIRContext *context = op->getContext();
    FailureOr<AffineMap> sourceMap = collapsingMap(
        shape, expand.getReassociationIndices(), context);
    AffineMap identity = AffineMap::getMultiDimIdentityMap(shape.size(),
                                                           context);
    SmallVector<OperandAccess> accesses;
    if (succeeded(sourceMap))
      accesses.push_back({expand.getSrc(), *sourceMap, AccessRole::Unread});
    accesses.push_back({expand.getResult(), identity, AccessRole::Unread});
    return accesses;
  }
  std::optional<std::string> getUnsupportedReason(Operation *op) const {
    auto expand = cast<tensor::ExpandShapeOp>(op);
    return dynamicReshapeReason(getLoopSizes(op),
                                expand.getReassociationIndices());
  }
};

struct CollapseShapeModel
    : TensorModelBase<CollapseShapeModel, tensor::CollapseShapeOp> {
  LogicalResult partition(Operation *op, SpmdRewriter &rewriter) const {
    if (succeeded(rewriter.partitionByConfig(op)))
      return success();
    return rewriter.partitionReshape(op);
  }
  SmallVector<int64_t> getLoopSizes(Operation *op) const {
    return shapeOf(op->getOperand(0));
  }
  SmallVector<OperandAccess> getOperandAccesses(Operation *op) const {
    auto collapse = cast<tensor::CollapseShapeOp>(op);
    SmallVector<int64_t> shape = getLoopSizes(op);
    MLIRContext *context = op->getContext();
    FailureOr<AffineMap> resultMap = collapsingMap(
        shape, collapse.getReassociationIndices(), context);
    AffineMap identity = AffineMap::getMultiDimIdentityMap(shape.size(),
                                                           context);
    SmallVector<OperandAccess> accesses;
    accesses.push_back({collapse.getSrc(), identity, AccessRole::Unread});
    if (succeeded(resultMap))
      accesses.push_back({collapse.getResult(), *resultMap,
                          AccessRole::Unread});
    return accesses;
  }
  std::optional<std::string> getUnsupportedReason(Operation *op) const {
    auto collapse = cast<tensor::CollapseShapeOp>(op);
    return dynamicReshapeReason(getLoopSizes(op),
                                collapse.getReassociationIndices());
  }
};

/// Map from the loops over the slice (the kept dimensions, in order) to the
/// indices of the full tensor.
static AffineMap sliceMap(OffsetSizeAndStrideOpInterface slice,
                          const llvm::SmallBitVector &dropped,
                          unsigned numLoops, MLIRContext *context) {
  SmallVector<AffineExpr> results;
  ArrayRef<int64_t> offsets = slice.getStaticOffsets();
  ArrayRef<int64_t> strides = slice.getStaticStrides();
  unsigned loop = 0;
  for (unsigned dim = 0; dim < offsets.size(); ++dim) {
    if (dropped.test(dim)) {
      int64_t offset = ShapedType::isDynamic(offsets[dim]) ? 0 : offsets[dim];
      results.push_back(getAffineConstantExpr(offset, context));
      continue;
    }
    results.push_back(sliceIndex(context, loop++, offsets[dim], strides[dim]));
  }
  return AffineMap::get(numLoops, 0, results, context);
}

static std::optional<std::string>
dynamicStrideReason(OffsetSizeAndStrideOpInterface slice) {
  if (llvm::any_of(slice.getStaticStrides(), ShapedType::isDynamic))
    return std::string("a slice with a dynamic stride");
  return std::nullopt;
}

struct ExtractSliceModel
    : TensorModelBase<ExtractSliceModel, tensor::ExtractSliceOp> {
  LogicalResult partition(Operation *op, SpmdRewriter &rewriter) const {
    if (succeeded(rewriter.partitionByConfig(op)))
      return success();
    return rewriter.partitionPassThrough(op);
  }
  SmallVector<int64_t> getLoopSizes(Operation *op) const {
    return shapeOf(op->getResult(0));
  }
  SmallVector<OperandAccess> getOperandAccesses(Operation *op) const {
    auto extract = cast<tensor::ExtractSliceOp>(op);
    unsigned numLoops = extract.getType().getRank();
    MLIRContext *context = op->getContext();
    return {{extract.getSource(),
             sliceMap(extract, extract.getDroppedDims(), numLoops, context),
             AccessRole::Read},
            {extract.getResult(),
             AffineMap::getMultiDimIdentityMap(numLoops, context),
             AccessRole::Write}};
  }
  std::optional<std::string> getUnsupportedReason(Operation *op) const {
    return dynamicStrideReason(cast<tensor::ExtractSliceOp>(op));
  }
};

struct InsertSliceModel
    : TensorModelBase<InsertSliceModel, tensor::InsertSliceOp> {
  LogicalResult partition(Operation *op, SpmdRewriter &rewriter) const {
    if (succeeded(rewriter.partitionByConfig(op)))
      return success();
    return rewriter.partitionPassThrough(op);
  }
  SmallVector<int64_t> getLoopSizes(Operation *op) const {
    return shapeOf(op->getOperand(0));
  }
  SmallVector<OperandAccess> getOperandAccesses(Operation *op) const {
    auto insert = cast<tensor::InsertSliceOp>(op);
    unsigned numLoops = insert.getSourceType().getRank();
    MLIRContext *context = op->getContext();
    AffineMap destMap =
        sliceMap(insert, insert.getDroppedDims(), numLoops, context);
    return {{insert.getSource(),
             AffineMap::getMultiDimIdentityMap(numLoops, context),
             AccessRole::Read},
            {insert.getDest(), destMap, AccessRole::Unread,
             /*isDestination=*/true},
            {insert.getResult(), destMap, AccessRole::Write}};
  }
  std::optional<std::string> getUnsupportedReason(Operation *op) const {
    return dynamicStrideReason(cast<tensor::InsertSliceOp>(op));
  }
};

struct PadModel : TensorModelBase<PadModel, tensor::PadOp> {
  LogicalResult partition(Operation *op, SpmdRewriter &rewriter) const {
    if (succeeded(rewriter.partitionByConfig(op)))
      return success();
    return rewriter.partitionPassThrough(op);
  }
  SmallVector<int64_t> getLoopSizes(Operation *op) const {
    return shapeOf(op->getResult(0));
  }
  SmallVector<OperandAccess> getOperandAccesses(Operation *op) const {
    auto pad = cast<tensor::PadOp>(op);
    unsigned numLoops = pad.getResultType().getRank();
    MLIRContext *context = op->getContext();
    SmallVector<AffineExpr> sourceIndex;
    for (auto [loop, low] : llvm::enumerate(pad.getStaticLow()))
      sourceIndex.push_back(getAffineDimExpr(loop, context) -
                            (ShapedType::isDynamic(low) ? 0 : low));
    return {{pad.getSource(), AffineMap::get(numLoops, 0, sourceIndex, context),
             AccessRole::Read},
            {pad.getResult(),
             AffineMap::getMultiDimIdentityMap(numLoops, context),
             AccessRole::Write}};
  }
};

struct ConcatModel : TensorModelBase<ConcatModel, tensor::ConcatOp> {
  LogicalResult partition(Operation *op, SpmdRewriter &rewriter) const {
    if (succeeded(rewriter.partitionByConfig(op)))
      return success();
    return rewriter.partitionConcat(op);
  }
  SmallVector<int64_t> getLoopSizes(Operation *op) const {
    return shapeOf(op->getResult(0));
  }
  SmallVector<OperandAccess> getOperandAccesses(Operation *op) const {
    auto concat = cast<tensor::ConcatOp>(op);
    unsigned numLoops = concat.getResultType().getRank();
    unsigned concatDim = concat.getDim();
    MLIRContext *context = op->getContext();
    SmallVector<OperandAccess> accesses;
    int64_t offset = 0;
    for (Value input : concat.getInputs()) {
      SmallVector<AffineExpr> index;
      for (unsigned loop = 0; loop < numLoops; ++loop) {
        AffineExpr expr = getAffineDimExpr(loop, context);
        index.push_back(loop == concatDim ? expr - offset : expr);
      }
      accesses.push_back(
          {input, AffineMap::get(numLoops, 0, index, context),
           AccessRole::Read});
      int64_t size = cast<ShapedType>(input.getType()).getDimSize(concatDim);
      offset += ShapedType::isDynamic(size) ? 0 : size;
    }
    accesses.push_back({concat.getResult(),
                        AffineMap::getMultiDimIdentityMap(numLoops, context),
                        AccessRole::Write});
    return accesses;
  }
  /// Every element of the task's part of the result comes from exactly one
  /// input element: the bytes read equal the bytes written.
  ShardCost getShardCost(Operation *op, ArrayRef<int64_t> shardSizes) const {
    auto concat = cast<tensor::ConcatOp>(op);
    double elements = 1;
    for (int64_t size : shardSizes)
      elements *= static_cast<double>(size);
    ShardCost cost;
    cost.bytesRead = cost.bytesWritten =
        elements * getElementBytes(concat.getResultType());
    return cost;
  }
  std::optional<std::string> getUnsupportedReason(Operation *op) const {
    auto concat = cast<tensor::ConcatOp>(op);
    for (Value input : concat.getInputs())
      if (cast<ShapedType>(input.getType()).isDynamicDim(concat.getDim()))
        return std::string("a concatenation of inputs of dynamic size");
    return std::nullopt;
  }
};

} // namespace

namespace soap {
void registerTensorPartitionableModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, tensor::TensorDialect *) {
    tensor::EmptyOp::attachInterface<EmptyModel>(*context);
    tensor::ExpandShapeOp::attachInterface<ExpandShapeModel>(*context);
    tensor::CollapseShapeOp::attachInterface<CollapseShapeModel>(*context);
    tensor::ExtractSliceOp::attachInterface<ExtractSliceModel>(*context);
    tensor::InsertSliceOp::attachInterface<InsertSliceModel>(*context);
    tensor::PadOp::attachInterface<PadModel>(*context);
    tensor::ConcatOp::attachInterface<ConcatModel>(*context);
  });
}
} // namespace soap

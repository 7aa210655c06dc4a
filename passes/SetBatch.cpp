//===- SetBatch.cpp - rewrite the batch size of a model -------------------===//
//
// Exports are usually made at batch 1. This pass changes the batch size of
// the target function: the batch dimension of every input argument (not
// {soap.param}; dimension 0 unless {soap.batch_dim = k}) becomes N, and so
// does every dimension derived from it.
//
// Which dimensions are derived from the batch is a closure over the def-use
// graph, in both directions: a linalg op ties all operand dimensions indexed
// by the same loop; a result is tied to its init; reshapes tie a source
// dimension to the group it expands into (the batch goes to the group's
// first dimension, the batch-major convention of every exporter) or
// collapses from; slices, pads and concatenations tie dimensions they keep
// whole. A batch dimension of size B*k (a collapsed batch) becomes N*k.
// Anything else that touches a batch dimension (a partial slice of it, a
// constant shaped by it, an op this pass does not know) is an error that
// names the op.
//
//===----------------------------------------------------------------------===//

#include "soap/Dialect/SoapDialect.h"
#include "soap/Passes/Passes.h"
#include "soap/graph/OpGraphBuilder.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"

#include "llvm/ADT/DenseSet.h"

namespace soap {
#define GEN_PASS_DEF_SOAPSETBATCH
#include "soap/Passes/Passes.h.inc"
} // namespace soap

using namespace mlir;
using namespace soap;

namespace {

/// One dimension of one tensor value.
using ValueDim = std::pair<Value, unsigned>;

static int64_t dimSize(Value value, unsigned dim) {
  return cast<RankedTensorType>(value.getType()).getDimSize(dim);
}

/// Finds every dimension tied to the batch.
class BatchClosure {
public:
  explicit BatchClosure(int64_t oldBatch) : oldBatch(oldBatch) {}

  LogicalResult run(ArrayRef<ValueDim> seeds) {
    for (ValueDim seed : seeds)
      add(seed.first, seed.second);
    while (!worklist.empty()) {
      auto [value, dim] = worklist.pop_back_val();
      if (failed(visitDefiningOp(value, dim)))
        return failure();
      for (OpOperand &use : value.getUses())
        if (failed(visitUse(use, dim)))
          return failure();
    }
    return success();
  }

  const llvm::DenseSet<ValueDim> &dims() const { return found; }

private:
  void add(Value value, unsigned dim) {
    if (found.insert({value, dim}).second)
      worklist.push_back({value, dim});
  }

  LogicalResult unsupported(Operation *op, const Twine &why) {
    return op->emitError() << "soap-set-batch: '" << op->getName()
                           << "' uses the batch dimension but " << why;
  }

  /// Ties the dims of `op`'s operands and results through its loops.
  LogicalResult visitLinalg(linalg::LinalgOp op, Value value, unsigned dim) {
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    std::optional<unsigned> loop;
    auto loopOf = [&](unsigned operandIndex,
                      unsigned d) -> std::optional<unsigned> {
      AffineExpr expr = maps[operandIndex].getResult(d);
      if (auto dimExpr = dyn_cast<AffineDimExpr>(expr))
        return dimExpr.getPosition();
      if (std::optional<unsigned> loop =
              sizeOneBroadcastLoop(op, maps, operandIndex, d)) {
        mapRewrites.push_back({op, operandIndex, d, *loop});
        return loop;
      }
      return std::nullopt;
    };
    for (OpOperand &operand : op->getOpOperands()) {
      if (operand.get() == value) {
        loop = loopOf(operand.getOperandNumber(), dim);
        if (!loop)
          return unsupported(op, "indexes it through an expression");
      }
    }
    for (OpResult result : op->getResults()) {
      if (result == value) {
        OpOperand *init = op.getDpsInitOperand(result.getResultNumber());
        loop = loopOf(init->getOperandNumber(), dim);
        if (!loop)
          return unsupported(op, "indexes it through an expression");
      }
    }
    if (!loop)
      return success();
    for (OpOperand &operand : op->getOpOperands()) {
      if (!isa<RankedTensorType>(operand.get().getType()))
        continue;
      AffineMap map = maps[operand.getOperandNumber()];
      for (unsigned d = 0; d < map.getNumResults(); ++d) {
        AffineExpr expr = map.getResult(d);
        if (auto dimExpr = dyn_cast<AffineDimExpr>(expr)) {
          if (dimExpr.getPosition() == *loop)
            add(operand.get(), d);
        } else if (sizeOneBroadcastLoop(op, maps, operand.getOperandNumber(),
                                        d) == loop) {
          // A size-1 batch read at index 0; a constant stays broadcast,
          // anything else grows with the batch.
          Operation *producer = operand.get().getDefiningOp();
          if (producer && producer->hasTrait<OpTrait::ConstantLike>())
            continue;
          mapRewrites.push_back({op, operand.getOperandNumber(), d, *loop});
          add(operand.get(), d);
        } else if (expr.isFunctionOfDim(*loop)) {
          return unsupported(op, "another operand indexes it through an "
                                 "expression");
        }
      }
    }
    for (OpResult result : op->getResults()) {
      OpOperand *init = op.getDpsInitOperand(result.getResultNumber());
      AffineMap map = maps[init->getOperandNumber()];
      for (unsigned d = 0; d < map.getNumResults(); ++d)
        if (auto dimExpr = dyn_cast<AffineDimExpr>(map.getResult(d)))
          if (dimExpr.getPosition() == *loop)
            add(result, d);
    }
    return success();
  }

  /// torch-mlir reads a dimension it knows to be 1 at index 0, as in
  /// `(d0, d1) -> (0, d1)` next to an init indexed `(d0, d1)`. At batch 1
  /// this is the batch: returns the loop the init has at the same position
  /// when `op` is a linalg.generic with one init of the same rank, the
  /// expression is the constant 0 and the operand's dimension is 1.
  std::optional<unsigned> sizeOneBroadcastLoop(linalg::LinalgOp op,
                                               ArrayRef<AffineMap> maps,
                                               unsigned operandIndex,
                                               unsigned d) const {
    if (oldBatch != 1 || !isa<linalg::GenericOp>(op) ||
        op.getNumDpsInits() != 1)
      return std::nullopt;
    auto constant =
        dyn_cast<AffineConstantExpr>(maps[operandIndex].getResult(d));
    Value operand = op->getOperand(operandIndex);
    if (!constant || constant.getValue() != 0 ||
        !isa<RankedTensorType>(operand.getType()) || dimSize(operand, d) != 1)
      return std::nullopt;
    AffineMap initMap = maps[op.getDpsInitOperand(0)->getOperandNumber()];
    if (initMap.getNumResults() != maps[operandIndex].getNumResults())
      return std::nullopt;
    if (auto dimExpr = dyn_cast<AffineDimExpr>(initMap.getResult(d)))
      return dimExpr.getPosition();
    return std::nullopt;
  }

public:
  /// An indexing map result to replace by a loop once the batch grows.
  struct MapRewrite {
    Operation *op;
    unsigned operandIndex, result, loop;
  };
  ArrayRef<MapRewrite> getMapRewrites() const { return mapRewrites; }

private:
  SmallVector<MapRewrite> mapRewrites;

  /// Ties a collapsed dim to its group's dims (source side: the first dim
  /// of the group carries the batch).
  void tieReshape(Value collapsed, Value expanded,
                  ArrayRef<ReassociationIndices> groups, Value value,
                  unsigned dim) {
    if (value == collapsed) {
      add(expanded, groups[dim].front());
      return;
    }
    for (auto [index, group] : llvm::enumerate(groups))
      if (llvm::is_contained(group, dim))
        add(collapsed, index);
  }

  /// True when dim `dim` of a slice of `source` is taken whole.
  static bool wholeDim(OffsetSizeAndStrideOpInterface op, Value source,
                       unsigned dim) {
    std::optional<int64_t> offset =
        getConstantIntValue(op.getMixedOffsets()[dim]);
    std::optional<int64_t> size = getConstantIntValue(op.getMixedSizes()[dim]);
    std::optional<int64_t> stride =
        getConstantIntValue(op.getMixedStrides()[dim]);
    return offset == 0 && stride == 1 && size == dimSize(source, dim);
  }

  LogicalResult visitOp(Operation *op, Value value, unsigned dim) {
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
      return visitLinalg(linalgOp, value, dim);
    if (isa<tensor::EmptyOp>(op))
      return success();
    if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op)) {
      tieReshape(collapse.getResult(), collapse.getSrc(),
                 collapse.getReassociationIndices(), value, dim);
      return success();
    }
    if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
      tieReshape(expand.getSrc(), expand.getResult(),
                 expand.getReassociationIndices(), value, dim);
      return success();
    }
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op)) {
      if (slice.getSourceType().getRank() != slice.getType().getRank())
        return unsupported(op, "it drops dimensions");
      if (!wholeDim(slice, slice.getSource(), dim))
        return unsupported(op, "it takes only part of it");
      add(slice.getSource(), dim);
      add(slice.getResult(), dim);
      return success();
    }
    if (auto insert = dyn_cast<tensor::InsertSliceOp>(op)) {
      if (insert.getSourceType().getRank() != insert.getType().getRank())
        return unsupported(op, "it inserts a lower-rank slice");
      if (!wholeDim(insert, insert.getDest(), dim))
        return unsupported(op, "it writes only part of it");
      add(insert.getSource(), dim);
      add(insert.getDest(), dim);
      add(insert.getResult(), dim);
      return success();
    }
    if (auto pad = dyn_cast<tensor::PadOp>(op)) {
      if (pad.getStaticLow()[dim] != 0 || pad.getStaticHigh()[dim] != 0)
        return unsupported(op, "it pads it");
      add(pad.getSource(), dim);
      add(pad.getResult(), dim);
      return success();
    }
    if (auto concat = dyn_cast<tensor::ConcatOp>(op)) {
      if (concat.getDim() == dim)
        return unsupported(op, "it concatenates along it");
      for (Value input : concat.getInputs())
        add(input, dim);
      add(concat.getResult(), dim);
      return success();
    }
    if (isa<func::ReturnOp>(op))
      return success();
    return unsupported(op, "soap-set-batch does not know how it uses it");
  }

  LogicalResult visitDefiningOp(Value value, unsigned dim) {
    Operation *op = value.getDefiningOp();
    if (!op)
      return success();
    if (op->hasTrait<OpTrait::ConstantLike>())
      return unsupported(op, "a constant cannot change its shape");
    return visitOp(op, value, dim);
  }

  LogicalResult visitUse(OpOperand &use, unsigned dim) {
    return visitOp(use.getOwner(), use.get(), dim);
  }

  int64_t oldBatch;
  llvm::DenseSet<ValueDim> found;
  SmallVector<ValueDim> worklist;
};

/// `type` with each dim in `dims` rescaled from `oldBatch` to `newBatch`.
static RankedTensorType rescaled(RankedTensorType type,
                                 const llvm::SmallDenseSet<unsigned> &dims,
                                 int64_t oldBatch, int64_t newBatch) {
  SmallVector<int64_t> shape(type.getShape());
  for (unsigned dim : dims)
    shape[dim] = shape[dim] / oldBatch * newBatch;
  return type.clone(shape);
}

struct SoapSetBatchPass
    : public soap::impl::SoapSetBatchBase<SoapSetBatchPass> {
  using Base::Base;

  /// Accepts the short form `--soap-set-batch=N` besides `batch=N ...`.
  LogicalResult initializeOptions(
      StringRef options,
      function_ref<LogicalResult(const Twine &)> errorHandler) override {
    int64_t value;
    if (!options.trim().getAsInteger(10, value))
      return Base::initializeOptions(("batch=" + options.trim()).str(),
                                     errorHandler);
    return Base::initializeOptions(options, errorHandler);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    int64_t newBatch = batch;
    if (newBatch < 1) {
      module.emitError() << "soap-set-batch: the batch must be at least 1, "
                            "not "
                         << newBatch;
      return signalPassFailure();
    }
    std::string error;
    FunctionOpInterface target = findTargetFunction(module, funcName, error);
    if (!target) {
      module.emitError() << "soap-set-batch: " << error;
      return signalPassFailure();
    }
    auto function = dyn_cast<func::FuncOp>(target.getOperation());
    if (!function) {
      target.emitError() << "soap-set-batch works on func.func, not '"
                         << target->getName() << "'";
      return signalPassFailure();
    }

    // The inputs' batch dims, which must all have the same size.
    SmallVector<ValueDim> seeds;
    std::optional<int64_t> oldBatch;
    for (BlockArgument argument : function.getArguments()) {
      unsigned index = argument.getArgNumber();
      if (function.getArgAttr(index, SoapDialect::getParamAttrName()))
        continue;
      auto type = dyn_cast<RankedTensorType>(argument.getType());
      if (!type || type.getRank() == 0)
        continue;
      unsigned dim = 0;
      if (auto attr = function.getArgAttrOfType<IntegerAttr>(
              index, SoapDialect::getBatchDimAttrName()))
        dim = attr.getInt();
      int64_t size = type.getDimSize(dim);
      if (ShapedType::isDynamic(size)) {
        function.emitError() << "soap-set-batch: the batch dimension " << dim
                             << " of argument " << index << " is dynamic";
        return signalPassFailure();
      }
      if (oldBatch && *oldBatch != size) {
        function.emitError()
            << "soap-set-batch: inputs disagree on the batch size ("
            << *oldBatch << " and " << size << " in argument " << index
            << "); mark the batch dimension with {soap.batch_dim = k}";
        return signalPassFailure();
      }
      oldBatch = size;
      seeds.push_back({argument, dim});
    }
    if (seeds.empty()) {
      function.emitError() << "soap-set-batch: @" << function.getName()
                           << " has no input argument with a batch dimension";
      return signalPassFailure();
    }
    if (*oldBatch == newBatch)
      return;

    BatchClosure closure(*oldBatch);
    if (failed(closure.run(seeds)))
      return signalPassFailure();

    llvm::DenseMap<Value, llvm::SmallDenseSet<unsigned>> perValue;
    for (auto [value, dim] : closure.dims()) {
      if (dimSize(value, dim) % *oldBatch != 0) {
        Operation *where = value.getDefiningOp();
        InFlightDiagnostic diag =
            where ? where->emitError() : function.emitError();
        diag << "soap-set-batch: dimension " << dim << " of size "
             << dimSize(value, dim) << " is tied to the batch but is not a "
             << "multiple of " << *oldBatch;
        return signalPassFailure();
      }
      perValue[value].insert(dim);
    }

    // Size-1 reads of the batch at index 0 become reads at the batch loop.
    for (const BatchClosure::MapRewrite &rewrite : closure.getMapRewrites()) {
      auto generic = cast<linalg::GenericOp>(rewrite.op);
      SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
      AffineMap &map = maps[rewrite.operandIndex];
      SmallVector<AffineExpr> results(map.getResults());
      results[rewrite.result] = getAffineDimExpr(rewrite.loop, &getContext());
      map = AffineMap::get(map.getNumDims(), map.getNumSymbols(), results,
                           &getContext());
      generic.setIndexingMapsAttr(
          Builder(&getContext()).getAffineMapArrayAttr(maps));
    }

    // Retype every value, then fix the ops that spell their shapes out.
    for (auto &[value, dims] : perValue)
      value.setType(rescaled(cast<RankedTensorType>(value.getType()), dims,
                             *oldBatch, newBatch));
    // (Slices tied to the batch keep their rank and take the batch whole;
    // only their batch entries change.)
    auto resize = [&](SmallVector<int64_t> sizes, Value tied) {
      for (unsigned dim : perValue.lookup(tied))
        sizes[dim] = dimSize(tied, dim);
      return sizes;
    };
    function.walk([&](Operation *op) {
      if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
        if (perValue.count(expand.getResult()))
          expand.setStaticOutputShape(
              resize(SmallVector<int64_t>(expand.getStaticOutputShape()),
                     expand.getResult()));
      } else if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op)) {
        if (perValue.count(slice.getResult()))
          slice.setStaticSizes(resize(
              SmallVector<int64_t>(slice.getStaticSizes()), slice.getResult()));
      } else if (auto insert = dyn_cast<tensor::InsertSliceOp>(op)) {
        if (perValue.count(insert.getSource()))
          insert.setStaticSizes(
              resize(SmallVector<int64_t>(insert.getStaticSizes()),
                     insert.getSource()));
      }
    });
    auto returnOp =
        cast<func::ReturnOp>(function.getBody().front().getTerminator());
    function.setType(FunctionType::get(
        &getContext(), function.getBody().front().getArgumentTypes(),
        returnOp.getOperandTypes()));
    if (failed(mlir::verify(function))) {
      function.emitError() << "soap-set-batch: the rewritten function does "
                              "not verify (see above)";
      return signalPassFailure();
    }
  }
};

} // namespace

//===- BatchDimensions.cpp - the dimensions derived from the batch --------===//

#include "soap/Partition/BatchDimensions.h"

#include "soap/Dialect/SoapDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Transforms/RegionUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/SmallBitVector.h"

using namespace mlir;
using namespace soap;

namespace {

static int64_t dimSize(Value value, unsigned dim) {
  return cast<RankedTensorType>(value.getType()).getDimSize(dim);
}

/// A rank-reducing slice: the slice's dimension for dimension `full` of the
/// whole tensor (none when the slice drops it), and the reverse.
static std::optional<unsigned> fullToSlice(const llvm::SmallBitVector &dropped,
                                           unsigned full) {
  if (dropped.test(full))
    return std::nullopt;
  unsigned before = 0;
  for (unsigned d = 0; d < full; ++d)
    before += dropped.test(d);
  return full - before;
}
static unsigned sliceToFull(const llvm::SmallBitVector &dropped,
                            unsigned slice) {
  for (unsigned full = 0, seen = 0; full < dropped.size(); ++full) {
    if (dropped.test(full))
      continue;
    if (seen++ == slice)
      return full;
  }
  llvm_unreachable("slice dimension out of range");
}

/// The values of `function`'s body that an input argument reaches (through
/// operands, or values its regions use): the others (constants, parameters,
/// and what is computed from them alone) are the same for every sample.
static llvm::DenseSet<Value>
inputDependentValues(func::FuncOp function,
                     function_ref<bool(unsigned)> isInput) {
  llvm::DenseSet<Value> dependent;
  for (BlockArgument argument : function.getArguments())
    if (isInput(argument.getArgNumber()))
      dependent.insert(argument);
  for (Block &block : function.getBody()) {
    for (Operation &op : block) {
      bool reached = llvm::any_of(op.getOperands(), [&](Value operand) {
        return dependent.contains(operand);
      });
      if (!reached && op.getNumRegions() != 0) {
        llvm::SetVector<Value> above;
        getUsedValuesDefinedAbove(op.getRegions(), above);
        reached = llvm::any_of(
            above, [&](Value value) { return dependent.contains(value); });
      }
      if (reached)
        dependent.insert(op.getResults().begin(), op.getResults().end());
    }
  }
  return dependent;
}

/// A constant whose elements all hold one value: it can be rebuilt at any
/// shape.
static bool isSplatConstant(Value value) {
  auto constant = value.getDefiningOp<arith::ConstantOp>();
  if (!constant)
    return false;
  auto elements = dyn_cast<DenseElementsAttr>(constant.getValue());
  return elements && elements.isSplat();
}

class BatchClosure {
public:
  BatchClosure(func::FuncOp function, int64_t oldBatch, StringRef pass,
               function_ref<bool(unsigned)> isInput)
      : function(function), isInput(isInput),
        inputDependent(inputDependentValues(function, isInput)),
        oldBatch(oldBatch), pass(pass.str()) {}

  LogicalResult run(ArrayRef<ValueDim> seeds) {
    for (ValueDim seed : seeds)
      add(seed.first, seed.second, nullptr);
    while (!worklist.empty()) {
      auto [value, dim] = worklist.pop_back_val();
      if (failed(visitArgument(value, dim)) ||
          failed(visitDefiningOp(value, dim)))
        return failure();
      for (OpOperand &use : value.getUses())
        if (failed(visitUse(use, dim)))
          return failure();
    }
    return success();
  }

  const llvm::DenseSet<ValueDim> &dims() const { return found; }

private:
  /// Records that dimension `dim` of `value` follows the batch, because of
  /// `via` (the op that ties it; null for the seeds).
  void add(Value value, unsigned dim, Operation *via) {
    if (found.insert({value, dim}).second) {
      worklist.push_back({value, dim});
      reasons[{value, dim}] = via;
    }
  }

  /// True when operand `operandIndex` of `op`, read at its dimension `d`
  /// through a batch loop, is better broadcast than resized: a DPS input of
  /// size 1 there (the function is at batch 1) that no input reaches, such
  /// as position ids sliced from a `tensor<1x512xi64>` constant. It holds
  /// the same values for every sample.
  bool broadcastsOverBatch(Operation *op, unsigned operandIndex,
                           unsigned d) const {
    OpOperand &operand = op->getOpOperand(operandIndex);
    Value value = operand.get();
    auto dps = dyn_cast<DestinationStyleOpInterface>(op);
    if (dps && !dps.isDpsInput(&operand))
      return false;
    return oldBatch == 1 && !inputDependent.contains(value) &&
           !found.count({value, d}) && isa<RankedTensorType>(value.getType()) &&
           dimSize(value, d) == 1;
  }

  /// Records a broadcast of operand `index` of `op` at dimension `d` when
  /// broadcastsOverBatch holds (or one was recorded); returns whether so.
  bool broadcast(Operation *op, unsigned index, unsigned d) {
    if (llvm::any_of(broadcasts, [&](const Broadcast &b) {
          return b.op == op && b.operandIndex == index && b.dim == d;
        }))
      return true;
    if (!broadcastsOverBatch(op, index, d))
      return false;
    broadcasts.push_back({op, index, d});
    return true;
  }

  LogicalResult unsupported(Operation *op, const Twine &why) {
    return op->emitError() << pass << ": '" << op->getName()
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
        if (!loop && isa<AffineConstantExpr>(
                         maps[operand.getOperandNumber()].getResult(dim)))
          return unsupported(op, "reads it at a fixed index, from a loop "
                                 "that is not the batch alone (the batch "
                                 "folded with another dimension)");
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
      unsigned index = operand.getOperandNumber();
      AffineMap map = maps[index];
      for (unsigned d = 0; d < map.getNumResults(); ++d) {
        AffineExpr expr = map.getResult(d);
        if (auto dimExpr = dyn_cast<AffineDimExpr>(expr)) {
          if (dimExpr.getPosition() != *loop)
            continue;
          if (!broadcast(op, index, d))
            add(operand.get(), d, op);
        } else if (sizeOneBroadcastLoop(op, maps, index, d) == loop) {
          // A size-1 batch read at index 0: what no input reaches stays
          // broadcast, anything else grows with the batch.
          if (!inputDependent.contains(operand.get()))
            continue;
          mapRewrites.push_back({op, index, d, *loop});
          add(operand.get(), d, op);
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
            add(result, d, op);
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
    OpOperand *init = op.getDpsInitOperand(0);
    AffineMap initMap = maps[init->getOperandNumber()];
    if (initMap.getNumResults() != maps[operandIndex].getNumResults())
      return std::nullopt;
    // The loop must be the batch alone (size 1 here): a loop of the batch
    // folded with heads (12 = 1 x 12) reads a per-sample value at index
    // 0 only at batch 1.
    if (dimSize(init->get(), d) != 1)
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
  /// A size-1 operand dimension read through a batch loop that stays size 1
  /// and is read at index 0 once the batch grows.
  struct Broadcast {
    Operation *op;
    unsigned operandIndex, dim;
  };
  ArrayRef<Broadcast> getBroadcasts() const { return broadcasts; }
  /// The splat constants whose shape follows the batch.
  ArrayRef<arith::ConstantOp> getSplats() const { return splats; }

private:
  SmallVector<MapRewrite> mapRewrites;
  SmallVector<Broadcast> broadcasts;
  SmallVector<arith::ConstantOp> splats;

  /// Ties a collapsed dim to its group's dims (source side: the first dim
  /// of the group carries the batch).
  void tieReshape(Operation *op, Value collapsed, Value expanded,
                  ArrayRef<ReassociationIndices> groups, Value value,
                  unsigned dim) {
    if (value == collapsed) {
      add(expanded, groups[dim].front(), op);
      return;
    }
    for (auto [index, group] : llvm::enumerate(groups))
      if (llvm::is_contained(group, dim))
        add(collapsed, index, op);
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

  /// `use`: the operand of `op` that holds `value`, when `op` uses it (null
  /// when `op` defines it).
  LogicalResult visitOp(Operation *op, Value value, unsigned dim,
                        OpOperand *use = nullptr) {
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
      return visitLinalg(linalgOp, value, dim);
    if (isa<tensor::EmptyOp>(op))
      return success();
    if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op)) {
      tieReshape(op, collapse.getResult(), collapse.getSrc(),
                 collapse.getReassociationIndices(), value, dim);
      return success();
    }
    if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
      tieReshape(op, expand.getSrc(), expand.getResult(),
                 expand.getReassociationIndices(), value, dim);
      return success();
    }
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op)) {
      llvm::SmallBitVector dropped = slice.getDroppedDims();
      unsigned full =
          value == slice.getResult() ? sliceToFull(dropped, dim) : dim;
      std::optional<unsigned> kept = fullToSlice(dropped, full);
      if (!kept)
        return unsupported(op, "it drops it");
      if (!wholeDim(slice, slice.getSource(), full))
        return unsupported(op, "it takes only part of it");
      add(slice.getSource(), full, op);
      add(slice.getResult(), *kept, op);
      return success();
    }
    if (auto insert = dyn_cast<tensor::InsertSliceOp>(op)) {
      llvm::SmallBitVector dropped = insert.getDroppedDims();
      unsigned full =
          value == insert.getSource() ? sliceToFull(dropped, dim) : dim;
      std::optional<unsigned> kept = fullToSlice(dropped, full);
      if (!kept)
        return unsupported(op, "it inserts a slice without it");
      if (!wholeDim(insert, insert.getDest(), full))
        return unsupported(op, "it writes only part of it");
      add(insert.getSource(), *kept, op);
      add(insert.getDest(), full, op);
      add(insert.getResult(), full, op);
      return success();
    }
    if (auto pad = dyn_cast<tensor::PadOp>(op)) {
      if (getConstantIntValue(pad.getMixedLowPad()[dim]) != 0 ||
          getConstantIntValue(pad.getMixedHighPad()[dim]) != 0)
        return unsupported(op, "it pads it");
      add(pad.getSource(), dim, op);
      add(pad.getResult(), dim, op);
      return success();
    }
    if (auto concat = dyn_cast<tensor::ConcatOp>(op)) {
      if (concat.getDim() == dim)
        return unsupported(op, "it concatenates along it");
      // A class token or other weight of batch 1 joined to the samples is
      // repeated over the batch.
      for (OpOperand &input : concat->getOpOperands())
        if (!broadcast(op, input.getOperandNumber(), dim))
          add(input.get(), dim, op);
      add(concat.getResult(), dim, op);
      return success();
    }
    if (isa<func::ReturnOp>(op))
      return success();
    if (use && gatherUnknownUses) {
      gathered.push_back({use, dim});
      return success();
    }
    return unsupported(op, "the pass does not know how it uses it");
  }

  /// An argument of the function that is not an input (a {soap.param})
  /// never changes its shape: a weight that only looks batch-shaped.
  LogicalResult visitArgument(Value value, unsigned dim) {
    auto argument = dyn_cast<BlockArgument>(value);
    if (!argument || argument.getOwner()->getParentOp() != function ||
        isInput(argument.getArgNumber()))
      return success();
    unsigned index = argument.getArgNumber();
    std::string name = "argument " + std::to_string(index);
    if (auto attr = function.getArgAttrOfType<StringAttr>(
            index, SoapDialect::getNameAttrName()))
      name += " ('" + attr.getValue().str() + "')";
    Operation *via = reasons.lookup({value, dim});
    InFlightDiagnostic diag =
        via ? via->emitError() : function.emitError();
    diag << pass << ": " << name << " is not an input (a parameter keeps its "
         << "shape), but ";
    if (via)
      diag << "'" << via->getName() << "' ties its dimension " << dim
           << " to the batch";
    else
      diag << "its dimension " << dim << " is tied to the batch";
    diag << "; the model mixes samples with this weight, so the batch "
            "cannot change";
    return failure();
  }

  LogicalResult visitDefiningOp(Value value, unsigned dim) {
    Operation *op = value.getDefiningOp();
    if (!op)
      return success();
    if (op->hasTrait<OpTrait::ConstantLike>()) {
      // A splat (zeros, a scale) is rebuilt at the new shape.
      if (isSplatConstant(value)) {
        auto constant = cast<arith::ConstantOp>(op);
        if (!llvm::is_contained(splats, constant))
          splats.push_back(constant);
        return success();
      }
      return unsupported(op, "a constant that is not a splat cannot change "
                             "its shape");
    }
    return visitOp(op, value, dim);
  }

  LogicalResult visitUse(OpOperand &use, unsigned dim) {
    return visitOp(use.getOwner(), use.get(), dim, &use);
  }

public:
  /// With gatherUnknownUses, a use by an op that visitOp does not know (a
  /// tensor.extract in the body of a loop or of a gather, an unknown op) is
  /// recorded in `gathered`, with the batch dimension of the value it uses,
  /// instead of being an error.
  bool gatherUnknownUses = false;
  SmallVector<std::pair<OpOperand *, unsigned>> gathered;

private:
  func::FuncOp function;
  function_ref<bool(unsigned)> isInput;
  llvm::DenseSet<Value> inputDependent;
  int64_t oldBatch;
  std::string pass;
  llvm::DenseSet<ValueDim> found;
  llvm::DenseMap<ValueDim, Operation *> reasons;
  SmallVector<ValueDim> worklist;
};

/// `type` with each dim in `dims` rescaled from `oldBatch` to `newBatch`.
static RankedTensorType rescaled(RankedTensorType type,
                                 const llvm::SmallDenseSet<unsigned> &dims,
                                 int64_t oldBatch, int64_t newBatch) {
  SmallVector<int64_t> shape(type.getShape());
  for (unsigned dim : dims)
    shape[dim] = shape[dim] * newBatch / oldBatch;
  return type.clone(shape);
}

/// Gives every use of a shared `tensor.empty`, or of a `linalg.fill` of
/// one, its own copy. CSE merges inits of equal shape that unrelated ops
/// write into (a batch x hidden activation and a hidden x hidden gradient
/// when the batch equals the hidden size); shared, they would tie the
/// batch to dimensions that only happen to have its size.
static void unshareInits(func::FuncOp function) {
  SmallVector<Operation *> producers;
  function.walk([&](Operation *op) {
    if (isa<tensor::EmptyOp>(op) ||
        (isa<linalg::FillOp>(op) && cast<linalg::FillOp>(op)
                                        .getOutputs()[0]
                                        .getDefiningOp<tensor::EmptyOp>()))
      producers.push_back(op);
  });
  for (Operation *producer : producers) {
    SmallVector<OpOperand *> uses;
    for (OpOperand &use : producer->getResult(0).getUses())
      uses.push_back(&use);
    for (OpOperand *use : llvm::drop_begin(uses)) {
      OpBuilder builder(use->getOwner());
      Operation *copy = builder.clone(*producer);
      if (auto fill = dyn_cast<linalg::FillOp>(copy)) {
        Operation *empty = fill.getOutputs()[0].getDefiningOp();
        Operation *emptyCopy = builder.clone(*empty);
        emptyCopy->moveBefore(copy);
        copy->setOperand(1, emptyCopy->getResult(0));
      }
      use->set(copy->getResult(0));
    }
  }
}

} // namespace

FailureOr<BatchDimensions>
BatchDimensions::find(func::FuncOp function, StringRef pass,
                      function_ref<bool(unsigned)> isInput,
                      bool gatherUnknownUses) {
  unshareInits(function);
  BatchDimensions result;
  result.pass = pass.str();
  SmallVector<ValueDim> &seeds = result.inputs;
  std::optional<int64_t> oldBatch;
  for (BlockArgument argument : function.getArguments()) {
    unsigned index = argument.getArgNumber();
    if (!isInput(index))
      continue;
    auto type = dyn_cast<RankedTensorType>(argument.getType());
    if (!type || type.getRank() == 0)
      continue;
    unsigned dim = 0;
    if (auto attr = function.getArgAttrOfType<IntegerAttr>(
            index, SoapDialect::getBatchDimAttrName()))
      dim = attr.getInt();
    int64_t size = type.getDimSize(dim);
    if (ShapedType::isDynamic(size))
      return function.emitError() << pass << ": the batch dimension " << dim
                                  << " of argument " << index << " is dynamic";
    if (size == 0)
      return function.emitError()
             << pass << ": the batch dimension " << dim << " of argument "
             << index << " is empty (size 0)";
    if (oldBatch && *oldBatch != size)
      return function.emitError()
             << pass << ": inputs disagree on the batch size (" << *oldBatch
             << " and " << size << " in argument " << index
             << "); mark the batch dimension with {soap.batch_dim = k}";
    oldBatch = size;
    seeds.push_back({argument, dim});
  }
  if (seeds.empty())
    return function.emitError() << pass << ": @" << function.getName()
                                << " has no input argument with a batch "
                                   "dimension";
  result.batch = *oldBatch;

  BatchClosure closure(function, result.batch, pass, isInput);
  closure.gatherUnknownUses = gatherUnknownUses;
  if (failed(closure.run(seeds)))
    return failure();
  result.gathered = closure.gathered;
  for (auto [value, dim] : closure.dims()) {
    if (dimSize(value, dim) % result.batch != 0) {
      Operation *where = value.getDefiningOp();
      InFlightDiagnostic diag =
          where ? where->emitError() : function.emitError();
      diag << pass << ": dimension " << dim << " of size "
           << dimSize(value, dim) << " is tied to the batch but is not a "
           << "multiple of " << result.batch;
      return failure();
    }
    result.dims[value].insert(dim);
  }
  for (const BatchClosure::MapRewrite &rewrite : closure.getMapRewrites())
    result.mapRewrites.push_back(
        {rewrite.op, rewrite.operandIndex, rewrite.result, rewrite.loop});
  for (const BatchClosure::Broadcast &broadcast : closure.getBroadcasts())
    result.broadcasts.push_back(
        {broadcast.op, broadcast.operandIndex, broadcast.dim});
  result.splats.assign(closure.getSplats().begin(),
                       closure.getSplats().end());
  return result;
}

SmallVector<unsigned>
BatchDimensions::getBatchLoops(linalg::LinalgOp op) const {
  SmallVector<unsigned> loops;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  for (OpOperand &operand : op->getOpOperands()) {
    auto it = dims.find(operand.get());
    if (it == dims.end())
      continue;
    AffineMap map = maps[operand.getOperandNumber()];
    for (unsigned dim : it->second)
      if (auto loop = dyn_cast<AffineDimExpr>(map.getResult(dim)))
        if (!llvm::is_contained(loops, loop.getPosition()))
          loops.push_back(loop.getPosition());
  }
  for (const MapRewrite &rewrite : mapRewrites)
    if (rewrite.op == op.getOperation() &&
        !llvm::is_contained(loops, rewrite.loop))
      loops.push_back(rewrite.loop);
  llvm::sort(loops);
  return loops;
}

void BatchDimensions::transfer(Value from, Value to) {
  auto it = dims.find(from);
  if (it == dims.end())
    return;
  llvm::SmallDenseSet<unsigned> moved = it->second;
  dims.erase(it);
  dims[to] = moved;
}

LogicalResult BatchDimensions::resize(func::FuncOp function, int64_t newBatch) {
  MLIRContext *context = function.getContext();
  if (newBatch == batch)
    return success();
  // Operands that hold the same values for every sample stay size 1 and
  // are read at index 0 (a linalg.generic's map says so; another op reads
  // a broadcast copy), unless the closure resized them after all.
  for (const Broadcast &broadcast : broadcasts) {
    Value value = broadcast.op->getOperand(broadcast.operandIndex);
    if (dims.lookup(value).contains(broadcast.dim))
      continue;
    if (auto generic = dyn_cast<linalg::GenericOp>(broadcast.op)) {
      SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
      AffineMap map = maps[broadcast.operandIndex];
      SmallVector<AffineExpr> results(map.getResults());
      results[broadcast.dim] = getAffineConstantExpr(0, context);
      maps[broadcast.operandIndex] = AffineMap::get(
          map.getNumDims(), map.getNumSymbols(), results, context);
      generic.setIndexingMapsAttr(
          Builder(context).getAffineMapArrayAttr(maps));
      continue;
    }
    auto type = cast<RankedTensorType>(value.getType());
    unsigned rank = type.getRank();
    OpBuilder builder(broadcast.op);
    Location loc = broadcast.op->getLoc();
    Value init = tensor::EmptyOp::create(builder, loc, type.getShape(),
                                         type.getElementType());
    SmallVector<AffineExpr> read;
    for (unsigned d = 0; d < rank; ++d)
      read.push_back(d == broadcast.dim ? getAffineConstantExpr(0, context)
                                        : getAffineDimExpr(d, context));
    Value copy =
        linalg::GenericOp::create(
            builder, loc, TypeRange{type}, ValueRange{value}, ValueRange{init},
            ArrayRef<AffineMap>{AffineMap::get(rank, 0, read, context),
                                builder.getMultiDimIdentityMap(rank)},
            SmallVector<utils::IteratorType>(rank,
                                             utils::IteratorType::parallel),
            [](OpBuilder &nb, Location l, ValueRange args) {
              linalg::YieldOp::create(nb, l, args[0]);
            })
            .getResult(0);
    broadcast.op->setOperand(broadcast.operandIndex, copy);
    dims[init].insert(broadcast.dim);
    dims[copy].insert(broadcast.dim);
  }
  // Size-1 reads of the batch at index 0 become reads at the batch loop.
  for (const MapRewrite &rewrite : mapRewrites) {
    auto generic = cast<linalg::GenericOp>(rewrite.op);
    SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
    AffineMap &map = maps[rewrite.operandIndex];
    SmallVector<AffineExpr> results(map.getResults());
    results[rewrite.result] = getAffineDimExpr(rewrite.loop, context);
    map =
        AffineMap::get(map.getNumDims(), map.getNumSymbols(), results, context);
    generic.setIndexingMapsAttr(Builder(context).getAffineMapArrayAttr(maps));
  }

  auto newType = [&](Value value) {
    auto type = cast<RankedTensorType>(value.getType());
    auto found = dims.find(value);
    return found == dims.end()
               ? type
               : rescaled(type, found->second, batch, newBatch);
  };
  // A reshape must keep each group's elements: an export that reads a
  // dimension merged with the batch through a loop of another dimension
  // (valid only at its own batch) cannot be resized.
  WalkResult reshapes = function.walk([&](Operation *op) -> WalkResult {
    Value wide, narrow;
    SmallVector<ReassociationIndices> groups;
    if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op)) {
      wide = collapse.getSrc();
      narrow = collapse.getResult();
      groups = collapse.getReassociationIndices();
    } else if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
      wide = expand.getResult();
      narrow = expand.getSrc();
      groups = expand.getReassociationIndices();
    } else {
      return WalkResult::advance();
    }
    if (!dims.count(wide) && !dims.count(narrow))
      return WalkResult::advance();
    RankedTensorType wideType = newType(wide), narrowType = newType(narrow);
    for (auto [g, group] : llvm::enumerate(groups)) {
      int64_t product = 1;
      for (int64_t d : group)
        product *= wideType.getDimSize(d);
      if (product != narrowType.getDimSize(g))
        return op->emitError()
               << pass << ": '" << op->getName() << "' would merge "
               << product << " elements into a dimension of "
               << narrowType.getDimSize(g) << " at batch " << newBatch
               << ": the model reads the batch through another dimension "
                  "as well, which only holds at batch "
               << batch;
    }
    return WalkResult::advance();
  });
  if (reshapes.wasInterrupted())
    return failure();

  // Which dimensions rank-reducing slices drop, known from their types
  // before the retyping below.
  llvm::DenseMap<Operation *, llvm::SmallBitVector> droppedDims;
  function.walk([&](Operation *op) {
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op))
      droppedDims[op] = slice.getDroppedDims();
    else if (auto insert = dyn_cast<tensor::InsertSliceOp>(op))
      droppedDims[op] = insert.getDroppedDims();
  });

  // Retype every value, then fix the ops that spell their shapes out.
  for (auto &[value, valueDims] : dims)
    value.setType(rescaled(cast<RankedTensorType>(value.getType()), valueDims,
                           batch, newBatch));
  // Splat constants keep their value at the new shape.
  for (arith::ConstantOp constant : splats) {
    auto elements = cast<DenseElementsAttr>(constant.getValue());
    constant.setValueAttr(elements.resizeSplat(
        cast<ShapedType>(constant.getResult().getType())));
  }
  // (Slices tied to the batch keep their rank and take the batch whole;
  // only their batch entries change.)
  auto resized = [&](SmallVector<int64_t> sizes, Value tied) {
    for (unsigned dim : dims.lookup(tied))
      sizes[dim] = dimSize(tied, dim);
    return sizes;
  };
  // (A slice's sizes count every dimension of the whole tensor.)
  auto sliceSizes = [&](ArrayRef<int64_t> sizes,
                        const llvm::SmallBitVector &dropped, Value slice) {
    SmallVector<int64_t> result(sizes);
    for (unsigned dim : dims.lookup(slice))
      result[sliceToFull(dropped, dim)] = dimSize(slice, dim);
    return result;
  };
  function.walk([&](Operation *op) {
    if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
      if (dims.count(expand.getResult()))
        expand.setStaticOutputShape(
            resized(SmallVector<int64_t>(expand.getStaticOutputShape()),
                    expand.getResult()));
    } else if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op)) {
      if (dims.count(slice.getResult()))
        slice.setStaticSizes(sliceSizes(
            slice.getStaticSizes(), droppedDims[op], slice.getResult()));
    } else if (auto insert = dyn_cast<tensor::InsertSliceOp>(op)) {
      if (dims.count(insert.getSource()))
        insert.setStaticSizes(sliceSizes(insert.getStaticSizes(),
                                         droppedDims[op], insert.getSource()));
    }
  });
  auto returnOp =
      cast<func::ReturnOp>(function.getBody().front().getTerminator());
  function.setType(
      FunctionType::get(context, function.getBody().front().getArgumentTypes(),
                        returnOp.getOperandTypes()));
  batch = newBatch;
  if (failed(mlir::verify(function)))
    return function.emitError() << pass
                                << ": the rewritten function does not "
                                   "verify (see above)";
  return success();
}

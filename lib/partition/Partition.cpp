//===- Partition.cpp - a training step as one SPMD program ----------------===//

#include "soap/Partition/Partition.h"

#include "soap/Dialect/SoapDialect.h"
#include "soap/Partition/BatchDimensions.h"

#include "Reductions.h"
#include "soap/Partition/ScatterLoops.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

#include <numeric>

using namespace mlir;
using namespace soap;
using soap::combinerOf;
using soap::partition::identityFilled;
using soap::partition::isIdentityFill;

static constexpr llvm::StringLiteral kPass = "soap-partition";

/// True for arguments that carry data of the batch (inputs and labels).
static bool isBatchInput(func::FuncOp function, unsigned index) {
  if (auto role = function.getArgAttrOfType<StringAttr>(
          index, SoapDialect::getRoleAttrName()))
    return role.getValue() == "input" || role.getValue() == "label";
  return !function.getArgAttr(index, SoapDialect::getParamAttrName());
}

/// An op whose result holds one rank's part of a reduction over the batch.
struct PartialReduction {
  linalg::LinalgOp op;
  ReductionKind kind;
  /// The init holds values (a gradient accumulated so far): only rank 0
  /// adds them, the others start from the combination's identity.
  bool initHoldsValues;
};

/// Runs the scatter-add nest `loop` over each rank's rows when every value
/// split along the batch that it reads (`uses`, each with its batch
/// dimension, at the local size) is indexed there by a loop that only sums:
/// those loops run over the local rows, the nest starts from zeros on all
/// ranks but rank 0, and its result is all_reduced. Fails (changing
/// nothing) otherwise.
static LogicalResult
splitScatterAdd(scf::ForOp loop,
                ArrayRef<std::pair<OpOperand *, unsigned>> uses,
                int64_t devices, Value rank, ArrayRef<int64_t> group) {
  std::optional<partition::ScatterAddNest> nest =
      partition::matchScatterAdd(loop);
  if (!nest)
    return failure();
  auto indexes = [](const partition::LoopRead &read, OpOperand *use,
                    unsigned dim) {
    return read.tensor == use && read.dim == dim;
  };
  // The loop that indexes each use at its batch dimension.
  llvm::SmallSetVector<unsigned, 4> split;
  for (auto [use, dim] : uses) {
    std::optional<unsigned> found;
    for (auto [index, reads] : llvm::enumerate(nest->summable))
      if (reads && llvm::any_of(*reads, [&](const partition::LoopRead &r) {
            return indexes(r, use, dim);
          }))
        found = index;
    if (!found)
      return failure();
    split.insert(*found);
  }
  // Such a loop reads nothing but rows of the batch, all of the same size.
  SmallVector<int64_t> localCounts;
  for (unsigned index : split) {
    std::optional<int64_t> rows;
    for (const partition::LoopRead &read : *nest->summable[index]) {
      if (!llvm::any_of(uses, [&](auto use) {
            return indexes(read, use.first, use.second);
          }))
        return failure();
      int64_t size = cast<RankedTensorType>(read.tensor->get().getType())
                         .getDimSize(read.dim);
      if (rows && *rows != size)
        return failure();
      rows = size;
    }
    if (!rows || *rows * devices != nest->tripCounts[index])
      return failure();
    localCounts.push_back(*rows);
  }
  for (auto [index, count] : llvm::zip_equal(split, localCounts))
    nest->setTripCount(index, count);

  OpBuilder builder(loop);
  Location loc = loop.getLoc();
  Value init = nest->init();
  auto type = cast<RankedTensorType>(init.getType());
  if (!isIdentityFill(init, ReductionKind::sum)) {
    Value zeros = identityFilled(builder, loc, type, ReductionKind::sum);
    Value first =
        arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq, rank,
                              arith::ConstantIndexOp::create(builder, loc, 0));
    loop.getInitArgsMutable()[0].assign(
        arith::SelectOp::create(builder, loc, first, init, zeros));
  }
  builder.setInsertionPointAfter(loop);
  Value result = nest->result();
  auto combined = AllReduceOp::create(
      builder, loc, type,
      ReductionKindAttr::get(loop.getContext(), ReductionKind::sum), result,
      builder.getDenseI64ArrayAttr(group));
  result.replaceAllUsesExcept(combined.getResult(), combined);
  return success();
}

LogicalResult soap::partitionBatch(func::FuncOp function, int64_t devices) {
  if (devices < 1)
    return function.emitError()
           << kPass << ": devices must be at least 1, not " << devices;
  FailureOr<BatchDimensions> batchDims = BatchDimensions::find(
      function, kPass,
      [&](unsigned index) { return isBatchInput(function, index); },
      /*gatherUnknownUses=*/true);
  if (failed(batchDims))
    return failure();
  int64_t batch = batchDims->getBatch();
  if (batch % devices != 0)
    return function.emitError()
           << kPass << ": the batch " << batch << " does not divide into "
           << devices << " equal parts";
  int64_t local = batch / devices;

  // The ops that reduce over the batch, found while the batch loops are
  // still those of the global program; linalg.index of a batch loop must
  // count global rows.
  SmallVector<PartialReduction> partials;
  SmallVector<std::pair<linalg::IndexOp, unsigned>> batchIndices;
  WalkResult walk = function.walk([&](linalg::LinalgOp op) -> WalkResult {
    SmallVector<unsigned> loops = batchDims->getBatchLoops(op);
    if (loops.empty())
      return WalkResult::advance();
    SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
    if (llvm::any_of(loops, [&](unsigned loop) {
          return iterators[loop] == utils::IteratorType::reduction;
        })) {
      std::optional<ReductionKind> kind = combinerOf(op);
      if (!kind || op.getNumDpsInits() != 1)
        return op->emitError()
               << kPass << ": '" << op->getName()
               << "' reduces over the batch in a way whose partial results "
                  "cannot be combined (not a sum, max or min of one output)";
      partials.push_back(
          {op, *kind, !isIdentityFill(op.getDpsInitOperand(0)->get(), *kind)});
    }
    if (op->getNumRegions() == 1)
      op->getRegion(0).walk([&](linalg::IndexOp index) {
        if (llvm::is_contained(loops, index.getDim()))
          batchIndices.push_back({index, index.getDim()});
      });
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  if (devices == 1)
    return success();

  // Each rank takes its rows of every input: offset rank * local.
  MLIRContext *context = function.getContext();
  Block &entry = function.getBody().front();
  OpBuilder builder = OpBuilder::atBlockBegin(&entry);
  Location loc = function.getLoc();
  Value rank = RankOp::create(builder, loc, builder.getIndexType());
  Value localRows = arith::ConstantIndexOp::create(builder, loc, local);
  Value offset = arith::MulIOp::create(builder, loc, rank, localRows);
  for (ValueDim input : llvm::to_vector(batchDims->getInputs())) {
    auto [argument, dim] = input;
    auto type = cast<RankedTensorType>(argument.getType());
    SmallVector<OpFoldResult> offsets(type.getRank(), builder.getIndexAttr(0));
    SmallVector<OpFoldResult> sizes,
        strides(type.getRank(), builder.getIndexAttr(1));
    for (int64_t size : type.getShape())
      sizes.push_back(builder.getIndexAttr(size));
    offsets[dim] = offset;
    Value rows = tensor::ExtractSliceOp::create(builder, loc, type, argument,
                                                offsets, sizes, strides);
    argument.replaceAllUsesExcept(rows, rows.getDefiningOp());
    batchDims->transfer(argument, rows);
  }
  for (auto [index, loop] : batchIndices) {
    builder.setInsertionPointAfter(index);
    Value global = arith::AddIOp::create(builder, index.getLoc(),
                                         index.getResult(), offset);
    index.getResult().replaceAllUsesExcept(global, global.getDefiningOp());
  }

  if (failed(batchDims->resize(function, local)))
    return failure();

  // A partial result that only feeds the init of another reduction of the
  // same kind stays partial: each rank adds its part into its next part (a
  // weight's gradient accumulated over an RNN's time steps), and only the
  // last one is combined over the ranks.
  llvm::DenseSet<Operation *> chained;
  for (PartialReduction &partial : partials) {
    if (!partial.initHoldsValues)
      continue;
    Value init = partial.op.getDpsInitOperand(0)->get();
    auto producer = init.getDefiningOp<linalg::LinalgOp>();
    if (!producer || !init.hasOneUse())
      continue;
    auto feeding = llvm::find_if(partials, [&](const PartialReduction &p) {
      return p.op == producer && p.kind == partial.kind;
    });
    if (feeding == partials.end())
      continue;
    chained.insert(producer);
    partial.initHoldsValues = false;
  }

  // An init that holds values counts once: on rank 0.
  for (PartialReduction partial : partials) {
    if (!partial.initHoldsValues)
      continue;
    OpOperand *init = partial.op.getDpsInitOperand(0);
    auto type = cast<RankedTensorType>(init->get().getType());
    Location loc = partial.op->getLoc();
    builder.setInsertionPoint(partial.op);
    Value filled = identityFilled(builder, loc, type, partial.kind);
    Value first = arith::CmpIOp::create(
        builder, loc, arith::CmpIPredicate::eq, rank,
        arith::ConstantIndexOp::create(builder, loc, 0));
    init->set(arith::SelectOp::create(builder, loc, first, init->get(), filled));
  }

  // Partial results become whole on every rank.
  SmallVector<int64_t> group(devices);
  std::iota(group.begin(), group.end(), 0);
  for (PartialReduction partial : partials) {
    if (chained.contains(partial.op))
      continue;
    Value result = partial.op->getResult(0);
    builder.setInsertionPointAfter(partial.op);
    auto combined =
        AllReduceOp::create(builder, partial.op->getLoc(), result.getType(),
                            ReductionKindAttr::get(context, partial.kind),
                            result, builder.getDenseI64ArrayAttr(group));
    result.replaceAllUsesExcept(combined.getResult(), combined);
  }

  // A scatter-add nest (a gather's gradient) whose loops index the batch
  // of what it reads, directly, runs over the rank's rows: it sums the
  // rank's part of the gradient, and the parts are added up.
  llvm::MapVector<Operation *, SmallVector<std::pair<OpOperand *, unsigned>>>
      usesByOp;
  for (auto [use, dim] : batchDims->getGatheredUses())
    usesByOp[entry.findAncestorOpInBlock(*use->getOwner())].push_back(
        {use, dim});
  // Ops the batch closure does not go through otherwise (a body that reads
  // a split tensor with tensor.extract) read what they use from the batch
  // whole: gathered over the ranks before the op of the function's body
  // they are in, which then runs whole on every rank.
  SmallVector<Operation *> wholeOps;
  for (auto &[top, uses] : usesByOp) {
    if (auto loop = dyn_cast<scf::ForOp>(top);
        loop && succeeded(splitScatterAdd(loop, uses, devices, rank, group)))
      continue;
    llvm::DenseMap<Value, Value> wholeValues;
    for (auto [use, dim] : uses) {
      Value local = use->get();
      Value &whole = wholeValues[local];
      if (!whole) {
        auto type = cast<RankedTensorType>(local.getType());
        SmallVector<int64_t> shape(type.getShape());
        shape[dim] *= devices;
        builder.setInsertionPoint(top);
        whole = AllGatherOp::create(builder, top->getLoc(), type.clone(shape),
                                    local, builder.getI64IntegerAttr(dim),
                                    builder.getDenseI64ArrayAttr(group));
      }
      use->set(whole);
    }
    wholeOps.push_back(top);
  }
  for (Operation *op : wholeOps)
    op->emitWarning() << kPass << ": '" << op->getName()
                      << "' reads values split along the batch in a way the "
                         "pass does not split (an op inside it); they are "
                         "gathered whole first and it runs whole on every "
                         "device";

  auto returnOp = cast<func::ReturnOp>(entry.getTerminator());
  for (OpOperand &returned : returnOp->getOpOperands())
    if (!batchDims->getDims(returned.get()).empty())
      return returnOp.emitError()
             << kPass << ": result " << returned.getOperandNumber()
             << " is split along the batch; a training step returns the "
                "loss, parameters and optimizer state, which are whole";
  return success();
}

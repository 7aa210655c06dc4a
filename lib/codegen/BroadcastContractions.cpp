//===- BroadcastContractions.cpp - products of broadcasts, summed products ===//
//
// kernels=blas, before elementwise fusion, on tensors:
//   1. foldBroadcastsIntoContractions: a contraction that reads a copy of a
//      tensor broadcast along some of its dimensions reads the tensor itself
//      through the composed map. torch-mlir lowers a linear layer on a 3-D
//      input (every linear layer of a transformer) to a transpose of the
//      weight, a generic that gives it a unit batch dimension, a generic
//      that broadcasts it along the batch, and a batch_matmul. Fused into
//      one loop nest, the copy reads the weight transposed, element by
//      element: on bert_hf it took longer than the products themselves.
//   2. foldSumsIntoContractions: a contraction whose result only a sum over
//      some of its dimensions reads adds into that sum's output itself. The
//      autodiff's gradient of the broadcast above sums the batch_matmul's
//      per-batch weight gradients over the batch.
// The folded products keep a second m (or k) loop, which the runtime's
// batch_matmul runs as its batch with stride 0 in the operand that does
// not depend on it (matmulDimensions); where the other two operands hold
// it contiguously it is one GEMM (runtime/Kernels.cpp).
//
//===----------------------------------------------------------------------===//

#include "LoweringSteps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace soap::codegen {

namespace {
/// A tensor whose element at index v is `source`'s at `map(v)`: `map` goes
/// from the tensor's dimensions to `source`'s indices (each a dimension of
/// the tensor, or 0 on a unit dimension of `source`).
struct CopyOf {
  Value source;
  AffineMap map;
};
} // namespace

/// One broadcasting copy: a linalg.broadcast, or an all-parallel
/// linalg.generic with an identity-mapped output that yields its one input
/// read through fewer loops (or a 0 on a unit dimension).
static std::optional<CopyOf> broadcastStep(Value value) {
  MLIRContext *context = value.getContext();
  if (auto broadcast = value.getDefiningOp<linalg::BroadcastOp>()) {
    int64_t rank = cast<RankedTensorType>(value.getType()).getRank();
    SmallVector<AffineExpr> results;
    for (int64_t d = 0; d < rank; ++d)
      if (!llvm::is_contained(broadcast.getDimensions(), d))
        results.push_back(getAffineDimExpr(d, context));
    return CopyOf{broadcast.getInput(),
                  AffineMap::get(rank, 0, results, context)};
  }
  // A copy through a projected permutation (isRelayoutCopy) that is no
  // mere permutation.
  auto generic = value.getDefiningOp<linalg::GenericOp>();
  if (!generic || !isRelayoutCopy(generic) ||
      generic.getIndexingMapsArray()[0].isPermutation())
    return std::nullopt;
  return CopyOf{generic.getDpsInputs()[0], generic.getIndexingMapsArray()[0]};
}

/// `value` as a copy of a tensor through transposes and broadcasts, when at
/// least one broadcast is among them (transposes alone are
/// foldTransposesIntoContractions'): the maps composed.
static std::optional<CopyOf> asBroadcastCopy(Value value) {
  int64_t rank = cast<RankedTensorType>(value.getType()).getRank();
  CopyOf copy{value,
              AffineMap::getMultiDimIdentityMap(rank, value.getContext())};
  bool broadcasts = false;
  while (true) {
    AffineMap step;
    if (std::optional<CopyOf> broadcast = broadcastStep(copy.source)) {
      copy.source = broadcast->source;
      step = broadcast->map;
      broadcasts = true;
    } else if (auto guard = copy.source.getDefiningOp<scf::IfOp>()) {
      // A device guard's result (a copy made in one guard, read in
      // another): what its devices yield. The product runs on those
      // devices too where it reads the result (elsewhere the guard yields
      // an undefined tensor), and the fold reads the source only where it
      // is visible (foldBroadcastsIntoContractions).
      auto result = cast<OpResult>(copy.source);
      copy.source = guard.thenYield().getOperand(result.getResultNumber());
      continue;
    } else if (std::optional<Transposed> transpose =
                   transposeStep(copy.source)) {
      // Dimension j of the transposed tensor is dimension perm[j] of its
      // source: source index perm[j] is the tensor's index j.
      SmallVector<AffineExpr> results(transpose->perm.size());
      for (auto [j, source] : llvm::enumerate(transpose->perm))
        results[source] = getAffineDimExpr(j, value.getContext());
      copy.source = transpose->source;
      step = AffineMap::get(transpose->perm.size(), 0, results,
                            value.getContext());
    } else {
      break;
    }
    copy.map = step.compose(copy.map);
  }
  if (!broadcasts)
    return std::nullopt;
  return copy;
}

/// `source` without the unit dimensions `map` reads as 0 (a collapse_shape
/// before `op`), and `map` without those results; nothing when a unit
/// dimension cannot be dropped (a rank-0 result).
static std::optional<std::pair<Value, AffineMap>>
dropUnitReads(Value source, AffineMap map, RewriterBase &rewriter,
              Location loc) {
  auto type = cast<RankedTensorType>(source.getType());
  SmallVector<AffineExpr> kept;
  SmallVector<int64_t> shape;
  SmallVector<ReassociationIndices> groups;
  ReassociationIndices pending; // unit dimensions before the next kept one
  for (auto [i, expr] : llvm::enumerate(map.getResults())) {
    pending.push_back(static_cast<int64_t>(i));
    if (!isa<AffineDimExpr>(expr))
      continue;
    kept.push_back(expr);
    shape.push_back(type.getDimSize(i));
    groups.push_back(pending);
    pending.clear();
  }
  if (kept.empty())
    return std::nullopt;
  if (kept.size() == map.getNumResults())
    return std::make_pair(source, map);
  groups.back().append(pending.begin(), pending.end());
  Value collapsed = tensor::CollapseShapeOp::create(
      rewriter, loc, RankedTensorType::get(shape, type.getElementType()),
      source, groups);
  return std::make_pair(
      collapsed, AffineMap::get(map.getNumDims(), 0, kept, map.getContext()));
}

/// `guard` without the results nothing reads (the copies a fold made
/// unneeded): a new scf.if whose branches yield only the others.
static void dropUnreadResults(scf::IfOp guard, RewriterBase &rewriter) {
  SmallVector<unsigned> kept;
  for (OpResult result : guard->getResults())
    if (!result.use_empty())
      kept.push_back(result.getResultNumber());
  if (kept.size() == guard->getNumResults())
    return;
  SmallVector<Type> types;
  for (unsigned i : kept)
    types.push_back(guard->getResult(i).getType());
  rewriter.setInsertionPoint(guard);
  auto replacement =
      scf::IfOp::create(rewriter, guard.getLoc(), types, guard.getCondition(),
                        /*withElseRegion=*/false);
  for (auto [from, to] :
       {std::make_pair(&guard.getThenRegion(), &replacement.getThenRegion()),
        std::make_pair(&guard.getElseRegion(), &replacement.getElseRegion())}) {
    if (!to->empty())
      rewriter.eraseBlock(&to->front());
    rewriter.inlineRegionBefore(*from, *to, to->end());
    if (to->empty())
      continue;
    auto yield = cast<scf::YieldOp>(to->front().getTerminator());
    SmallVector<Value> values;
    for (unsigned i : kept)
      values.push_back(yield.getOperand(i));
    rewriter.setInsertionPoint(yield);
    rewriter.replaceOpWithNewOp<scf::YieldOp>(yield, values);
  }
  for (auto [n, i] : llvm::enumerate(kept))
    rewriter.replaceAllUsesWith(guard->getResult(i), replacement->getResult(n));
  rewriter.eraseOp(guard);
}

/// Inputs of linalg.generics that their bodies do not read and that a
/// device guard yields (the autodiff carries a forward value into a
/// gradient's sum for its shape) go, so that the guard need not yield them.
static void dropUnreadGuardInputs(ModuleOp module) {
  module.walk([&](linalg::GenericOp generic) {
    if (!generic.hasPureTensorSemantics())
      return;
    Block &body = generic.getRegion().front();
    SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
    for (int64_t i = generic.getNumDpsInputs() - 1; i >= 0; --i) {
      Value input = generic.getDpsInputs()[i];
      if (!body.getArgument(i).use_empty() || !input.getDefiningOp<scf::IfOp>())
        continue;
      generic.getInputsMutable().erase(i);
      maps.erase(maps.begin() + i);
      body.eraseArgument(i);
    }
    generic.setIndexingMapsAttr(
        Builder(generic.getContext()).getAffineMapArrayAttr(maps));
  });
}

/// Erases the copies (broadcasts, transposes), collapses and empty
/// tensors nothing reads any more, and the results of device guards
/// nothing reads, producers after their readers.
static void eraseDeadCopies(ModuleOp module) {
  IRRewriter rewriter(module.getContext());
  bool erased = true;
  while (erased) {
    erased = false;
    SmallVector<scf::IfOp> guards;
    module.walk([&](scf::IfOp guard) {
      if (llvm::any_of(guard->getResults(),
                       [](OpResult r) { return r.use_empty(); }))
        guards.push_back(guard);
    });
    for (scf::IfOp guard : guards)
      dropUnreadResults(guard, rewriter);
    module.walk([&](Operation *op) {
      if (op->getNumResults() != 1 || !op->use_empty())
        return;
      Value result = op->getResult(0);
      if (!isa<RankedTensorType>(result.getType()))
        return;
      if (broadcastStep(result) || transposeStep(result) ||
          isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp, tensor::EmptyOp>(
              op)) {
        rewriter.eraseOp(op);
        erased = true;
      }
    });
  }
}

/// A linalg.generic with `op`'s body (a named op's too) over `inputs` and
/// `inits` through `maps` and `iterators`, at the rewriter's insertion
/// point; it replaces `op`'s result `replaced` (or `op`) when the runtime's
/// calls take it (matmulDimensions), else it is erased and nothing changes.
static bool replaceByCallableProduct(linalg::LinalgOp op, Operation *replaced,
                                     ValueRange inputs, ValueRange inits,
                                     ArrayRef<AffineMap> maps,
                                     ArrayRef<utils::IteratorType> iterators,
                                     RewriterBase &rewriter) {
  auto candidate = linalg::GenericOp::create(rewriter, op.getLoc(),
                                             replaced->getResultTypes(), inputs,
                                             inits, maps, iterators);
  IRMapping mapping;
  rewriter.cloneRegionBefore(op->getRegion(0), candidate.getRegion(),
                             candidate.getRegion().end(), mapping);
  if (!matmulDimensions(candidate)) {
    rewriter.eraseOp(candidate);
    return false;
  }
  candidate->setDiscardableAttrs(op->getDiscardableAttrDictionary());
  rewriter.replaceOp(replaced, candidate->getResults());
  return true;
}

void foldBroadcastsIntoContractions(ModuleOp module) {
  SmallVector<linalg::LinalgOp> contractions;
  module.walk([&](linalg::LinalgOp op) {
    if (op.hasPureTensorSemantics() && linalg::isaContractionOpInterface(op) &&
        op.getNumDpsInputs() == 2 && op.getNumDpsInits() == 1 &&
        llvm::any_of(op.getDpsInputs(), [](Value input) {
          return asBroadcastCopy(input).has_value();
        }))
      contractions.push_back(op);
  });
  DominanceInfo dominance(module);
  IRRewriter rewriter(module.getContext());
  bool anyFolded = false;
  for (linalg::LinalgOp op : contractions) {
    rewriter.setInsertionPoint(op);
    // The new operands and maps; the op unchanged when none applies.
    SmallVector<Value> inputs(op.getDpsInputs());
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    bool folded = false;
    SmallVector<Operation *> made;
    for (auto [i, input] : llvm::enumerate(op.getDpsInputs())) {
      std::optional<CopyOf> copy = asBroadcastCopy(input);
      // The source must be visible at the product (a copy made inside a
      // device guard of a tensor made there is not).
      if (!copy || !dominance.properlyDominates(copy->source, op))
        continue;
      std::optional<std::pair<Value, AffineMap>> read = dropUnitReads(
          copy->source, copy->map.compose(maps[i]), rewriter, op.getLoc());
      if (!read)
        continue;
      if (read->first != copy->source)
        made.push_back(read->first.getDefiningOp());
      inputs[i] = read->first;
      maps[i] = read->second;
      folded = true;
    }
    if (!folded)
      continue;
    // Only a product the runtime's calls take: anything else would run as
    // scalar loops, slower than the copy it saves.
    if (replaceByCallableProduct(op, op, inputs, op.getDpsInits(), maps,
                                 op.getIteratorTypesArray(), rewriter)) {
      anyFolded = true;
      continue;
    }
    for (Operation *collapse : made)
      rewriter.eraseOp(collapse);
  }
  if (anyFolded) {
    dropUnreadGuardInputs(module);
    eraseDeadCopies(module);
  }
}

namespace {
/// A sum over some loops of a contraction's result: `sum` adds the result
/// into its output.
struct SumOf {
  linalg::GenericOp sum;
  AffineMap map; ///< the contraction's loops -> the sum's output indices
};
} // namespace

/// `value` is a fill with zeros (CSE may have merged it with others).
static bool isZeroFill(Value value) {
  auto fill = value.getDefiningOp<linalg::FillOp>();
  return fill && matchPattern(fill.getInputs()[0], m_AnyZeroFloat());
}

/// The sum that alone reads `op`'s result, which starts from zeros.
static std::optional<SumOf> summedResult(linalg::LinalgOp op) {
  if (op->getNumResults() != 1 || !op->getResult(0).hasOneUse() ||
      !isZeroFill(op.getDpsInitOperand(0)->get()))
    return std::nullopt;
  auto sum = dyn_cast<linalg::GenericOp>(*op->getResult(0).getUsers().begin());
  if (!sum || !sum.hasPureTensorSemantics() || sum.getNumDpsInits() != 1 ||
      sum->getNumResults() != 1 || sum.getNumReductionLoops() == 0)
    return std::nullopt;
  // out + x (or x + out), x the contraction's result; other inputs unread.
  Block &body = sum.getRegion().front();
  if (body.getOperations().size() != 2)
    return std::nullopt;
  auto add = dyn_cast<arith::AddFOp>(body.front());
  if (!add || body.getTerminator()->getOperand(0) != add.getResult())
    return std::nullopt;
  OpOperand *read = nullptr;
  for (OpOperand *input : sum.getDpsInputOperands()) {
    BlockArgument arg = body.getArgument(input->getOperandNumber());
    if (arg.use_empty())
      continue;
    if (read || input->get() != op->getResult(0))
      return std::nullopt;
    read = input;
  }
  BlockArgument out =
      body.getArgument(sum.getDpsInitOperand(0)->getOperandNumber());
  if (!read || !((add.getLhs() == out &&
                  add.getRhs() == body.getArgument(read->getOperandNumber())) ||
                 (add.getRhs() == out &&
                  add.getLhs() == body.getArgument(read->getOperandNumber()))))
    return std::nullopt;
  AffineMap in = sum.getMatchingIndexingMap(read);
  AffineMap outMap = sum.getMatchingIndexingMap(sum.getDpsInitOperand(0));
  AffineMap result = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (!in.isPermutation() || !outMap.isProjectedPermutation() ||
      !result.isProjectedPermutation())
    return std::nullopt;
  // The result's index x is the sum's loops in^-1(x).
  return SumOf{sum, outMap.compose(inversePermutation(in)).compose(result)};
}

void foldSumsIntoContractions(ModuleOp module) {
  SmallVector<std::pair<linalg::LinalgOp, SumOf>> contractions;
  module.walk([&](linalg::LinalgOp op) {
    if (!op.hasPureTensorSemantics() ||
        !linalg::isaContractionOpInterface(op) || op.getNumDpsInputs() != 2 ||
        op.getNumDpsInits() != 1)
      return;
    if (std::optional<SumOf> sum = summedResult(op))
      contractions.push_back({op, *sum});
  });
  IRRewriter rewriter(module.getContext());
  for (auto &[op, sum] : contractions) {
    // At the sum, where the product's operands are visible too.
    Value into = sum.sum.getDpsInitOperand(0)->get();
    rewriter.setInsertionPoint(sum.sum);
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    maps.back() = sum.map;
    SmallVector<utils::IteratorType> iterators;
    for (unsigned loop = 0; loop < op.getNumLoops(); ++loop)
      iterators.push_back(sum.map.isFunctionOfDim(loop)
                              ? utils::IteratorType::parallel
                              : utils::IteratorType::reduction);
    Operation *zeros = op.getDpsInitOperand(0)->get().getDefiningOp();
    if (!replaceByCallableProduct(op, sum.sum, op.getDpsInputs(),
                                  ValueRange{into}, maps, iterators, rewriter))
      continue;
    rewriter.eraseOp(op);
    if (zeros->use_empty())
      rewriter.eraseOp(zeros);
  }
}

namespace {
struct FoldBroadcastsPass
    : PassWrapper<FoldBroadcastsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(FoldBroadcastsPass)

  StringRef getArgument() const override { return "soap-fold-broadcasts"; }
  StringRef getDescription() const override {
    return "contractions read the tensors broadcast copies copy, and add "
           "into the sums that alone read their results (steps of "
           "--soap-lower-cpu's kernels=blas)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<linalg::LinalgDialect, tensor::TensorDialect>();
  }
  void runOnOperation() override {
    foldBroadcastsIntoContractions(getOperation());
    foldSumsIntoContractions(getOperation());
  }
};
} // namespace

std::unique_ptr<Pass> createFoldBroadcastsPass() {
  return std::make_unique<FoldBroadcastsPass>();
}

} // namespace soap::codegen

//===- ZeroAccumulations.cpp - sums into zeros are their addend -*- C++ -*-===//
//
// The autodiff writes each contribution to an adjoint as an accumulation,
// `out + x` into the adjoint so far; the first contribution accumulates
// into a zero fill. An elementwise generic (every loop parallel, each
// output element written once) that yields `out + x` into a fill of zero
// computes x: it yields x into an empty tensor instead, and the fill's
// pass over memory is gone. What is left may be a plain copy: a generic
// that yields one of its inputs, read through the output's map with the
// result's type, is that input (BERT's GELU gradient was accumulated into
// zeros, then copied into the next adjoint's zeros: two fills and a copy
// of 2 MB each per layer). x + 0 is x except for x = -0, whose sign
// becomes +0.
//
// A sum into a fill of zero over loops that each run once (the autodiff's
// gradient of a broadcast that only adds dimensions of size one:
// torch-mlir's linear layer on a 3-D input broadcasts its transposed
// weight [K, N] to [1, K, N], whose gradient sums [1, K, N] over the unit
// dimension) copies its input: it is that input without those dimensions,
// a tensor.collapse_shape, or the tensor an expand_shape added them to
// (dropUnitDimensionSums). The weight gradient's product then meets the
// transpose after it directly, which folds into it
// (foldTransposesIntoContractions, after this step); with a device guard
// between the product and the weight's update, the copies stayed: two
// passes over the gradient, the second transposing.
//
// An elementwise generic that writes into an empty tensor may write into
// an input that dies there instead (writeIntoDyingInputs): one buffer
// fewer, updated in place.
//
//===----------------------------------------------------------------------===//

#include "LoweringSteps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace soap::codegen {

namespace {

/// An elementwise generic on tensors with one result: every loop parallel
/// and the output written through a permutation (each element once).
bool isElementwise(linalg::GenericOp op) {
  return op.hasPureTensorSemantics() && op.getNumDpsInits() == 1 &&
         op->getNumResults() == 1 && op.getNumReductionLoops() == 0 &&
         op.getMatchingIndexingMap(op.getDpsInitOperand(0)).isPermutation();
}

/// `op` yields `out + x` (out: the output's block argument, used there
/// only) into a fill of zero: it yields x into the fill's empty tensor.
bool dropZeroAddend(linalg::GenericOp op, RewriterBase &rewriter) {
  OpOperand *init = op.getDpsInitOperand(0);
  auto fill = init->get().getDefiningOp<linalg::FillOp>();
  if (!fill || !matchPattern(fill.value(), m_AnyZeroFloat()) ||
      !fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>())
    return false;
  Block &body = op.getRegion().front();
  BlockArgument out = op.getMatchingBlockArgument(init);
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto add = yield.getValues().front().getDefiningOp<arith::AddFOp>();
  if (!add || !out.hasOneUse() || !add->hasOneUse() || add->getBlock() != &body)
    return false;
  Value addend;
  if (add.getLhs() == out)
    addend = add.getRhs();
  else if (add.getRhs() == out)
    addend = add.getLhs();
  else
    return false;
  rewriter.modifyOpInPlace(op, [&] {
    yield->setOperand(0, addend);
    init->set(fill.getOutputs()[0]);
  });
  rewriter.eraseOp(add);
  if (fill->use_empty())
    rewriter.eraseOp(fill);
  return true;
}

/// The input that `op` copies to its result unchanged: yielded as it is,
/// read through the output's map, of the result's type; null otherwise.
Value copiedInput(linalg::GenericOp op) {
  Block &body = op.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto argument = dyn_cast<BlockArgument>(yield.getValues().front());
  if (!argument || argument.getOwner() != &body ||
      argument.getArgNumber() >= op.getNumDpsInputs())
    return nullptr;
  OpOperand *input = op.getDpsInputOperand(argument.getArgNumber());
  if (input->get().getType() != op->getResult(0).getType() ||
      op.getMatchingIndexingMap(input) !=
          op.getMatchingIndexingMap(op.getDpsInitOperand(0)))
    return nullptr;
  return input->get();
}

/// `op` writes into an empty tensor, and one of its inputs, read through
/// the output's map with the result's type, is the result of a linalg op
/// that `op` alone reads: `op` writes into that input instead, so that
/// bufferization updates its buffer in place rather than allocating
/// another (an optimizer update into its weight gradient's buffer: with
/// hoisted results, the gradient is then computed right in the parameter's
/// out-param, as the training step's shared inits do on one device). The
/// result of a guard (a lowered soap.on_devices, an scf.if) counts as a
/// linalg op's: a gradient made on a device subset
/// (writeGuardedResultsIntoOutParams follows it into the out-param).
bool writeIntoDyingInput(linalg::GenericOp op) {
  OpOperand *init = op.getDpsInitOperand(0);
  if (!init->get().getDefiningOp<tensor::EmptyOp>() ||
      !op.getMatchingBlockArgument(init).use_empty())
    return false;
  AffineMap outputMap = op.getMatchingIndexingMap(init);
  for (OpOperand *input : op.getDpsInputOperands()) {
    Value value = input->get();
    Operation *producer = value.getDefiningOp();
    if (!isa_and_nonnull<linalg::LinalgOp, scf::IfOp>(producer) ||
        !value.hasOneUse() || value.getType() != op->getResult(0).getType() ||
        op.getMatchingIndexingMap(input) != outputMap)
      continue;
    init->set(value);
    return true;
  }
  return false;
}

/// `op` sums an input into a fill of zero over loops that each run once:
/// every loop that its output does not index is a reduction of size one,
/// it yields `out + in` with `in` read through the identity (other inputs
/// unread: the autodiff passes the broadcast's operand for its shape), and
/// its output through the identity without those loops. Returns that input
/// without the unit dimensions (made before `op`), or null.
Value unitDimensionSum(linalg::GenericOp op, RewriterBase &rewriter) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInits() != 1 ||
      op->getNumResults() != 1 || op.getNumReductionLoops() == 0)
    return nullptr;
  OpOperand *init = op.getDpsInitOperand(0);
  auto fill = init->get().getDefiningOp<linalg::FillOp>();
  auto resultType = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!fill || !matchPattern(fill.value(), m_AnyZeroFloat()) || !resultType)
    return nullptr;
  // The body yields out + in.
  Block &body = op.getRegion().front();
  auto add = dyn_cast_or_null<arith::AddFOp>(
      cast<linalg::YieldOp>(body.getTerminator())
          .getValues()[0]
          .getDefiningOp());
  BlockArgument out = op.getMatchingBlockArgument(init);
  if (!add || add->getBlock() != &body || !out.hasOneUse() ||
      (add.getLhs() != out && add.getRhs() != out))
    return nullptr;
  auto in = dyn_cast<BlockArgument>(add.getLhs() == out ? add.getRhs()
                                                        : add.getLhs());
  if (!in || in.getOwner() != &body ||
      in.getArgNumber() >= op.getNumDpsInputs())
    return nullptr;
  OpOperand *input = op.getDpsInputOperand(in.getArgNumber());
  if (!op.getMatchingIndexingMap(input).isIdentity() ||
      llvm::any_of(op.getDpsInputOperands(), [&](OpOperand *other) {
        return other != input &&
               !op.getMatchingBlockArgument(other).use_empty();
      }))
    return nullptr;
  // The loops the output indexes, in order; the others run once.
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  AffineMap outputMap = op.getMatchingIndexingMap(init);
  if (!outputMap.isProjectedPermutation() || outputMap.getNumResults() == 0)
    return nullptr;
  SmallVector<bool> kept(ranges.size(), false);
  int64_t previous = -1;
  for (AffineExpr result : outputMap.getResults()) {
    int64_t dim = cast<AffineDimExpr>(result).getPosition();
    if (dim <= previous)
      return nullptr;
    kept[dim] = true;
    previous = dim;
  }
  for (auto [dim, range] : llvm::enumerate(ranges))
    if (!kept[dim] && range != 1)
      return nullptr;
  // Each kept dimension with the unit ones before it; trailing unit ones
  // join the last group.
  SmallVector<ReassociationIndices> groups;
  ReassociationIndices group;
  for (auto [dim, isKept] : llvm::enumerate(kept)) {
    group.push_back(dim);
    if (isKept) {
      groups.push_back(group);
      group.clear();
    }
  }
  groups.back().append(group.begin(), group.end());
  Value source = input->get();
  if (auto expand = source.getDefiningOp<tensor::ExpandShapeOp>())
    if (expand.getSrc().getType() == resultType &&
        expand.getReassociationIndices() == groups)
      return expand.getSrc();
  rewriter.setInsertionPoint(op);
  return tensor::CollapseShapeOp::create(rewriter, op.getLoc(), resultType,
                                         source, groups);
}

/// Whether the function returns a result of `op`: such an op stays where
/// it would be replaced by another value, as results get buffers of their
/// own (giveResultsOwnBuffers, CpuLowering.cpp).
bool isReturned(Operation *op) {
  return llvm::any_of(op->getUsers(), [](Operation *user) {
    return isa<func::ReturnOp>(user);
  });
}

struct DropZeroAccumulationsPass
    : PassWrapper<DropZeroAccumulationsPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(DropZeroAccumulationsPass)

  StringRef getArgument() const override {
    return "soap-drop-zero-accumulations";
  }
  StringRef getDescription() const override {
    return "sums into a fill of zero over loops of size one are their "
           "input without those dimensions, elementwise sums into a fill "
           "of zero yield their addend, and elementwise copies of an "
           "input are that input (steps of --soap-lower-cpu)";
  }
  void runOnOperation() override {
    dropUnitDimensionSums(getOperation());
    dropZeroAccumulations(getOperation());
  }
};

} // namespace

std::unique_ptr<Pass> createDropZeroAccumulationsPass() {
  return std::make_unique<DropZeroAccumulationsPass>();
}

int dropZeroAccumulations(Operation *root) {
  SmallVector<linalg::GenericOp> generics;
  root->walk([&](linalg::GenericOp op) {
    if (isElementwise(op))
      generics.push_back(op);
  });
  IRRewriter rewriter(root->getContext());
  int rewritten = 0;
  for (linalg::GenericOp op : generics) {
    rewritten += dropZeroAddend(op, rewriter);
    Value input = copiedInput(op);
    if (!input || isReturned(op))
      continue;
    rewriter.replaceOp(op, input);
    ++rewritten;
  }
  return rewritten;
}

Value dropUnitDimensionSum(linalg::GenericOp op, RewriterBase &rewriter) {
  if (isReturned(op))
    return nullptr;
  Value input = unitDimensionSum(op, rewriter);
  if (!input)
    return nullptr;
  SmallVector<Operation *> makers;
  for (Value operand : op->getOperands())
    if (Operation *maker = operand.getDefiningOp())
      makers.push_back(maker);
  rewriter.replaceOp(op, input);
  // The fill and an expand_shape nothing else reads.
  for (Operation *maker : makers)
    if (isa<linalg::FillOp, tensor::ExpandShapeOp>(maker) && maker->use_empty())
      rewriter.eraseOp(maker);
  return input;
}

int dropUnitDimensionSums(Operation *root) {
  SmallVector<linalg::GenericOp> generics;
  root->walk([&](linalg::GenericOp op) { generics.push_back(op); });
  IRRewriter rewriter(root->getContext());
  int rewritten = 0;
  for (linalg::GenericOp op : generics)
    rewritten += dropUnitDimensionSum(op, rewriter) != nullptr;
  return rewritten;
}

int writeIntoDyingInputs(Operation *root) {
  int rewritten = 0;
  root->walk([&](linalg::GenericOp op) {
    if (isElementwise(op))
      rewritten += writeIntoDyingInput(op);
  });
  return rewritten;
}

} // namespace soap::codegen

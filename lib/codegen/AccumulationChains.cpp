//===- AccumulationChains.cpp - products summed into one another as one ---===//
//
// A weight that a step uses several times gets the sum of one gradient
// product per use. The autodiff writes that sum as a chain of products,
// each accumulating into the previous one's result:
//
//   C1 = A1 B1 + C0,  C2 = A2 B2 + C1,  ...,  Cn = An Bn + C(n-1)
//
// (linalg.matmul's outs is its addend). An LSTM's weight gradient is such a
// chain over the time steps: each product [in + hidden, batch] x
// [batch, 4 hidden] has a reduction as short as the batch, so each reads
// and writes the whole [in + hidden, 4 hidden] accumulator for few flops,
// and a library GEMM runs it far below its peak.
//
// The chain is one product over the concatenated reduction dimension:
//
//   Cn = [A1 A2 ... An] [B1; B2; ...; Bn] + C0
//
// which mergeAccumulatingProducts builds in place of the last product,
// erasing the others: the accumulator is read and written once, and the
// library gets one GEMM with an n times longer reduction. A C0 of zeros (a
// fill of an empty tensor) moves to the merged product, so that the
// accumulator is allocated there rather than where the chain began (the
// products' operands are held until then instead). Operands that are
// transposes of matrices (the autodiff's A^T) are concatenated before the
// transposition, so that the transpose still folds into the GEMM call as
// strides (foldTransposesIntoContractions). In real arithmetic the result
// is the same; in floating point the terms are summed in another order.
//
// A chain merges only where the copies it costs are smaller than the
// accumulator traffic it saves (each product's K (M + N) elements copied
// against 2 M N read and written), within one block, and where each
// intermediate result has no use besides the next product.
//
// A partitioned program puts each op placed on a subset of the devices in
// a soap.on_devices guard; a layer pipeline's LSTM runs each time step's
// cell in a guard of its own, so its weight gradient's chain runs through
// one guard per time step, each yielding the sum so far to the next.
// gatherAccumulationChains, before the guards are lowered, moves such a
// chain's products (all its guards name the same devices) into a new guard
// on those devices right before the first op that reads the sum, or, where
// the last product's guard reads the sum itself, into that guard: the
// guards yield the operands of their products instead of the sum
// (tensor.empty, constants, fills and transposes they read are made again
// beside the moved products, so that the transposes still fold into the
// merged GEMM), and the chain, now in one block, merges as above. The
// accumulator is no longer carried from guard to guard; the operands
// (K (M + N) elements per product) are held until the merged product
// instead. In a guard of its own, the merged product delays nothing that
// another device waits for: the last time step's guard of a pipeline
// stage sends the other stage its gradient first.
//
//===----------------------------------------------------------------------===//

#include "LoweringSteps.h"

#include "soap/Dialect/SoapDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace mlir;

namespace soap::codegen {

namespace {

/// A plain 2-D product on tensors: linalg.matmul with its default maps, one
/// element type throughout.
bool isPlainProduct(linalg::MatmulOp op) {
  if (!op.hasPureTensorSemantics() || op.hasUserDefinedMaps() ||
      op->getNumResults() != 1)
    return false;
  Type element = getElementTypeOrSelf(op.getResult(0).getType());
  return llvm::all_of(op->getOperandTypes(), [&](Type type) {
    auto ranked = dyn_cast<RankedTensorType>(type);
    return ranked && ranked.hasStaticShape() && ranked.getRank() == 2 &&
           ranked.getElementType() == element;
  });
}

/// The product whose result `op` accumulates into, when that result has
/// no other use and both are in one block.
linalg::MatmulOp accumulatedProduct(linalg::MatmulOp op) {
  auto previous = op.getDpsInits()[0].getDefiningOp<linalg::MatmulOp>();
  if (!previous || !isPlainProduct(previous) ||
      previous->getBlock() != op->getBlock() ||
      !previous.getResult(0).hasOneUse())
    return nullptr;
  return previous;
}

/// The product in an earlier guard on the same devices whose result `op`, a
/// product directly in a guard, accumulates into: `op`'s addend is a result
/// of that guard that nothing else reads, where it yields the result of a
/// product made directly in its body that nothing else reads.
linalg::MatmulOp productOfEarlierGuard(linalg::MatmulOp op) {
  auto guard = dyn_cast<OnDevicesOp>(op->getParentOp());
  auto result = dyn_cast<OpResult>(op.getDpsInits()[0]);
  if (!guard || !result || !result.hasOneUse())
    return nullptr;
  auto earlier = dyn_cast<OnDevicesOp>(result.getOwner());
  if (!earlier || earlier->getBlock() != guard->getBlock() ||
      earlier.getDevices() != guard.getDevices())
    return nullptr;
  Value yielded = earlier.getBody().front().getTerminator()->getOperand(
      result.getResultNumber());
  auto previous = yielded.getDefiningOp<linalg::MatmulOp>();
  if (!previous || !isPlainProduct(previous) ||
      previous->getParentOp() != earlier.getOperation() || !yielded.hasOneUse())
    return nullptr;
  return previous;
}

/// The product `op` accumulates into, in its block or an earlier guard.
linalg::MatmulOp previousProduct(linalg::MatmulOp op) {
  if (linalg::MatmulOp previous = accumulatedProduct(op))
    return previous;
  return productOfEarlierGuard(op);
}

/// Whether the last guard of a chain makes `op`'s results again rather than
/// an earlier guard yielding them: ops that make what a product reads from
/// nothing held (an empty tensor, a constant, a fill) or that fold into it
/// (a transpose).
bool madeAgain(Operation *op) {
  return isa<tensor::EmptyOp, arith::ConstantOp, linalg::FillOp,
             linalg::TransposeOp>(op);
}

/// Walks what `value` is made of in `guard`, as a chain's guards leave it
/// to `into`: the ops the last guard makes again (madeAgain) go to `made`,
/// operands before the ops that read them; the values of `guard` they read
/// that are not made again (or `value` itself), which the guard yields, to
/// `held`. Values made outside `guard` are neither.
void walkMadeAgain(Value value, Operation *guard,
                   llvm::function_ref<void(Value)> held,
                   llvm::function_ref<void(Operation *)> made) {
  Operation *def = value.getDefiningOp();
  if (!def || !guard->isProperAncestor(def))
    return;
  if (!madeAgain(def)) {
    held(value);
    return;
  }
  for (Value operand : def->getOperands())
    walkMadeAgain(operand, guard, held, made);
  made(def);
}

/// The guard of `op` when it is another than `last`.
OnDevicesOp earlierGuardOf(Operation *op, OnDevicesOp last) {
  auto guard = op->getParentOfType<OnDevicesOp>();
  return guard == last ? nullptr : guard;
}

/// Erases `op` and then the ops that made what it read (of the kinds
/// madeAgain names) that nothing else reads.
void eraseWithDeadMakers(Operation *op) {
  SmallVector<Operation *> worklist{op};
  while (!worklist.empty()) {
    Operation *dead = worklist.pop_back_val();
    if (!dead->use_empty() || (dead != op && !madeAgain(dead)))
      continue;
    SmallVector<Operation *> makers;
    for (Value operand : dead->getOperands())
      if (Operation *maker = operand.getDefiningOp())
        makers.push_back(maker);
    dead->erase();
    for (Operation *maker : makers)
      if (!llvm::is_contained(worklist, maker))
        worklist.push_back(maker);
  }
}

/// Moves `chain` (first product first), whose products lie in guards on
/// the same devices, into one guard `into`: a new guard right before the
/// first op that reads the chain's sum, where the last product's guard
/// only yields the sum, else that guard (before the chain's products
/// there).
void gatherChain(ArrayRef<linalg::MatmulOp> chain) {
  linalg::MatmulOp last = chain.back();
  auto lastGuard = cast<OnDevicesOp>(last->getParentOp());
  Value sum = last.getResult(0);
  OpBuilder builder(last);
  OnDevicesOp into;
  if (sum.hasOneUse() && isa<YieldOp>(*sum.user_begin())) {
    Value result = lastGuard.getResult(sum.use_begin()->getOperandNumber());
    Block *block = lastGuard->getBlock();
    Operation *reader = nullptr;
    for (Operation *user : result.getUsers()) {
      Operation *top = block->findAncestorOpInBlock(*user);
      if (!reader || top->isBeforeInBlock(reader))
        reader = top;
    }
    if (reader) {
      builder.setInsertionPoint(reader);
      into =
          OnDevicesOp::create(builder, last.getLoc(), TypeRange{sum.getType()},
                              lastGuard.getDevicesAttr());
      into.getBody().push_back(new Block());
      builder.setInsertionPointToEnd(&into.getBody().front());
      result.replaceAllUsesWith(into.getResult(0));
    }
  }
  if (!into)
    into = lastGuard;
  auto moved = llvm::make_filter_range(chain, [&](linalg::MatmulOp op) {
    return earlierGuardOf(op, into) != nullptr;
  });
  SmallVector<linalg::MatmulOp> earlier(moved.begin(), moved.end());
  // With `into` the last guard: the chain's first product there.
  linalg::MatmulOp firstInto =
      earlier.size() < chain.size() ? chain[earlier.size()] : nullptr;
  if (firstInto)
    builder.setInsertionPoint(firstInto);

  // What each earlier guard yields: the values of its own that its products
  // read, but for those made again (a later product's addend, the result
  // of the guard before, is not its own).
  llvm::MapVector<Operation *, llvm::SetVector<Value>> yields;
  for (linalg::MatmulOp op : earlier) {
    OnDevicesOp guard = earlierGuardOf(op, into);
    for (Value operand : op->getOperands())
      walkMadeAgain(
          operand, guard, [&](Value held) { yields[guard].insert(held); },
          [](Operation *) {});
  }
  IRMapping mapping;
  for (auto &[guard, values] : yields) {
    OnDevicesOp rebuilt =
        yieldAlso(cast<OnDevicesOp>(guard), values.getArrayRef());
    for (auto [value, result] :
         llvm::zip(values, rebuilt.getResults().take_back(values.size())))
      mapping.map(value, result);
  }

  // The products again in `into`, each with what it reads made again there.
  for (auto [index, op] : llvm::enumerate(earlier)) {
    // The sum so far: the copy of the product before (through its guard's
    // result where that is in another guard).
    if (index != 0)
      mapping.map(op.getDpsInits()[0],
                  mapping.lookup(earlier[index - 1].getResult(0)));
    for (Value operand : op->getOperands())
      walkMadeAgain(
          operand, earlierGuardOf(op, into), [](Value) {},
          [&](Operation *maker) {
            if (!mapping.contains(maker->getResult(0)))
              builder.clone(*maker, mapping);
          });
    builder.clone(*op, mapping);
  }
  Value merged = mapping.lookup(earlier.back().getResult(0));
  if (firstInto)
    firstInto.getDpsInitsMutable()[0].set(merged);
  else
    YieldOp::create(builder, last.getLoc(), merged);

  // The old products, last first: each guard stops yielding the sum.
  // A guard left with nothing to do goes.
  for (linalg::MatmulOp op : llvm::reverse(earlier)) {
    auto guard = cast<OnDevicesOp>(op->getParentOp());
    Value sum = op.getResult(0);
    if (sum.hasOneUse() && isa<YieldOp>(*sum.user_begin()))
      guard = yieldAlso(guard, {});
    eraseWithDeadMakers(op);
    if (guard->getNumResults() == 0 &&
        llvm::hasSingleElement(guard.getBody().front()))
      guard->erase();
  }
}

/// The input of a 2-D linalg.transpose that swaps its dimensions, or null.
Value transposed(Value value) {
  auto transpose = value.getDefiningOp<linalg::TransposeOp>();
  if (!transpose || transpose.getPermutation() != ArrayRef<int64_t>{1, 0})
    return nullptr;
  return transpose.getInput();
}

/// The matrices `operands` concatenated along dimension `dim`. When each
/// is a transpose, their inputs are concatenated along the other dimension
/// and the result transposed, so that the transpose can still fold into
/// the product that reads it.
Value concatenate(OpBuilder &b, Location loc, ArrayRef<Value> operands,
                  int64_t dim) {
  SmallVector<Value> inputs;
  for (Value operand : operands)
    if (Value input = transposed(operand))
      inputs.push_back(input);
  if (inputs.size() != operands.size())
    return tensor::ConcatOp::create(b, loc, dim, operands);
  Value joined = tensor::ConcatOp::create(b, loc, 1 - dim, inputs);
  auto type = cast<RankedTensorType>(joined.getType());
  Value init = tensor::EmptyOp::create(
      b, loc, ArrayRef<int64_t>{type.getDimSize(1), type.getDimSize(0)},
      type.getElementType());
  return linalg::TransposeOp::create(b, loc, joined, init,
                                     ArrayRef<int64_t>{1, 0})
      ->getResult(0);
}

/// Moves the fill that makes `product`'s init, and the empty tensor it
/// fills, to right before `product` where only it reads them: a merged
/// chain's sum that starts from zeros is allocated where it is made, not
/// where the chain began (the backward pass of an LSTM's last time step,
/// for its weight's gradient).
void sinkFilledInit(linalg::MatmulOp product) {
  auto fill = product.getDpsInits()[0].getDefiningOp<linalg::FillOp>();
  if (!fill || fill->getBlock() != product->getBlock() ||
      !fill->getResult(0).hasOneUse())
    return;
  fill->moveBefore(product);
  if (auto empty = fill.getDpsInits()[0].getDefiningOp<tensor::EmptyOp>())
    if (empty->hasOneUse() && empty->getBlock() == fill->getBlock())
      empty->moveBefore(fill);
}

/// Whether merging `chain` saves memory traffic: each product's operands
/// (K (M + N) elements) are copied once, where the accumulator (M N) is
/// read and written once per product.
bool worthMerging(ArrayRef<linalg::MatmulOp> chain) {
  linalg::MatmulOp last = chain.back();
  auto shape = cast<RankedTensorType>(last.getResult(0).getType()).getShape();
  int64_t m = shape[0], n = shape[1];
  return llvm::all_of(chain, [&](linalg::MatmulOp op) {
    int64_t k =
        cast<RankedTensorType>(op.getDpsInputs()[0].getType()).getDimSize(1);
    return k * (m + n) <= 2 * m * n;
  });
}

struct MergeAccumulationsPass
    : PassWrapper<MergeAccumulationsPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(MergeAccumulationsPass)

  StringRef getArgument() const override { return "soap-merge-accumulations"; }
  StringRef getDescription() const override {
    return "merge chains of products that accumulate into one another "
           "into one product over the concatenated reduction dimension, "
           "first moving a chain through guards on the same devices into "
           "one guard before the op that reads its sum (the "
           "--soap-lower-cpu step merge-accumulations)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<tensor::TensorDialect>();
  }
  void runOnOperation() override {
    gatherAccumulationChains(getOperation());
    mergeAccumulatingProducts(getOperation());
  }
};

} // namespace

std::unique_ptr<Pass> createMergeAccumulationsPass() {
  return std::make_unique<MergeAccumulationsPass>();
}

int gatherAccumulationChains(Operation *root) {
  // Plain products directly in guards, and those another accumulates into.
  SmallVector<linalg::MatmulOp> products;
  llvm::SmallPtrSet<Operation *, 16> accumulatedInto;
  root->walk([&](linalg::MatmulOp op) {
    if (!isPlainProduct(op) || !isa<OnDevicesOp>(op->getParentOp()))
      return;
    products.push_back(op);
    if (linalg::MatmulOp previous = previousProduct(op))
      accumulatedInto.insert(previous);
  });
  int gathered = 0;
  for (linalg::MatmulOp last : products) {
    if (accumulatedInto.contains(last))
      continue;
    SmallVector<linalg::MatmulOp> chain{last};
    while (linalg::MatmulOp previous = previousProduct(chain.back()))
      chain.push_back(previous);
    if (chain.back()->getParentOp() == last->getParentOp() ||
        !worthMerging(chain))
      continue;
    std::reverse(chain.begin(), chain.end()); // first product first
    gatherChain(chain);
    ++gathered;
  }
  return gathered;
}

int mergeAccumulatingProducts(Operation *root) {
  // The last product of each chain: a plain product whose result is not
  // the addend of another one.
  SmallVector<linalg::MatmulOp> lasts;
  root->walk([&](linalg::MatmulOp op) {
    if (!isPlainProduct(op))
      return;
    Value result = op.getResult(0);
    if (result.hasOneUse())
      if (auto next = dyn_cast<linalg::MatmulOp>(*result.user_begin()))
        if (accumulatedProduct(next) == op)
          return;
    lasts.push_back(op);
  });

  IRRewriter rewriter(root->getContext());
  int merged = 0;
  for (linalg::MatmulOp last : lasts) {
    SmallVector<linalg::MatmulOp> chain{last};
    while (linalg::MatmulOp previous = accumulatedProduct(chain.back()))
      chain.push_back(previous);
    if (chain.size() < 2 || !worthMerging(chain))
      continue;
    std::reverse(chain.begin(), chain.end()); // first product first
    SmallVector<Value> lhs, rhs;
    for (linalg::MatmulOp op : chain) {
      lhs.push_back(op.getDpsInputs()[0]);
      rhs.push_back(op.getDpsInputs()[1]);
    }
    // Every operand is defined before its product, so before the last.
    rewriter.setInsertionPoint(last);
    Location loc = last.getLoc();
    Value a = concatenate(rewriter, loc, lhs, /*dim=*/1);
    Value b = concatenate(rewriter, loc, rhs, /*dim=*/0);
    auto product = linalg::MatmulOp::create(
        rewriter, loc, TypeRange{last.getResult(0).getType()}, ValueRange{a, b},
        ValueRange{chain.front().getDpsInits()[0]});
    rewriter.replaceOp(last, product->getResults());
    for (linalg::MatmulOp op : llvm::reverse(ArrayRef(chain).drop_back()))
      rewriter.eraseOp(op);
    sinkFilledInit(product);
    // Transposes only the old products read.
    llvm::SetVector<Operation *> transposes;
    for (Value operand : llvm::concat<Value>(lhs, rhs))
      if (auto transpose = operand.getDefiningOp<linalg::TransposeOp>())
        transposes.insert(transpose);
    for (Operation *transpose : transposes)
      if (transpose->use_empty())
        eraseWithDeadMakers(transpose);
    ++merged;
  }
  return merged;
}

} // namespace soap::codegen

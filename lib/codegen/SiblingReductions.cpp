//===- SiblingReductions.cpp - reductions over one input share a pass -----===//
//
// The autodiff writes a batch norm's backward statistics as several
// reductions over the same tensors: after elementwise fusion, ResNet-18's
// first batch norm has four generics that each read the 4x64x112x112
// activation and its gradient to produce a 64-element sum. They are
// independent of one another, so they can share one pass over their
// inputs: a generic with the same loops, the union of their inputs, all of
// their outputs and their bodies one after the other. Each output is
// computed by the same operations in the same order as before, so results
// are bitwise equal; the inputs are read once instead of once per sum.
//
//===----------------------------------------------------------------------===//

#include "LoweringSteps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace soap::codegen {

namespace {

/// A reduction that may share a pass: a generic on tensors with at least
/// one reduction loop and static loop sizes that the runtime's matmul and
/// convolution calls do not take (one op each: the weight gradients of an
/// attention's projections all read x^T, and merged they ran as loops,
/// 57 ms instead of 0.7).
bool isCandidate(linalg::GenericOp op) {
  return op.hasPureTensorSemantics() && op.getNumReductionLoops() > 0 &&
         !op.hasDynamicShape() && op->getNumRegions() == 1 &&
         !matmulDimensions(op) && !conv2dRoles(op);
}

/// Whether `a` and `b` run the same loops.
bool sameLoops(linalg::GenericOp a, linalg::GenericOp b) {
  return a.getStaticLoopRanges() == b.getStaticLoopRanges() &&
         a.getIteratorTypesArray() == b.getIteratorTypesArray();
}

/// Whether `a` and `b` read one tensor through the same map.
bool shareAnInput(linalg::GenericOp a, linalg::GenericOp b) {
  for (OpOperand *x : a.getDpsInputOperands())
    for (OpOperand *y : b.getDpsInputOperands())
      if (x->get() == y->get() &&
          a.getMatchingIndexingMap(x) == b.getMatchingIndexingMap(y))
        return true;
  return false;
}

/// The op of `block` that holds `op` (itself, or an ancestor).
Operation *inBlock(Operation *op, Block *block) {
  return block->findAncestorOpInBlock(*op);
}

/// Where `a` and `b` (a before b, one block) can run as one op: at a's
/// place when every operand of b is defined before a; at b's when nothing
/// uses a's results before b. nullptr when neither holds.
Operation *mergePoint(linalg::GenericOp a, linalg::GenericOp b) {
  Block *block = a->getBlock();
  auto before = [&](Value v, Operation *op) {
    Operation *def = v.getDefiningOp();
    if (!def) // a block argument: of this block or one around it
      return true;
    Operation *at = inBlock(def, block);
    return !at || at->isBeforeInBlock(op);
  };
  if (llvm::all_of(b->getOperands(), [&](Value v) { return before(v, a); }))
    return a;
  for (Operation *user : a->getUsers()) {
    Operation *at = inBlock(user, block);
    if (at && !b->isBeforeInBlock(at))
      return nullptr;
  }
  return b;
}

/// `a` and `b` as one generic at `at`: a's inputs, then b's that a does
/// not read through the same map; a's outputs, then b's; a's body, then
/// b's. The uses of their results go to the merged op's.
linalg::GenericOp merge(linalg::GenericOp a, linalg::GenericOp b, Operation *at,
                        RewriterBase &rewriter) {
  SmallVector<Value> inputs, inits;
  SmallVector<AffineMap> maps;
  // Where each of b's inputs lands among the merged inputs.
  SmallVector<unsigned> bInputAt;
  for (OpOperand *x : a.getDpsInputOperands()) {
    inputs.push_back(x->get());
    maps.push_back(a.getMatchingIndexingMap(x));
  }
  for (OpOperand *y : b.getDpsInputOperands()) {
    AffineMap map = b.getMatchingIndexingMap(y);
    unsigned found = inputs.size();
    for (unsigned i = 0; i < a.getNumDpsInputs(); ++i)
      if (inputs[i] == y->get() && maps[i] == map)
        found = i;
    if (found == inputs.size()) {
      inputs.push_back(y->get());
      maps.push_back(map);
    }
    bInputAt.push_back(found);
  }
  for (linalg::GenericOp op : {a, b})
    for (OpOperand &init : op.getDpsInitsMutable()) {
      inits.push_back(init.get());
      maps.push_back(op.getMatchingIndexingMap(&init));
    }
  SmallVector<Type> resultTypes(a->getResultTypes());
  llvm::append_range(resultTypes, b->getResultTypes());

  rewriter.setInsertionPoint(at);
  Location loc = rewriter.getFusedLoc({a.getLoc(), b.getLoc()});
  auto merged =
      linalg::GenericOp::create(rewriter, loc, resultTypes, inputs, inits, maps,
                                a.getIteratorTypesArray());
  merged->setDiscardableAttrs(a->getDiscardableAttrDictionary());
  Block *body = rewriter.createBlock(&merged.getRegion());
  for (Value v : llvm::concat<Value>(inputs, inits))
    body->addArgument(cast<ShapedType>(v.getType()).getElementType(), loc);

  // a's block arguments are the merged op's first inputs and a's outputs;
  // b's map to where its inputs landed and to its outputs after a's.
  IRMapping mapping;
  Block &aBody = a.getRegion().front(), &bBody = b.getRegion().front();
  unsigned numInputs = inputs.size();
  for (unsigned i = 0; i < a.getNumDpsInputs(); ++i)
    mapping.map(aBody.getArgument(i), body->getArgument(i));
  for (unsigned i = 0; i < a.getNumDpsInits(); ++i)
    mapping.map(aBody.getArgument(a.getNumDpsInputs() + i),
                body->getArgument(numInputs + i));
  for (auto [i, to] : llvm::enumerate(bInputAt))
    mapping.map(bBody.getArgument(i), body->getArgument(to));
  for (unsigned i = 0; i < b.getNumDpsInits(); ++i)
    mapping.map(bBody.getArgument(b.getNumDpsInputs() + i),
                body->getArgument(numInputs + a.getNumDpsInits() + i));

  rewriter.setInsertionPointToEnd(body);
  SmallVector<Value> yielded;
  for (Block *from : {&aBody, &bBody}) {
    for (Operation &op : from->without_terminator())
      rewriter.clone(op, mapping);
    for (Value v : from->getTerminator()->getOperands())
      yielded.push_back(mapping.lookupOrDefault(v));
  }
  linalg::YieldOp::create(rewriter, loc, yielded);

  unsigned numA = a->getNumResults();
  rewriter.replaceOp(a, merged->getResults().take_front(numA));
  rewriter.replaceOp(b, merged->getResults().drop_front(numA));
  return merged;
}

struct MergeSiblingReductionsPass
    : PassWrapper<MergeSiblingReductionsPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(MergeSiblingReductionsPass)

  StringRef getArgument() const override { return "soap-merge-reductions"; }
  StringRef getDescription() const override {
    return "run independent reductions over the same loops that read one "
           "tensor through the same map (a batch norm's backward sums) as "
           "one generic, so that they share a pass over their inputs (the "
           "--soap-lower-cpu step merge-reductions)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<linalg::LinalgDialect>();
  }
  void runOnOperation() override { mergeSiblingReductions(getOperation()); }
};

} // namespace

std::unique_ptr<Pass> createMergeSiblingReductionsPass() {
  return std::make_unique<MergeSiblingReductionsPass>();
}

int mergeSiblingReductions(Operation *root) {
  SmallVector<Block *> blocks;
  root->walk([&](Block *block) { blocks.push_back(block); });
  IRRewriter rewriter(root->getContext());
  int merges = 0;
  for (Block *block : blocks) {
    // The reductions met so far in this block, merged ones included.
    SmallVector<linalg::GenericOp> seen;
    for (Operation &op : llvm::make_early_inc_range(*block)) {
      auto generic = dyn_cast<linalg::GenericOp>(&op);
      if (!generic || !isCandidate(generic))
        continue;
      linalg::GenericOp into;
      Operation *at = nullptr;
      for (linalg::GenericOp earlier : seen)
        if (sameLoops(earlier, generic) && shareAnInput(earlier, generic) &&
            (at = mergePoint(earlier, generic))) {
          into = earlier;
          break;
        }
      if (!into) {
        seen.push_back(generic);
        continue;
      }
      linalg::GenericOp merged = merge(into, generic, at, rewriter);
      *llvm::find(seen, into) = merged;
      ++merges;
    }
  }
  return merges;
}

} // namespace soap::codegen

//===- Guards.cpp - one guard for neighbouring ops on the same devices ----===//
//
// The partitioner wraps every op placed on a subset of the devices in its
// own soap.on_devices guard, and leaves the ops that make its operands
// (tensor.empty, linalg.fill of its init, pads and slices of its inputs)
// outside, where every rank runs them. A pipeline stage of a searched
// ResNet-152 is hundreds of such guards in a row, each an scf.if on the
// rank after lowering: every rank fills the output buffers of every op of
// the model, and elementwise fusion cannot cross from one guard into the
// next.
//
// mergeGuards, before the guards are lowered:
//   1. sinks each op without memory effects whose results are used only
//      inside one guard of its block into that guard (so that only the
//      guard's devices run it);
//   2. merges each run of guards that follow each other directly and name
//      the same devices into one guard, whose results are the values the
//      run yields that something after it uses;
//   3. inside each guard, replaces a lookup in a constant rank table
//      (tensor.extract of a constant at soap.rank: RankTables.h) whose
//      entries agree on the guard's devices by that entry. An op on device
//      1 alone has its pad offsets, say, as constants again, which the
//      kernels need (a convolution's data gradient reads its padded
//      adjoint as a spread only at static offsets).
//
//===----------------------------------------------------------------------===//

#include "LoweringSteps.h"

#include "soap/Dialect/SoapDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace soap {
namespace codegen {
namespace {

/// The guard of `block` that all uses of `op`'s results are in, if there is
/// one and it comes after `op`.
OnDevicesOp onlyUserGuard(Operation *op, Block &block) {
  OnDevicesOp guard;
  for (Operation *user : op->getUsers()) {
    Operation *top = block.findAncestorOpInBlock(*user);
    auto userGuard = dyn_cast_or_null<OnDevicesOp>(top);
    if (!userGuard || userGuard == op || (guard && userGuard != guard))
      return nullptr;
    guard = userGuard;
  }
  if (guard && !op->isBeforeInBlock(guard))
    return nullptr;
  return guard;
}

/// Step 1 (file comment), last op first, so that a chain of such ops
/// (tensor.empty, then the linalg.fill of it) moves in whole and in order.
void sinkIntoGuards(Block &block) {
  SmallVector<Operation *> ops;
  for (Operation &op : block)
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops)) {
    if (op->getNumResults() == 0 || isa<OnDevicesOp>(op) ||
        op->hasTrait<OpTrait::IsTerminator>() || !isMemoryEffectFree(op))
      continue;
    if (OnDevicesOp guard = onlyUserGuard(op, block))
      op->moveBefore(&guard.getBody().front(),
                     guard.getBody().front().begin());
  }
}

/// Step 3 (file comment) in `guard`.
void foldRankLookups(OnDevicesOp guard) {
  ArrayRef<int64_t> devices = guard.getDevices();
  if (devices.empty())
    return;
  SmallVector<tensor::ExtractOp> lookups;
  bool folded = false;
  guard.getBody().walk([&](tensor::ExtractOp extract) {
    if (extract.getIndices().size() == 1 &&
        extract.getIndices()[0].getDefiningOp<RankOp>())
      lookups.push_back(extract);
  });
  for (tensor::ExtractOp extract : lookups) {
    DenseElementsAttr table;
    if (!matchPattern(extract.getTensor(), m_Constant(&table)) ||
        table.getType().getRank() != 1)
      continue;
    int64_t size = table.getNumElements();
    if (llvm::any_of(devices, [&](int64_t d) { return d < 0 || d >= size; }))
      continue;
    auto entries = table.getValues<Attribute>();
    Attribute entry = entries[devices.front()];
    if (llvm::any_of(devices, [&](int64_t d) { return entries[d] != entry; }))
      continue;
    OpBuilder builder(extract);
    Value constant = arith::ConstantOp::create(builder, extract.getLoc(),
                                               cast<TypedAttr>(entry));
    extract.replaceAllUsesWith(constant);
    extract.erase();
    folded = true;
  }
  if (!folded)
    return;
  // The offsets and sizes the entries feed (through index casts) become
  // static: a slice or pad at constant offsets.
  MLIRContext *context = guard.getContext();
  RewritePatternSet patterns(context);
  arith::IndexCastOp::getCanonicalizationPatterns(patterns, context);
  tensor::InsertSliceOp::getCanonicalizationPatterns(patterns, context);
  tensor::ExtractSliceOp::getCanonicalizationPatterns(patterns, context);
  // Constants stay in the guard (only its devices need them).
  (void)applyPatternsGreedily(guard.getBody(), std::move(patterns),
                              GreedyRewriteConfig().enableConstantCSE(false));
}

/// Step 2 for one run of at least two guards (file comment).
void mergeRun(ArrayRef<OnDevicesOp> run) {
  auto inRun = [&](OpOperand &use) {
    return llvm::any_of(run, [&](OnDevicesOp guard) {
      return guard->isAncestor(use.getOwner());
    });
  };
  // Inside the run, a guard's results become the values it yields.
  SmallVector<std::pair<Value, Value>> results; // (result, yielded value)
  for (OnDevicesOp guard : run) {
    auto yield = cast<YieldOp>(guard.getBody().front().getTerminator());
    for (auto [result, value] :
         llvm::zip(guard.getResults(), yield.getValues())) {
      result.replaceUsesWithIf(value, inRun);
      results.push_back({result, value});
    }
  }
  SmallVector<Value> kept, yielded;
  SmallVector<Type> types;
  for (auto [result, value] : results)
    if (!result.use_empty()) {
      kept.push_back(result);
      yielded.push_back(value);
      types.push_back(result.getType());
    }

  OnDevicesOp first = run.front();
  OpBuilder builder(first);
  auto merged = OnDevicesOp::create(builder, first.getLoc(), types,
                                    first.getDevicesAttr());
  Block *body = new Block();
  merged.getBody().push_back(body);
  for (OnDevicesOp guard : run) {
    Block &from = guard.getBody().front();
    from.getTerminator()->erase();
    body->getOperations().splice(body->end(), from.getOperations());
  }
  builder.setInsertionPointToEnd(body);
  YieldOp::create(builder, first.getLoc(), yielded);
  for (auto [result, replacement] : llvm::zip(kept, merged.getResults()))
    result.replaceAllUsesWith(replacement);
  for (OnDevicesOp guard : run)
    guard->erase();
}

void mergeAdjacentGuards(Block &block) {
  SmallVector<SmallVector<OnDevicesOp>> runs;
  SmallVector<OnDevicesOp> run;
  for (Operation &op : block) {
    auto guard = dyn_cast<OnDevicesOp>(&op);
    if (guard && !run.empty() &&
        run.back()->getNextNode() == guard.getOperation() &&
        run.back().getDevices() == guard.getDevices()) {
      run.push_back(guard);
      continue;
    }
    if (run.size() > 1)
      runs.push_back(std::move(run));
    run.clear();
    if (guard)
      run.push_back(guard);
  }
  if (run.size() > 1)
    runs.push_back(std::move(run));
  for (ArrayRef<OnDevicesOp> each : runs)
    mergeRun(each);
}

struct MergeGuardsPass
    : PassWrapper<MergeGuardsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(MergeGuardsPass)

  StringRef getArgument() const override { return "soap-merge-guards"; }
  StringRef getDescription() const override {
    return "sink ops without memory effects into the one soap.on_devices "
           "guard that uses them, and merge neighbouring guards on the same "
           "devices into one (the CPU lowering runs it before it lowers the "
           "guards)";
  }
  void runOnOperation() override { mergeGuards(getOperation()); }
};

} // namespace

void mergeGuards(ModuleOp module) {
  llvm::SetVector<Block *> blocks;
  module.walk([&](OnDevicesOp guard) { blocks.insert(guard->getBlock()); });
  for (Block *block : blocks) {
    sinkIntoGuards(*block);
    mergeAdjacentGuards(*block);
  }
  module.walk([](OnDevicesOp guard) { foldRankLookups(guard); });
}

std::unique_ptr<Pass> createMergeGuardsPass() {
  return std::make_unique<MergeGuardsPass>();
}

} // namespace codegen
} // namespace soap

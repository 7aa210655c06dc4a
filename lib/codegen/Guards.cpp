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
//      run yields that something after it uses.
//
//===----------------------------------------------------------------------===//

#include "LoweringSteps.h"

#include "soap/Dialect/SoapDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/Pass.h"

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
}

std::unique_ptr<Pass> createMergeGuardsPass() {
  return std::make_unique<MergeGuardsPass>();
}

} // namespace codegen
} // namespace soap

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
//      inside guards of its block that name the same devices into the
//      first of them (so that only those devices run it), which yields it
//      to the others;
//   2. moves each transfer (a soap.send and the soap.recv of its tag
//      after it) up past guards its senders do not run, and past ops
//      without memory effects or regions (with those of them that make
//      what it sends), to right after the transfer before it with the
//      same senders and receivers. A model-parallel stage's backward pass
//      receives the gradients another stage made in one guard as many
//      transfers, each before the guard that reads it: guards that could
//      not merge, and chains of products (an LSTM's weight gradient over
//      its time steps) that mergeAccumulatingProducts could not merge, as
//      it merges within one block. Nothing waits longer: the senders send
//      the moved transfer right after the one before it, since they run
//      nothing in between, and the receivers waited for that one there;
//   3. merges each run of guards that follow each other directly and name
//      the same devices into one guard, whose results are the values the
//      run yields that something after it uses;
//   4. moves a permuting copy (permutingCopy: the autodiff's transposed
//      weight gradient) that a guard runs of a result an earlier guard on
//      the same devices makes, and that nothing else reads (neither after
//      that guard nor inside it), into that earlier guard, beside the op
//      that makes the result. A copy of a value the earlier guard also
//      reads (a forward activation that a backward product reads
//      transposed) stays with its reader, which reads through it
//      (foldTransposesIntoContractions): moved, it would be a copy of its
//      own (torch-mlir BERT's attention under model parallelism: 0.74 ms
//      of transposes a step on each rank). A model-parallel
//      stage computes its weight gradients in its backward guard and
//      updates its weights in a later guard, after other devices' guards;
//      the transpose of each gradient then sits with the product that makes
//      it, which writes the transposed layout directly
//      (foldTransposesIntoConvolutions), as on one device.
//   5. inside each guard, replaces a lookup in a constant rank table
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
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/RegionUtils.h"

#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace soap {
namespace codegen {
namespace {

/// The guards of `block` that all uses of `op`'s results are in, in block
/// order, if they all come after `op` and name the same devices.
SmallVector<OnDevicesOp> userGuards(Operation *op, Block &block) {
  SmallVector<OnDevicesOp> guards;
  for (Operation *user : op->getUsers()) {
    Operation *top = block.findAncestorOpInBlock(*user);
    auto guard = dyn_cast_or_null<OnDevicesOp>(top);
    if (!guard || guard == op || !op->isBeforeInBlock(guard) ||
        (!guards.empty() && guard.getDevices() != guards.front().getDevices()))
      return {};
    if (!llvm::is_contained(guards, guard))
      guards.push_back(guard);
  }
  llvm::sort(guards, [](OnDevicesOp a, OnDevicesOp b) {
    return a->isBeforeInBlock(b);
  });
  return guards;
}

/// Replaces the guard `at` by a guard on its devices whose body is `body`
/// (which has no terminator yet) and that yields, for each (result, value)
/// of `yields` whose result something still uses, the value, which replaces
/// the result outside the new guard.
OnDevicesOp rebuildGuard(OnDevicesOp at, Block *body,
                         ArrayRef<std::pair<Value, Value>> yields) {
  SmallVector<Value> kept, yielded;
  SmallVector<Type> types;
  for (auto [result, value] : yields)
    if (!result.use_empty()) {
      kept.push_back(result);
      yielded.push_back(value);
      types.push_back(result.getType());
    }
  OpBuilder builder(at);
  auto rebuilt =
      OnDevicesOp::create(builder, at.getLoc(), types, at.getDevicesAttr());
  rebuilt.getBody().push_back(body);
  builder.setInsertionPointToEnd(body);
  YieldOp::create(builder, at.getLoc(), yielded);
  for (auto [result, replacement] : llvm::zip(kept, rebuilt.getResults()))
    result.replaceUsesWithIf(replacement, [&](OpOperand &use) {
      return !rebuilt->isAncestor(use.getOwner());
    });
  return rebuilt;
}

/// Step 1 (file comment), last op first, so that a chain of such ops
/// (tensor.empty, then the linalg.fill of it) moves in whole and in order.
/// An op that several guards on the same devices read (the padded image
/// that a convolution reads forwards and its weight gradient backwards)
/// moves into the first, which yields it to the others.
void sinkIntoGuards(Block &block) {
  SmallVector<Operation *> ops;
  for (Operation &op : block)
    if (op.getNumResults() != 0 && !isa<OnDevicesOp>(op) &&
        !op.hasTrait<OpTrait::IsTerminator>() && isMemoryEffectFree(&op))
      ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops)) {
    SmallVector<OnDevicesOp> guards = userGuards(op, block);
    if (guards.empty())
      continue;
    // Several guards take what they write into (an empty tensor, a fill)
    // each from its own copy where every rank makes it (unshareInits).
    if (guards.size() > 1 && llvm::any_of(op->getUses(), [](OpOperand &use) {
          auto dps = dyn_cast<DestinationStyleOpInterface>(use.getOwner());
          return dps && dps.isDpsInit(&use);
        }))
      continue;
    Block &first = guards.front().getBody().front();
    op->moveBefore(&first, first.begin());
    if (guards.size() > 1)
      yieldAlso(guards.front(), op->getResults());
  }
}

/// Step 5 (file comment) in `guard`.
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

/// Whether `send` and the op after it are one transfer: the soap.recv of
/// its tag between the same devices.
RecvOp receiverOf(SendOp send) {
  auto recv = dyn_cast_or_null<RecvOp>(send->getNextNode());
  if (!recv || recv.getTag() != send.getTag() ||
      recv.getFrom() != send.getFrom() || recv.getTo() != send.getTo())
    return nullptr;
  return recv;
}

/// Step 2 (file comment), in block order.
void hoistTransfers(Block &block) {
  SmallVector<SendOp> sends(block.getOps<SendOp>());
  for (SendOp send : sends) {
    RecvOp recv = receiverOf(send);
    if (!recv)
      continue;
    ArrayRef<int64_t> senders = send.getFrom();
    SmallVector<Operation *> makers;
    Operation *after = walkUpToMove(
        send,
        [&](Operation *at, bool makes) {
          if (auto guard = dyn_cast<OnDevicesOp>(at))
            return !makes && llvm::none_of(guard.getDevices(), [&](int64_t d) {
              return llvm::is_contained(senders, d);
            });
          return !isa<RecvOp>(at) && at->getNumRegions() == 0 &&
                 isMemoryEffectFree(at);
        },
        makers);
    // Only to right after the transfer before it between the same devices.
    auto previous = dyn_cast_or_null<RecvOp>(after);
    auto previousSend =
        previous ? dyn_cast_or_null<SendOp>(previous->getPrevNode()) : nullptr;
    if (!previousSend || receiverOf(previousSend) != previous ||
        previous.getFrom() != send.getFrom() ||
        previous.getTo() != send.getTo() ||
        after->getNextNode() == send.getOperation())
      continue;
    moveUpAfter(send, makers, after);
    recv->moveAfter(send);
  }
}

/// Step 3 for one run of at least two guards (file comment).
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
  Block *body = new Block();
  for (OnDevicesOp guard : run) {
    Block &from = guard.getBody().front();
    from.getTerminator()->erase();
    body->getOperations().splice(body->end(), from.getOperations());
  }
  rebuildGuard(run.front(), body, results);
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

/// Whether `value`, which an op of `consumer` reads, can be had in the
/// earlier guard `producer` of the same block: it is defined before
/// `producer` or outside the block, or made in `consumer` by ops without
/// memory effects or regions from such values (a tensor.empty, a fill of
/// it with a constant), which `producer` can make again.
bool availableIn(Value value, OnDevicesOp producer, OnDevicesOp consumer) {
  Operation *def = value.getDefiningOp();
  Block *block = producer->getBlock();
  if (!def) {
    Region *region = value.getParentRegion();
    return !consumer->isProperAncestor(region->getParentOp()) &&
           region != &consumer.getBody();
  }
  if (!consumer->isProperAncestor(def)) {
    Operation *top = block->findAncestorOpInBlock(*def);
    return !top || top->isBeforeInBlock(producer);
  }
  if (def->getBlock() != &consumer.getBody().front() ||
      def->getNumRegions() != 0 || !isMemoryEffectFree(def))
    return false;
  return llvm::all_of(def->getOperands(), [&](Value operand) {
    return availableIn(operand, producer, consumer);
  });
}

/// Step 4 (file comment) for the copies of `producer`'s results.
void hoistCopiesOfResults(OnDevicesOp producer) {
  Block *block = producer->getBlock();
  auto yield = cast<YieldOp>(producer.getBody().front().getTerminator());
  struct Copy {
    Value result;                // of the producer, which the copy reads
    Operation *copy;             // in the consumer
    llvm::SetVector<Value> reads; // its operands and captured values
  };
  SmallVector<Copy> copies;
  for (auto [result, value] :
       llvm::zip(producer.getResults(), yield.getValues())) {
    // The copy must become the only reader of what the op makes, which can
    // then write through it.
    if (!result.hasOneUse() || !value.hasOneUse() ||
        !value.getDefiningOp<linalg::LinalgOp>())
      continue;
    Operation *copy = *result.getUsers().begin();
    auto consumer = dyn_cast<OnDevicesOp>(copy->getParentOp());
    if (!consumer || consumer->getBlock() != block ||
        consumer.getDevices() != producer.getDevices() ||
        copy->getNumResults() != 1 || !permutingCopy(copy, result))
      continue;
    llvm::SetVector<Value> reads(copy->getOperands().begin(),
                                 copy->getOperands().end());
    getUsedValuesDefinedAbove(copy->getRegions(), reads);
    if (llvm::all_of(reads, [&](Value read) {
          return read == result || availableIn(read, producer, consumer);
        }))
      copies.push_back({result, copy, std::move(reads)});
  }
  if (copies.empty())
    return;
  // Each copy, and what it reads that its guard makes, goes before the
  // producer's yield; its result becomes one of the producer's.
  OpBuilder builder(yield);
  SmallVector<Value> moved;
  for (auto &[result, copy, reads] : copies) {
    IRMapping mapping;
    mapping.map(result,
                yield.getValues()[cast<OpResult>(result).getResultNumber()]);
    // The ops of the consumer that make what the copy reads, in order.
    llvm::SetVector<Operation *> makers;
    std::function<void(Value)> collect = [&](Value read) {
      Operation *def = read.getDefiningOp();
      if (!def || !copy->getParentOp()->isProperAncestor(def) ||
          makers.contains(def))
        return;
      for (Value operand : def->getOperands())
        collect(operand);
      makers.insert(def);
    };
    for (Value read : reads)
      if (read != result)
        collect(read);
    for (Operation *maker : makers)
      builder.clone(*maker, mapping);
    Value made = builder.clone(*copy, mapping)->getResult(0);
    copy->getResult(0).replaceAllUsesWith(made);
    copy->erase();
    for (Operation *maker : llvm::reverse(makers))
      if (maker->use_empty())
        maker->erase();
    moved.push_back(made);
  }
  // Later guards read the moved copies' results through the new guard's.
  yieldAlso(producer, moved);
}

void hoistCopiesIntoProducers(Block &block) {
  SmallVector<OnDevicesOp> guards(block.getOps<OnDevicesOp>());
  for (OnDevicesOp guard : guards)
    hoistCopiesOfResults(guard);
}

struct MergeGuardsPass
    : PassWrapper<MergeGuardsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(MergeGuardsPass)

  StringRef getArgument() const override { return "soap-merge-guards"; }
  StringRef getDescription() const override {
    return "sink ops without memory effects into the soap.on_devices "
           "guards on one device set that use them, move transfers up past "
           "guards their senders do not run, merge neighbouring "
           "guards on the same devices into one, and move transposes of a "
           "guard's results into it (the CPU lowering runs it before it "
           "lowers the guards)";
  }
  void runOnOperation() override { mergeGuards(getOperation()); }
};

} // namespace

OnDevicesOp yieldAlso(OnDevicesOp guard, ValueRange values) {
  auto yield = cast<YieldOp>(guard.getBody().front().getTerminator());
  SmallVector<std::pair<Value, Value>> results;
  for (auto [result, value] : llvm::zip(guard.getResults(), yield.getValues()))
    results.push_back({result, value});
  for (Value value : values)
    results.push_back({value, value});
  Block *body = &guard.getBody().front();
  body->getParent()->getBlocks().remove(body);
  yield->erase();
  OnDevicesOp rebuilt = rebuildGuard(guard, body, results);
  guard->erase();
  return rebuilt;
}

void mergeGuards(ModuleOp module) {
  llvm::SetVector<Block *> blocks;
  module.walk([&](OnDevicesOp guard) { blocks.insert(guard->getBlock()); });
  for (Block *block : blocks) {
    sinkIntoGuards(*block);
    hoistTransfers(*block);
    mergeAdjacentGuards(*block);
    hoistCopiesIntoProducers(*block);
  }
  module.walk([](OnDevicesOp guard) { foldRankLookups(guard); });
}

std::unique_ptr<Pass> createMergeGuardsPass() {
  return std::make_unique<MergeGuardsPass>();
}

} // namespace codegen
} // namespace soap

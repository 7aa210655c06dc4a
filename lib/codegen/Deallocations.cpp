//===- Deallocations.cpp - deallocations that scale and free early --------===//
//
// Ownership-based deallocation ends every block with one
// bufferization.dealloc of all the buffers the block still owns. On a
// training step that is one op listing every temporary of the step, which
// costs twice:
//
//   compile time: upstream's buffer-deallocation-simplification splits it
//   by asking its BufferOriginAnalysis about every pair of listed buffers
//   (494 s of the searched 4-rank MobileBERT's 10-minute lowering). The
//   `soap-split-deallocs` pass splits it first, by classes of buffers that
//   may be the same memory, computed once per function in linear time;
//   upstream's simplification then sees deallocs of one buffer each;
//
//   memory: every temporary lives until the step returns, so the step's
//   peak is the sum of all of them. The `soap-dealloc-after-last-use` pass
//   (CPU lowering) moves each lowered deallocation up to right after the
//   last op of its block that touches a buffer of its class.
//
// bufferization-lower-deallocations calls a helper function for each
// deallocation whose buffers' ownership is only known at run time; the
// helper takes dynamic memrefs, which the bare-pointer calling convention
// cannot pass, so it goes inline. Upstream's inliner splits the caller's
// block at every call (moving every op after it), the square of a step with
// thousands of such calls in one block: 230 s of the searched 4-rank
// MobileBERT's lowering. `soap-inline-single-block-calls` clones the body
// of a private single-block callee in place of each call instead.
//
// Classes: AliasClasses.h.
//
//===----------------------------------------------------------------------===//

#include "AliasClasses.h"
#include "LoweringSteps.h"

#include "soap/codegen/CpuLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"

#include <mutex>

using namespace mlir;

namespace soap {
namespace codegen {
namespace {

/// Splits every bufferization.dealloc of buffers of several classes into
/// one per class (retaining the values of that class); a retained value of
/// a class nothing is freed from gets `false`, as the op defines.
struct SplitDeallocsPass
    : PassWrapper<SplitDeallocsPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(SplitDeallocsPass)

  StringRef getArgument() const override { return "soap-split-deallocs"; }
  StringRef getDescription() const override {
    return "split bufferization.dealloc ops by classes of buffers that may "
           "alias, computed in linear time (before "
           "buffer-deallocation-simplification, whose pairwise queries are "
           "quadratic)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect>();
  }

  void runOnOperation() override {
    AliasClasses classes(getOperation());
    SmallVector<bufferization::DeallocOp> deallocs;
    getOperation().walk(
        [&](bufferization::DeallocOp op) { deallocs.push_back(op); });
    for (bufferization::DeallocOp op : deallocs)
      split(op, classes);
  }

  static void split(bufferization::DeallocOp op, AliasClasses &classes) {
    struct Group {
      SmallVector<Value> memrefs, conditions, retained;
      SmallVector<unsigned> retainedIndices;
    };
    llvm::MapVector<Value, Group> groups;
    for (auto [memref, condition] :
         llvm::zip(op.getMemrefs(), op.getConditions())) {
      Group &group = groups[classes.leader(memref)];
      group.memrefs.push_back(memref);
      group.conditions.push_back(condition);
    }
    if (groups.size() < 2)
      return;
    for (auto [index, retained] : llvm::enumerate(op.getRetained())) {
      auto it = groups.find(classes.leader(retained));
      if (it == groups.end())
        continue;
      it->second.retained.push_back(retained);
      it->second.retainedIndices.push_back(index);
    }
    OpBuilder builder(op);
    SmallVector<Value> replacements(op.getNumResults());
    for (auto &[leader, group] : groups) {
      auto part = bufferization::DeallocOp::create(
          builder, op.getLoc(), group.memrefs, group.conditions,
          group.retained);
      for (auto [result, index] :
           llvm::zip(part.getUpdatedConditions(), group.retainedIndices))
        replacements[index] = result;
    }
    for (Value &replacement : replacements)
      if (!replacement)
        replacement = arith::ConstantOp::create(builder, op.getLoc(),
                                                builder.getBoolAttr(false));
    op->replaceAllUsesWith(replacements);
    op->erase();
  }
};

/// A memref.dealloc, or an scf.if without results that only deallocates
/// (a deallocation under a dynamic ownership condition).
bool onlyDeallocates(Operation *op) {
  if (isa<memref::DeallocOp>(op))
    return true;
  auto guard = dyn_cast<scf::IfOp>(op);
  if (!guard || guard->getNumResults() != 0)
    return false;
  return !guard
              ->walk([&](Operation *nested) {
                return nested == op ||
                               isa<memref::DeallocOp, scf::YieldOp>(nested)
                           ? WalkResult::advance()
                           : WalkResult::interrupt();
              })
              .wasInterrupted();
}

/// A memref.extract_strided_metadata whose results only one deallocation
/// of its block uses: bufferization-lower-deallocations takes the base
/// buffer of a buffer whose ownership is known at run time (a region's
/// result: a guard's) right before freeing it. It moves with that
/// deallocation.
Operation *deallocationOfHelper(Operation *op) {
  if (!isa<memref::ExtractStridedMetadataOp>(op))
    return nullptr;
  Operation *deallocation = nullptr;
  for (Operation *user : op->getUsers()) {
    Operation *top = op->getBlock()->findAncestorOpInBlock(*user);
    if (!top || !onlyDeallocates(top) || (deallocation && top != deallocation))
      return nullptr;
    deallocation = top;
  }
  return deallocation;
}

/// Records `op` as the last op in `last` to touch (take or make, itself or
/// an op nested in it) each buffer class it touches.
static void noteTouches(Operation *op, AliasClasses &classes,
                        llvm::DenseMap<Value, Operation *> &last) {
  op->walk([&](Operation *nested) {
    for (Value value : nested->getOperands())
      if (isBuffer(value))
        last[classes.leader(value)] = op;
    for (Value value : nested->getResults())
      if (isBuffer(value))
        last[classes.leader(value)] = op;
  });
}

/// Moves the deallocations of `block` (and of the blocks nested in it) up
/// to right after the last op of their block before them that touches
/// their buffers' classes or defines one of their operands; the base
/// buffers they free (deallocationOfHelper) move with them.
void moveDeallocationsUp(Block &block, AliasClasses &classes) {
  // One forward scan: each op's position, the last op so far touching each
  // class, and where each deallocation goes (moving one later does not
  // change the order of the others).
  llvm::DenseMap<Operation *, unsigned> position;
  llvm::DenseMap<Value, Operation *> lastTouch;
  SmallVector<std::pair<Operation *, Operation *>> moves;
  llvm::DenseMap<Operation *, SmallVector<Operation *>> helpers;
  unsigned index = 0;
  for (Operation &op : block) {
    position[&op] = index++;
    if (Operation *deallocation = deallocationOfHelper(&op)) {
      helpers[deallocation].push_back(&op);
      continue;
    }
    if (!onlyDeallocates(&op)) {
      noteTouches(&op, classes, lastTouch);
      for (Region &region : op.getRegions())
        for (Block &nested : region)
          moveDeallocationsUp(nested, classes);
      continue;
    }
    Operation *after = nullptr;
    auto later = [&](Operation *candidate) {
      if (candidate && (!after || position[candidate] > position[after]))
        after = candidate;
    };
    bool external = false;
    auto constrain = [&](Operation *user) {
      for (Value operand : user->getOperands()) {
        if (isBuffer(operand)) {
          external |= classes.isExternal(operand);
          later(lastTouch.lookup(classes.leader(operand)));
        }
        // The operand's definition, seen from this block.
        Operation *def = operand.getDefiningOp();
        if (!def)
          def = operand.getParentBlock()->getParentOp();
        if (def && def->getBlock() != &block)
          def = block.findAncestorOpInBlock(*def);
        if (def && def != &op && position.count(def) &&
            deallocationOfHelper(def) != &op)
          later(def);
      }
    };
    op.walk(constrain);
    auto found = helpers.find(&op);
    if (found != helpers.end())
      for (Operation *helper : found->second)
        constrain(helper);
    if (!external && op.getPrevNode() != after)
      moves.push_back({&op, after});
  }
  for (auto [deallocation, after] : moves) {
    if (after)
      deallocation->moveAfter(after);
    else
      deallocation->moveBefore(&block, block.begin());
    auto found = helpers.find(deallocation);
    if (found != helpers.end())
      for (Operation *helper : found->second)
        helper->moveBefore(deallocation);
  }
}

/// A conditional free (scf.if %c { memref.dealloc ... }) of a buffer a
/// guard made (its ownership is the guard's condition) whose class a later
/// guard on the same condition touched last (a forward result that
/// backward ops on the same devices read) goes into that guard, right
/// after the last op there that touches it. CommunicationOps.cpp merges
/// the guards of consecutive ops: without this, what the forward pass of a
/// device subset saves lives until its whole backward guard is done.
void sinkFreesIntoGuards(Block &block, AliasClasses &classes) {
  llvm::DenseMap<Value, Operation *> lastTouch;
  // Per guard, the last op of its then-block to touch each class.
  llvm::DenseMap<Operation *, llvm::DenseMap<Value, Operation *>> inGuard;
  for (Operation &op : llvm::make_early_inc_range(block)) {
    auto free = dyn_cast<scf::IfOp>(&op);
    if (!free || !onlyDeallocates(free) || !free.getElseRegion().empty()) {
      if (!onlyDeallocates(&op) && !deallocationOfHelper(&op))
        noteTouches(&op, classes, lastTouch);
      continue;
    }
    SmallVector<memref::DeallocOp> deallocs(
        free.getThenRegion().getOps<memref::DeallocOp>());
    for (memref::DeallocOp dealloc : deallocs) {
      // The buffer, and the base-buffer helper that frees it.
      Value buffer = dealloc.getMemref();
      auto helper = buffer.getDefiningOp<memref::ExtractStridedMetadataOp>();
      if (helper && helper->getBlock() == &block)
        buffer = helper.getSource();
      else
        helper = nullptr;
      if (classes.isExternal(buffer))
        continue;
      Value leader = classes.leader(buffer);
      auto guard = dyn_cast_or_null<scf::IfOp>(lastTouch.lookup(leader));
      Operation *def = buffer.getDefiningOp();
      if (!guard || guard.getCondition() != free.getCondition() || !def ||
          def->getBlock() != &block || !def->isBeforeInBlock(guard) ||
          llvm::any_of(guard->getResults(), [&](Value r) {
            return isBuffer(r) && classes.leader(r) == leader;
          }))
        continue;
      auto [cached, fresh] = inGuard.try_emplace(guard);
      if (fresh)
        for (Operation &inner :
             guard.getThenRegion().front().without_terminator())
          noteTouches(&inner, classes, cached->second);
      Operation *last = cached->second.lookup(leader);
      if (!last)
        continue;
      OpBuilder builder(last->getContext());
      builder.setInsertionPointAfter(last);
      Value freed = buffer;
      if (helper)
        freed = builder.clone(*helper)->getResult(0);
      memref::DeallocOp::create(builder, dealloc.getLoc(), freed);
      dealloc.erase();
      if (helper && helper->use_empty())
        helper.erase();
    }
    if (llvm::hasSingleElement(free.getThenRegion().front()))
      free.erase();
  }
}

/// Moves the deallocations of a function up (moveDeallocationsUp).
struct DeallocAfterLastUsePass
    : PassWrapper<DeallocAfterLastUsePass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(DeallocAfterLastUsePass)

  StringRef getArgument() const override {
    return "soap-dealloc-after-last-use";
  }
  StringRef getDescription() const override {
    return "move each memref.dealloc (or scf.if that only deallocates) up to "
           "right after the last op of its block that touches a buffer that "
           "may alias the freed one (after bufferization-lower-deallocations; "
           "the CPU lowering)";
  }

  void runOnOperation() override {
    func::FuncOp function = getOperation();
    if (function.isExternal())
      return;
    AliasClasses classes(function);
    for (Block &block : function.getBody()) {
      moveDeallocationsUp(block, classes);
      sinkFreesIntoGuards(block, classes);
    }
  }
};

/// Inlines every call of a private function whose body is one block
/// without calls: its ops are cloned in place of the call, which leaves the
/// caller's block whole (upstream's inliner splits it at each call). Other
/// calls are left to upstream's `inline`.
struct InlineSingleBlockCallsPass
    : PassWrapper<InlineSingleBlockCallsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(InlineSingleBlockCallsPass)

  StringRef getArgument() const override {
    return "soap-inline-single-block-calls";
  }
  StringRef getDescription() const override {
    return "inline calls of private single-block functions without calls "
           "by cloning their body in place, in time linear in the callers "
           "(upstream's inliner splits the caller's block at each call)";
  }

  static bool inlinable(func::FuncOp callee) {
    if (!callee || callee.isExternal() || !callee.isPrivate() ||
        !callee.getBody().hasOneBlock() ||
        !isa<func::ReturnOp>(callee.front().getTerminator()))
      return false;
    return !callee
                .walk([](CallOpInterface) { return WalkResult::interrupt(); })
                .wasInterrupted();
  }

  void runOnOperation() override {
    SymbolTable symbols(getOperation());
    llvm::DenseMap<Operation *, bool> canInline;
    SmallVector<func::CallOp> calls;
    getOperation().walk([&](func::CallOp call) { calls.push_back(call); });
    for (func::CallOp call : calls) {
      auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
      if (!callee)
        continue;
      auto [it, inserted] = canInline.try_emplace(callee, false);
      if (inserted)
        it->second = inlinable(callee);
      if (!it->second || callee->isAncestor(call))
        continue;
      Block &body = callee.front();
      IRMapping mapping;
      mapping.map(body.getArguments(), call.getOperands());
      OpBuilder builder(call);
      for (Operation &op : body.without_terminator())
        builder.clone(op, mapping);
      SmallVector<Value> results;
      for (Value returned : body.getTerminator()->getOperands())
        results.push_back(mapping.lookupOrDefault(returned));
      call->replaceAllUsesWith(results);
      call->erase();
    }
  }
};

} // namespace

} // namespace codegen

void registerLoweringPasses() {
  static std::once_flag once;
  std::call_once(once, [] {
    registerScfToCfPass();
    PassRegistration<codegen::SplitDeallocsPass>();
    PassRegistration<codegen::DeallocAfterLastUsePass>();
    PassRegistration<codegen::InlineSingleBlockCallsPass>();
    registerPass([] { return codegen::createMergeGuardsPass(); });
    registerPass([] { return codegen::createSendEarlyPass(); });
    registerPass([] { return codegen::createRegisterReductionsPass(); });
    registerPass([] { return codegen::createSparseUpdatesPass(); });
    registerPass([] { return codegen::createMergeAccumulationsPass(); });
    registerPass([] { return codegen::createDropZeroAccumulationsPass(); });
    registerPass([] { return codegen::createPlaneUpdatesPass(); });
    registerPass([] { return codegen::createMergeSiblingReductionsPass(); });
    registerPass([] { return codegen::createFoldTransposesPass(); });
    registerPass([] { return codegen::createFoldBroadcastsPass(); });
    registerPass([] { return codegen::createKernelCallsPass(); });
    registerPass([] { return codegen::createTileTransposesPass(); });
  });
}

} // namespace soap

//===- InPlaceResults.cpp - results the driver may alias to arguments -----===//
//
// A step never writes its arguments (the driver keeps them for warm-up
// steps), so a result that starts as a copy of its argument copies the
// whole tensor every step. The sparse SGD update of an embedding table is
// such a result (SparseUpdates.cpp): the table is copied into the new
// table's buffer, then the looked-up rows are updated there. For BERT's
// 30522 x 256 word embeddings that copy is 31 MB each way, about 4 ms of a
// 60 ms one-thread step, for the few hundred rows a batch touches.
//
// After bufferization the result is the out-parameter that a
// `memref.copy %arg, %out` fills, at the top level or, in a partitioned
// program that places the table on some devices, inside their guard (an
// scf.if on the rank). When every use of the argument (and of
// its views) comes before that copy, and every use of the out-parameter at
// or after it, the step computes the same result if the two are one buffer:
// the copy is then skipped (it runs only when the pointers differ) and the
// result is marked `in_place` in the model description. The driver passes
// the argument's buffer for such a result in training steps, and the
// update happens in place; warm-up steps keep their own result buffers.
//
//===----------------------------------------------------------------------===//

#include "LoweringSteps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace soap::codegen {

namespace {

/// `root` and the views of it (subviews, casts, reshapes), transitively.
llvm::SetVector<Value> viewsOf(Value root) {
  llvm::SetVector<Value> views;
  views.insert(root);
  for (size_t i = 0; i < views.size(); ++i)
    for (Operation *user : views[i].getUsers())
      if (auto view = dyn_cast<ViewLikeOpInterface>(user))
        if (view.getViewSource() == views[i])
          for (Value result : user->getResults())
            views.insert(result);
  return views;
}

/// Whether every op that uses `value` or a view of it runs before `copy`
/// (`before`) or at or after it (!`before`): in the innermost block around
/// the copy that holds the use, the op that holds it comes before or after
/// the op that holds the copy (a use in another region of an scf.if around
/// the copy, which runs instead of it, is on neither side).
bool usedOnlyOnOneSide(Block &body, Value value, Operation *copy, bool before) {
  for (Value view : viewsOf(value))
    for (Operation *user : view.getUsers()) {
      // A view of it (viewsOf collected its result): its own uses are
      // judged.
      if (auto asView = dyn_cast<ViewLikeOpInterface>(user);
          asView && asView.getViewSource() == view)
        continue;
      if (user == copy)
        continue;
      Operation *around = copy;
      Operation *side = around->getBlock()->findAncestorOpInBlock(*user);
      while (!side) {
        if (around->getBlock() == &body)
          return false;
        around = around->getParentOp();
        side = around->getBlock()->findAncestorOpInBlock(*user);
      }
      if (side == around || before != side->isBeforeInBlock(around))
        return false;
    }
  return true;
}

/// The copies of `body`, at its top level or inside scf.if ops only (a
/// device guard: each runs at most once a step).
SmallVector<memref::CopyOp> copiesOnceAStep(Block &body) {
  SmallVector<memref::CopyOp> copies;
  body.walk([&](memref::CopyOp copy) {
    for (Operation *at = copy; at->getBlock() != &body;) {
      at = at->getParentOp();
      if (!isa<scf::IfOp>(at))
        return;
    }
    copies.push_back(copy);
  });
  return copies;
}

} // namespace

int writeGuardedResultsIntoOutParams(func::FuncOp entry) {
  if (!entry.getBody().hasOneBlock())
    return 0;
  Block &body = entry.getBody().front();
  SmallVector<memref::CopyOp> copies(body.getOps<memref::CopyOp>());
  int rewritten = 0;
  for (memref::CopyOp copy : copies) {
    auto out = dyn_cast<BlockArgument>(copy.getTarget());
    if (!out || out.getOwner() != &body || !out.hasOneUse())
      continue;
    // The guards' results that hold the copied buffer, back to the guard
    // that allocates it: an update that writes into its gradient's buffer
    // (writeIntoDyingInputs) yields the buffer that an earlier guard, the
    // gradient's, allocated.
    SmallVector<OpResult> chain;
    memref::AllocOp alloc;
    Value value = copy.getSource();
    while (!alloc) {
      auto made = dyn_cast<OpResult>(value);
      auto guard = made ? dyn_cast<scf::IfOp>(made.getOwner()) : nullptr;
      if (!guard || guard->getBlock() != &body || guard.getElseRegion().empty())
        break;
      chain.push_back(made);
      value = guard.thenYield().getOperand(made.getResultNumber());
      if (llvm::count(guard.thenYield().getOperands(), value) != 1)
        break;
      if (auto allocated = value.getDefiningOp<memref::AllocOp>();
          allocated && allocated->getBlock() == guard.thenBlock())
        alloc = allocated;
    }
    if (!alloc || alloc.getType() != out.getType() ||
        llvm::any_of(alloc->getUsers(), [](Operation *user) {
          return isa<memref::DeallocOp, memref::ExtractStridedMetadataOp>(user);
        }))
      continue;
    // The frees of those results: memref.dealloc of one, or of its base
    // buffer (bufferization-lower-deallocations' helper).
    SmallVector<Operation *> frees, helpers;
    for (OpResult made : chain)
      for (Operation *user : made.getUsers()) {
        if (isa<memref::DeallocOp>(user)) {
          frees.push_back(user);
        } else if (isa<memref::ExtractStridedMetadataOp>(user)) {
          helpers.push_back(user);
          for (Operation *use : user->getUsers())
            if (isa<memref::DeallocOp>(use))
              frees.push_back(use);
        }
      }
    alloc.getResult().replaceAllUsesWith(out);
    alloc.erase();
    copy.erase();
    for (Operation *free : frees) {
      Operation *parent = free->getParentOp();
      free->erase();
      // A conditional free left with nothing to free.
      if (auto empty = dyn_cast<scf::IfOp>(parent);
          empty && empty->getNumResults() == 0 &&
          llvm::hasSingleElement(empty.getThenRegion().front()) &&
          (empty.getElseRegion().empty() ||
           llvm::hasSingleElement(empty.getElseRegion().front())))
        empty.erase();
    }
    for (Operation *helper : helpers)
      if (helper->use_empty())
        helper->erase();
    ++rewritten;
  }
  return rewritten;
}

int markInPlaceResults(func::FuncOp entry, ModelDescription &description) {
  size_t numArgs = description.args.size();
  if (entry.getNumArguments() != numArgs + description.results.size() ||
      !entry.getBody().hasOneBlock())
    return 0;
  Block &body = entry.getBody().front();
  int marked = 0;
  for (memref::CopyOp copy : copiesOnceAStep(body)) {
    auto source = dyn_cast<BlockArgument>(copy.getSource());
    auto target = dyn_cast<BlockArgument>(copy.getTarget());
    if (!source || !target || source.getOwner() != &body ||
        target.getOwner() != &body || source.getArgNumber() >= numArgs ||
        target.getArgNumber() < numArgs || source.getType() != target.getType())
      continue;
    const TensorDescription &argument = description.args[source.getArgNumber()];
    TensorDescription &result =
        description.results[target.getArgNumber() - numArgs];
    // The result must be the one the driver feeds back into this argument.
    if (result.inPlace || result.role != argument.role ||
        result.name != argument.name ||
        (result.role != "param" && result.role != "opt_state"))
      continue;
    if (!usedOnlyOnOneSide(body, source, copy, /*before=*/true) ||
        !usedOnlyOnOneSide(body, target, copy, /*before=*/false))
      continue;
    OpBuilder b(copy);
    Location loc = copy.getLoc();
    Value from = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, source);
    Value to = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, target);
    Value differ =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, from, to);
    auto ifDiffer = scf::IfOp::create(b, loc, differ, /*withElseRegion=*/false);
    copy->moveBefore(ifDiffer.thenBlock()->getTerminator());
    result.inPlace = true;
    ++marked;
  }
  return marked;
}

} // namespace soap::codegen

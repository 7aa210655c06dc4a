//===- CommunicationOverlap.cpp - all-reduces that run behind computation -===//
//
// A gradient all-reduce can run while the rest of the backward pass
// computes, if it starts as soon as its gradient exists and the program
// waits for it only where its result (or its input's buffer) is next
// touched. Two steps:
//
//   on tensors, before communication ops are lowered: each soap.all_reduce
//   moves up to right after the op that computes its operand. It never
//   moves above another communication op but an all-reduce (nor above an
//   op holding one in a region), so sends and receives keep their place
//   between collectives. Every rank runs the same program, so every rank
//   sees the collectives in the same new order, and a program whose
//   collectives each run on all members of their group cannot deadlock in
//   any such order;
//
//   after bufferization: the all-reduce is soaprt_all_reduce_start, and
//   soaprt_wait(handle) goes right before the first op after it, in its
//   block, that touches a buffer either of its buffers may alias (found
//   back to allocations through views, selects and region yields, then
//   forward to every view, select, pointer and region result of those), or
//   before the block's terminator. Deallocations of those buffers move
//   after the wait instead of ending the overlap. When a buffer's origin
//   is not known, the wait follows the start at once.
//
//===----------------------------------------------------------------------===//

#include "LoweringSteps.h"

#include "soap/Dialect/SoapDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace soap::codegen {
namespace {

bool isCommunication(Operation *op) {
  return isa<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp,
             BroadcastOp, SendOp, RecvOp>(op);
}

/// Whether `op` is, or holds in a region, a communication op other than an
/// all-reduce: an all-reduce does not move above it.
bool pinsAllReduces(Operation *op) {
  return op
      ->walk([](Operation *nested) {
        return isCommunication(nested) && !isa<AllReduceOp>(nested)
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

/// Adds to `allocations` the buffers `value` may be, or be a view of:
/// allocations, globals and the function's arguments, found back through
/// views, selects and the yields of scf.if and scf.execute_region. False
/// when some source is not one of those (then nothing can be said).
bool collectAllocations(Value value, llvm::SetVector<Value> &allocations,
                        llvm::DenseSet<Value> &visited) {
  if (!visited.insert(value).second)
    return true;
  if (auto argument = dyn_cast<BlockArgument>(value)) {
    if (!isa<func::FuncOp>(argument.getOwner()->getParentOp()))
      return false;
    allocations.insert(value);
    return true;
  }
  Operation *def = value.getDefiningOp();
  if (isa<memref::AllocOp, memref::AllocaOp, memref::GetGlobalOp>(def)) {
    allocations.insert(value);
    return true;
  }
  if (auto view = dyn_cast<ViewLikeOpInterface>(def))
    return collectAllocations(view.getViewSource(), allocations, visited);
  if (auto select = dyn_cast<arith::SelectOp>(def))
    return collectAllocations(select.getTrueValue(), allocations, visited) &&
           collectAllocations(select.getFalseValue(), allocations, visited);
  if (isa<scf::IfOp, scf::ExecuteRegionOp>(def)) {
    unsigned index = cast<OpResult>(value).getResultNumber();
    for (Region &region : def->getRegions())
      for (Block &block : region)
        if (auto yield = dyn_cast<scf::YieldOp>(block.getTerminator()))
          if (!collectAllocations(yield.getOperand(index), allocations,
                                  visited))
            return false;
    return true;
  }
  return false;
}

/// `roots` and every value that may alias them or point into them: results
/// of ops without memory effects that read them (views, selects, pointers,
/// metadata), and region results and loop arguments they are yielded to,
/// transitively.
llvm::DenseSet<Value> derivedValues(ArrayRef<Value> roots) {
  llvm::DenseSet<Value> derived;
  SmallVector<Value> worklist(roots.begin(), roots.end());
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    if (!derived.insert(value).second)
      continue;
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      // A yield first: it is pure too, but what it yields lives on as its
      // parent's result (a guard's).
      if (isa<scf::YieldOp>(user)) {
        Operation *parent = user->getParentOp();
        unsigned index = use.getOperandNumber();
        if (index < parent->getNumResults())
          worklist.push_back(parent->getResult(index));
        if (auto loop = dyn_cast<scf::ForOp>(parent))
          worklist.push_back(loop.getRegionIterArgs()[index]);
      } else if (isMemoryEffectFree(user) && user->getNumRegions() == 0) {
        for (Value result : user->getResults())
          worklist.push_back(result);
      }
    }
  }
  return derived;
}

/// Whether `op` (or an op nested in it) takes a buffer or a pointer among
/// `values`. Integers computed from addresses (the bookkeeping of
/// ownership-based deallocation) do not count.
bool touches(Operation *op, const llvm::DenseSet<Value> &values) {
  return op
      ->walk([&](Operation *nested) {
        for (Value operand : nested->getOperands())
          if (isa<MemRefType, LLVM::LLVMPointerType>(operand.getType()) &&
              values.contains(operand))
            return WalkResult::interrupt();
        return WalkResult::advance();
      })
      .wasInterrupted();
}

/// A deallocation, or an scf.if that only deallocates (ownership-based
/// deallocation's conditional frees): safe to run later.
bool onlyDeallocates(Operation *op) {
  if (isa<memref::DeallocOp>(op))
    return true;
  if (!isa<scf::IfOp>(op) || op->getNumResults() != 0)
    return false;
  return !op->walk([&](Operation *nested) {
              if (nested == op || isa<memref::DeallocOp, scf::YieldOp>(nested) ||
                  isMemoryEffectFree(nested))
                return WalkResult::advance();
              return WalkResult::interrupt();
            })
              .wasInterrupted();
}

} // namespace

void startAllReducesEarly(ModuleOp module) {
  SmallVector<AllReduceOp> reduces;
  module.walk([&](AllReduceOp op) { reduces.push_back(op); });
  for (AllReduceOp reduce : reduces) {
    Operation *def = reduce.getInput().getDefiningOp();
    // Walk up from the all-reduce to its operand's producer (or the start of
    // the block), stopping below the first op it may not pass.
    Operation *after = reduce->getPrevNode();
    while (after && after != def && !pinsAllReduces(after))
      after = after->getPrevNode();
    if (after == reduce->getPrevNode())
      continue; // already there
    if (after)
      reduce->moveAfter(after);
    else
      reduce->moveBefore(&reduce->getBlock()->front());
  }
}

void waitBeforeFirstUse(OpBuilder &b, Operation *start, Value handle,
                        ValueRange buffers, func::FuncOp wait) {
  llvm::SetVector<Value> allocations;
  llvm::DenseSet<Value> visited;
  bool known = llvm::all_of(buffers, [&](Value buffer) {
    return collectAllocations(buffer, allocations, visited);
  });
  llvm::DenseSet<Value> touched =
      derivedValues(SmallVector<Value>(allocations.begin(), allocations.end()));
  SmallVector<Operation *> deferred;
  // Buffers of unknown origin: wait at once. Otherwise the block's
  // terminator ends the walk.
  Operation *stop = start->getNextNode();
  for (; known && !stop->hasTrait<OpTrait::IsTerminator>();
       stop = stop->getNextNode()) {
    if (!touches(stop, touched) ||
        (isMemoryEffectFree(stop) && stop->getNumRegions() == 0))
      continue;
    if (!onlyDeallocates(stop))
      break;
    deferred.push_back(stop);
  }
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(stop);
  Operation *last = func::CallOp::create(b, start->getLoc(), wait, handle);
  for (Operation *op : deferred) {
    op->moveAfter(last);
    last = op;
  }
}

} // namespace soap::codegen

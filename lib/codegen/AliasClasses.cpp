//===- AliasClasses.cpp - which buffers may be the same memory ----------===//
//
// See AliasClasses.h.
//
//===----------------------------------------------------------------------===//

#include "AliasClasses.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

namespace soap::codegen {

bool isBuffer(Value value) { return isa<BaseMemRefType>(value.getType()); }

AliasClasses::AliasClasses(Operation *root) {
  root->walk([&](Operation *op) { visit(op); });
}

Value AliasClasses::leader(Value value) {
  auto it = parent.find(value);
  if (it == parent.end())
    return value;
  if (it->second == value)
    return value;
  Value root = leader(it->second);
  parent[value] = root;
  return root;
}

bool AliasClasses::isExternal(Value value) {
  return external && leader(value) == leader(external);
}

bool AliasClasses::mayAlias(Value a, Value b) {
  if (a == b || !parent.count(a) || !parent.count(b))
    return true;
  return leader(a) == leader(b);
}

bool AliasClasses::touches(Operation *op, Value buffer) {
  Value target = leader(buffer);
  return op
      ->walk([&](Operation *nested) {
        for (Value value :
             llvm::concat<Value>(nested->getOperands(), nested->getResults()))
          if (isBuffer(value) && leader(value) == target)
            return WalkResult::interrupt();
        return WalkResult::advance();
      })
      .wasInterrupted();
}

void AliasClasses::join(Value a, Value b) {
  parent.try_emplace(a, a);
  parent.try_emplace(b, b);
  Value ra = leader(a), rb = leader(b);
  if (ra != rb)
    parent[ra] = rb;
}

void AliasClasses::markExternal(Value value) {
  if (!external)
    external = value;
  join(value, external);
}

/// A global's buffer (a guard's stand-in on the ranks outside it, a
/// constant), or a cast of one (a stand-in for a strided result): nothing
/// frees it, so a region that yields it in one branch and a new buffer in
/// another need not put the two in one class (which would make the new
/// buffer external, never freed early, and a buffer that may alias every
/// argument).
static bool isGlobal(Value value) {
  while (auto cast = value.getDefiningOp<memref::CastOp>())
    value = cast.getSource();
  return value.getDefiningOp<memref::GetGlobalOp>() != nullptr;
}

void AliasClasses::visit(Operation *op) {
  // Arguments of a function are the caller's; those of other regions
  // (loops) are their parent's operands, results and yields.
  for (Region &region : op->getRegions())
    for (Block &block : region)
      for (BlockArgument argument : block.getArguments()) {
        if (!isBuffer(argument))
          continue;
        if (isa<FunctionOpInterface>(op)) {
          markExternal(argument);
          continue;
        }
        parent.try_emplace(argument, argument);
        for (Value operand : op->getOperands())
          if (isBuffer(operand))
            join(argument, operand);
        for (Value result : op->getResults())
          if (isBuffer(result))
            join(argument, result);
      }
  for (OpResult result : op->getResults()) {
    if (!isBuffer(result))
      continue;
    if (hasEffect<MemoryEffects::Allocate>(op, result)) {
      parent.try_emplace(result, result);
      continue;
    }
    if (op->getNumRegions() > 0) {
      // A region's result is what its terminators yield in its place.
      parent.try_emplace(result, result);
      for (Region &region : op->getRegions())
        for (Block &block : region) {
          Operation *terminator = block.getTerminator();
          if (!terminator)
            continue;
          if (terminator->getNumOperands() == op->getNumResults()) {
            Value yielded = terminator->getOperand(result.getResultNumber());
            if (isBuffer(yielded) && !isGlobal(yielded))
              join(result, yielded);
            continue;
          }
          for (Value yielded : terminator->getOperands())
            if (isBuffer(yielded))
              join(result, yielded);
        }
      for (Value operand : op->getOperands())
        if (isBuffer(operand))
          join(result, operand);
      continue;
    }
    bool fromBuffer = false;
    for (Value operand : op->getOperands())
      if (isBuffer(operand)) {
        join(result, operand);
        fromBuffer = true;
      }
    if (!fromBuffer || isa<CallOpInterface>(op))
      markExternal(result);
  }
}

} // namespace soap::codegen

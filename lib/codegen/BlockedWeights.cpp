//===- BlockedWeights.cpp - convolution weights kept in blocked layout ---===//
//
// oneDNN's convolution kernels read and write weights in a blocked layout
// (OIhw16i16o with AVX-512, OIhw8i8o with AVX2). Weights kept in the
// plain layout are reordered into it by every forward and backward-data
// convolution, and every weight gradient out of it: on small images (the
// deep layers of a ResNet, where a 512x512x3x3 filter is 9 MB and its
// convolution takes about as long as one reorder of it) that is as much
// time as the convolutions themselves.
//
// After bufferization, this finds the buffers that can hold blocked weights
// instead: groups of buffers that only these touch
//   - a convolution call (replaceKernelsByCalls) that reads the buffer as
//     its filter [O][I][KH][KW], directly or through the autodiff's flipped
//     copy (which the call reads through), or writes it as a weight
//     gradient: the anchors;
//   - elementwise generics (identity maps over buffers of the same shape,
//     scalars aside; no index): the optimizer's update, a gradient's
//     accumulation. Their other buffers join the group: whatever layout
//     the group has, these compute the same elements;
//   - fills, whole copies to or from buffers of the group, deallocations,
//     all-reduces (still placeholders, lowerCommunicationOps) from and
//     into buffers of the group: every rank keeps the same layout, and
//     the reduction is elementwise across ranks.
// A group qualifies when it has an anchor, all its buffers have one shape
// [O][I][KH][KW] with O and I multiples of the block, nothing else uses
// them, its entry arguments are parameters or optimizer state, and each of
// those arguments' counterparts (the result that replaces it each step, and
// back) qualifies too. Its calls then pass the block (the runtime reads and
// writes the blocked layout in place, runtime/BlockedLayout.h) and its
// entry arguments are described with it, so that the driver converts
// initial values and checkpoints. Anything else, a read through a view, a
// collective other than an all-reduce, a grouped convolution, leaves the
// group plain.
//
//===----------------------------------------------------------------------===//

#include "LoweringSteps.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/EquivalenceClasses.h"

using namespace mlir;

namespace soap::codegen {

namespace {

/// Whether buffer dimensions {d(F), d(C), d(KH), d(KW)} (where an
/// operand's filter roles are) are those of weights [O][I][KH][KW], F and
/// C in either order.
bool weightsView(std::array<std::optional<unsigned>, 4> dims) {
  for (const std::optional<unsigned> &d : dims)
    if (!d)
      return false;
  bool channels =
      (*dims[0] == 0 && *dims[1] == 1) || (*dims[0] == 1 && *dims[1] == 0);
  return channels && *dims[2] == 2 && *dims[3] == 3;
}

/// Whether `call` reads buffer `filter` as weights: the filter operand, or
/// the source of the flipped copy the call reads through.
bool readsAsWeights(const ConvolutionCall &call) {
  const Conv2dRoles &r = call.roles;
  if (r.group)
    return false;
  if (!call.relaidCopy)
    return weightsView({r.filter[1], r.filter[2], r.filter[3], r.filter[4]});
  // Source dimension p holds the copy's dimension reads[p].loop.
  std::array<std::optional<unsigned>, 4> dims;
  for (auto [p, read] : llvm::enumerate(call.relaidReads))
    for (unsigned role = 1; role <= 4; ++role)
      if (r.filter[role] && *r.filter[role] == read.loop)
        dims[role - 1] = p;
  return weightsView(dims);
}

/// Whether `call` writes its output as weights (a weight gradient
/// [O][I][KH][KW] in the autodiff's form conv(x^T, dy^T): the output's
/// channels are O, its batch I, its image the window).
bool writesAsWeights(const ConvolutionCall &call) {
  const Conv2dRoles &r = call.roles;
  return !r.group && !call.writesView &&
         weightsView({r.output[2], r.output[0], r.output[3], r.output[4]});
}

/// Whether `generic` computes each element from the same element of its
/// other buffers of `type` (identity maps; scalars, read through maps
/// with no results, aside) and nothing else.
bool elementwise(linalg::GenericOp generic, MemRefType type) {
  if (generic.getNumReductionLoops() != 0 ||
      !generic.getBody()->getOps<linalg::IndexOp>().empty())
    return false;
  for (OpOperand &operand : generic->getOpOperands()) {
    AffineMap map = generic.getMatchingIndexingMap(&operand);
    if (map.getNumResults() == 0)
      continue;
    if (!map.isIdentity() || operand.get().getType() != type)
      return false;
  }
  return true;
}

/// Whether `call` is an all-reduce's placeholder (lowerCommunicationOps):
/// its buffers, input and result, are reduced elementwise across ranks.
bool allReduce(func::CallOp call) {
  auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
      call, call.getCalleeAttr());
  auto name =
      callee ? callee->getAttrOfType<StringAttr>(kCommCallAttr) : StringAttr();
  return name && name.getValue() == "soaprt_all_reduce";
}

} // namespace

BlockedWeights findBlockedWeights(func::FuncOp entry,
                                  ArrayRef<ConvolutionCall> calls,
                                  int64_t block) {
  BlockedWeights result;
  if (block <= 0 || calls.empty() || entry.isExternal())
    return result;
  Block &body = entry.getBody().front();
  auto candidate = [&](Value v) {
    auto type = dyn_cast<MemRefType>(v.getType());
    if (!type || type.getRank() != 4 || !type.hasStaticShape() ||
        !type.getLayout().isIdentity() || !type.getElementType().isF32())
      return false;
    if (auto arg = dyn_cast<BlockArgument>(v))
      return arg.getOwner() == &body;
    // A device guard's result: what its devices yield (a weight gradient
    // that another guard on them updates).
    return v.getDefiningOp<memref::AllocOp>() != nullptr ||
           v.getDefiningOp<scf::IfOp>() != nullptr;
  };
  llvm::DenseMap<Operation *, const ConvolutionCall *> callOf, copyOf;
  for (const ConvolutionCall &call : calls) {
    callOf[call.op] = &call;
    if (call.relaidCopy)
      copyOf[call.relaidCopy] = &call;
  }

  // The buffers, grouped; what spoils a group and what anchors it.
  SmallVector<Value> roots;
  for (BlockArgument arg : body.getArguments())
    if (candidate(arg))
      roots.push_back(arg);
  entry.walk([&](Operation *op) {
    if (isa<memref::AllocOp, scf::IfOp>(op))
      for (Value result : op->getResults())
        if (candidate(result))
          roots.push_back(result);
  });
  llvm::EquivalenceClasses<Value> groups;
  llvm::DenseSet<Value> spoilt, anchored;
  for (Value root : roots) {
    groups.insert(root);
    auto type = cast<MemRefType>(root.getType());
    // Joins `root`'s group with every operand of its type; false (nothing
    // joined) when one of them cannot be grouped (a view).
    auto joinAll = [&](ValueRange operands) {
      for (Value operand : operands)
        if (operand.getType() == type && !candidate(operand))
          return false;
      for (Value operand : operands)
        if (operand.getType() == type)
          groups.unionSets(root, operand);
      return true;
    };
    for (OpOperand &use : root.getUses()) {
      Operation *user = use.getOwner();
      if (isa<memref::DeallocOp>(user))
        continue;
      if (auto fill = dyn_cast<linalg::FillOp>(user);
          fill && use.get() == fill.getDpsInits().front())
        continue;
      if (auto copy = dyn_cast<memref::CopyOp>(user)) {
        Value other =
            use.getOperandNumber() == 0 ? copy.getTarget() : copy.getSource();
        if (candidate(other) && other.getType() == type) {
          groups.unionSets(root, other);
          continue;
        }
      } else if (const ConvolutionCall *call = callOf.lookup(user)) {
        auto op = cast<linalg::LinalgOp>(user);
        if (&use == op.getDpsInitOperand(0) && writesAsWeights(*call)) {
          anchored.insert(root);
          continue;
        }
        // The flipped copy's buffer goes with the copy.
        if (&use == op.getDpsInputOperand(1) && call->relaidCopy)
          continue;
        if (&use == op.getDpsInputOperand(1) && readsAsWeights(*call)) {
          anchored.insert(root);
          continue;
        }
      } else if (const ConvolutionCall *call = copyOf.lookup(user)) {
        if (use.get() != call->relaidCopy->getOperand(0))
          continue; // the copy's own buffer, which goes with it
        if (readsAsWeights(*call)) {
          anchored.insert(root);
          continue;
        }
      } else if (auto yield = dyn_cast<scf::YieldOp>(user);
                 yield && isa<scf::IfOp>(yield->getParentOp())) {
        // A guard's result is the buffer its devices yield; the other
        // ranks yield a stand-in (a global, or a cast of one) that nothing
        // reads, which stays out of the group.
        groups.unionSets(
            root, yield->getParentOp()->getResult(use.getOperandNumber()));
        continue;
      } else if (auto call = dyn_cast<func::CallOp>(user);
                 call && allReduce(call)) {
        // Its input and result have one type.
        if (joinAll(call.getOperands()))
          continue;
      } else if (auto generic = dyn_cast<linalg::GenericOp>(user);
                 generic && elementwise(generic, type)) {
        if (joinAll(generic->getOperands()))
          continue;
      }
      spoilt.insert(root);
    }
  }

  // Entry arguments: state only, by role and name (an argument and the
  // result that replaces it each step share both).
  auto stringAttr = [&](unsigned i, StringRef name) {
    auto attr = entry.getArgAttrOfType<StringAttr>(i, name);
    return attr ? attr.getValue() : StringRef();
  };
  // Each group's verdict, by its leader (a group's buffers have one type);
  // then groups whose entry arguments' counterparts are plain turn plain
  // too, until none does.
  llvm::DenseMap<Value, bool> blocked;
  for (Value root : roots) {
    Value leader = groups.getLeaderValue(root);
    auto [it, inserted] = blocked.try_emplace(leader, true);
    bool &ok = it->second;
    auto dims = cast<MemRefType>(root.getType()).getShape();
    ok = ok && !spoilt.contains(root) && dims[0] % block == 0 &&
         dims[1] % block == 0;
    if (auto arg = dyn_cast<BlockArgument>(root)) {
      StringRef role = stringAttr(arg.getArgNumber(), "soap.role");
      ok = ok && (role == "param" || role == "opt_state");
    }
  }
  for (auto &[leader, ok] : blocked)
    if (ok)
      ok = llvm::any_of(groups.members(leader),
                        [&](Value v) { return anchored.contains(v); });
  llvm::DenseMap<std::pair<StringRef, StringRef>, SmallVector<BlockArgument>>
      byRoleAndName;
  for (BlockArgument arg : body.getArguments())
    byRoleAndName[{stringAttr(arg.getArgNumber(), "soap.role"),
                   stringAttr(arg.getArgNumber(), "soap.name")}]
        .push_back(arg);
  for (bool changed = true; changed;) {
    changed = false;
    for (auto &[key, args] : byRoleAndName)
      for (BlockArgument arg : args) {
        if (!candidate(arg) || !blocked.lookup(groups.getLeaderValue(arg)))
          continue;
        bool counterpartsBlocked = llvm::all_of(args, [&](BlockArgument other) {
          return other == arg ||
                 (candidate(other) && other.getType() == arg.getType() &&
                  blocked.lookup(groups.getLeaderValue(other)));
        });
        if (!counterpartsBlocked) {
          blocked[groups.getLeaderValue(arg)] = false;
          changed = true;
        }
      }
  }

  auto isBlocked = [&](Value v) {
    return candidate(v) && groups.contains(v) &&
           blocked.lookup(groups.getLeaderValue(v));
  };
  for (const ConvolutionCall &call : calls) {
    auto op = cast<linalg::LinalgOp>(call.op);
    Value filter = call.relaidCopy ? call.relaidCopy->getOperand(0)
                                   : op.getDpsInputOperand(1)->get();
    std::pair<int64_t, int64_t> blocks = {0, 0};
    if (isBlocked(filter) && readsAsWeights(call))
      blocks.first = block;
    if (isBlocked(op.getDpsInitOperand(0)->get()) && writesAsWeights(call))
      blocks.second = block;
    if (blocks.first || blocks.second)
      result.calls[call.op] = blocks;
  }
  for (BlockArgument arg : body.getArguments())
    if (isBlocked(arg))
      result.arguments.push_back(arg.getArgNumber());
  return result;
}

} // namespace soap::codegen

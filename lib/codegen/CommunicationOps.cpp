//===- CommunicationOps.cpp - SOAP ops to libsoaprt communication calls --===//
//
// Two steps around one-shot bufferization:
//
//   before: soap.on_devices becomes an scf.if on the rank (results are
//   views of uninitialized globals elsewhere, or empty tensors on the GPU);
//   soap.rank becomes soaprt_rank(); every
//   communication op on tensors becomes
//       %in  = bufferization.to_buffer %x read_only   (a dense buffer)
//       %out = memref.alloc()                          (a new buffer)
//       func.call @soap_comm_N(%in, %out)              (a placeholder)
//       %r   = bufferization.to_tensor %out restrict writable
//   so that bufferization sees an op that reads its input and defines a
//   fresh result (never aliasing the input), and deallocation keeps both
//   buffers alive across the call;
//
//   after bufferization and deallocation: an all-reduce whose input buffer
//   dies at the call reduces in place (reduceInPlaceWhereInputsDie), then
//   each placeholder call becomes the
//   soaprt_* call its declaration describes, with the buffers as pointers,
//   sizes as i64 constants and device lists as pointers to constant
//   globals.
//
//===----------------------------------------------------------------------===//

#include "AliasClasses.h"
#include "LoweringSteps.h"

#include "soap/Dialect/SoapDialect.h"
#include "soap/Runtime/Runtime.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/Pass.h"

#include "llvm/ADT/DenseSet.h"

#include <map>
#include <set>
#include <tuple>

using namespace mlir;

namespace soap::codegen {
namespace {

/// On a placeholder declaration: the runtime function to call, and its
/// arguments in order: "in"/"out" (the call's buffer operands, in order),
/// an i64 constant, or a device list (a pointer to a constant array).
constexpr const char *kCallAttr = kCommCallAttr;
constexpr const char *kArgsAttr = "soap_comm_args";
constexpr const char *kBufferArg = "buffer";

func::FuncOp declare(ModuleOp module, StringRef name, TypeRange inputs,
                     TypeRange results) {
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  OpBuilder b(module.getContext());
  b.setInsertionPointToStart(module.getBody());
  auto func = func::FuncOp::create(b, module.getLoc(), name,
                                   b.getFunctionType(inputs, results));
  func.setPrivate();
  return func;
}

Value rankIndex(OpBuilder &b, Location loc, ModuleOp module) {
  func::FuncOp callee = declare(module, "soaprt_rank", {}, {b.getI64Type()});
  // One call per function, at its start: guards on the same devices then
  // test one value (CSE merges their conditions), which lets a buffer a
  // guard made be freed inside a later guard of the same devices
  // (Deallocations.cpp, sinkFreesIntoGuards).
  OpBuilder::InsertionGuard guard(b);
  if (auto function =
          b.getInsertionBlock()->getParent()->getParentOfType<func::FuncOp>()) {
    Block &entry = function.getBody().front();
    if (entry.getOperations().size() >= 2) {
      auto call = dyn_cast<func::CallOp>(&entry.front());
      auto cast = dyn_cast<arith::IndexCastOp>(entry.front().getNextNode());
      if (call && cast && call.getCallee() == callee.getSymName() &&
          cast.getIn() == call.getResult(0))
        return cast;
    }
    b.setInsertionPointToStart(&entry);
  }
  Value rank = func::CallOp::create(b, loc, callee, ValueRange{}).getResult(0);
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), rank);
}

/// The runtime's code for an element type, or -1.
int64_t dtypeCode(Type element) {
  if (element.isF32())
    return SOAPRT_F32;
  if (element.isF64())
    return SOAPRT_F64;
  if (element.isInteger(32))
    return SOAPRT_I32;
  if (element.isInteger(64) || element.isIndex())
    return SOAPRT_I64;
  if (element.isInteger(8))
    return SOAPRT_I8;
  if (element.isInteger(1))
    return SOAPRT_I1;
  return -1;
}

int64_t product(ArrayRef<int64_t> sizes) {
  int64_t p = 1;
  for (int64_t s : sizes)
    p *= s;
  return p;
}

/// A stand-in for a tensor of `type` that this rank does not compute: a
/// view of an uninitialized global of its own (the `number`-th), so nothing
/// is allocated for it and no page of it is touched unless an op outside
/// the guard writes into it. Its values are never used: ops that read it
/// run on every rank, and only the ranks of the guard keep what they make
/// of it. Writable, as the empty tensor it replaces, so that ops that
/// accumulate into a guard's result (a weight gradient summed over time
/// steps, one guard per step) update it in place instead of copying it.
Value absentTensor(OpBuilder &b, Location loc, RankedTensorType type,
                   ModuleOp module, unsigned number) {
  auto memrefType = MemRefType::get(type.getShape(), type.getElementType());
  std::string name = "soap_absent_" + std::to_string(number);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    memref::GlobalOp::create(b, loc, name, b.getStringAttr("private"),
                             memrefType, b.getUnitAttr(), /*constant=*/false,
                             /*alignment=*/b.getI64IntegerAttr(64));
  }
  Value buffer = memref::GetGlobalOp::create(b, loc, memrefType, name);
  return bufferization::ToTensorOp::create(b, loc, type, buffer,
                                           /*restrict=*/true,
                                           /*writable=*/true);
}

/// soap.on_devices [d...] { body } -> scf.if (rank == d0 || ...) { body }
/// else { stand-ins / poison }: on the CPU (`hostBuffers`) a tensor result
/// is a global's view there (absentTensor), so a rank
/// allocates only what it computes; on the GPU an empty tensor.
LogicalResult lowerOnDevices(OnDevicesOp op, ModuleOp module, bool hostBuffers,
                             unsigned &absentCount) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  for (Type type : op.getResultTypes())
    if (auto tensor = dyn_cast<RankedTensorType>(type);
        tensor && !tensor.hasStaticShape())
      return op.emitError() << "result of type " << type
                            << " needs a static shape for the CPU lowering";
  Value rank = rankIndex(b, loc, module);
  Value condition;
  for (int64_t device : op.getDevices()) {
    Value equal = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq, rank,
        arith::ConstantIndexOp::create(b, loc, device));
    condition = condition ? arith::OrIOp::create(b, loc, condition, equal)
                                .getResult()
                          : equal;
  }
  auto ifOp = scf::IfOp::create(b, loc, op.getResultTypes(), condition,
                                /*withElseRegion=*/true);
  Block *thenBlock = ifOp.thenBlock();
  Block *elseBlock = ifOp.elseBlock();
  for (Block *block : {thenBlock, elseBlock})
    while (!block->empty())
      block->back().erase();
  Block &body = op.getBody().front();
  thenBlock->getOperations().splice(thenBlock->end(), body.getOperations());
  auto yield = cast<YieldOp>(thenBlock->getTerminator());
  b.setInsertionPoint(yield);
  scf::YieldOp::create(b, yield.getLoc(), yield.getValues());
  yield.erase();

  b.setInsertionPointToEnd(elseBlock);
  SmallVector<Value> undefined;
  for (Type type : op.getResultTypes()) {
    if (auto tensor = dyn_cast<RankedTensorType>(type))
      undefined.push_back(
          hostBuffers ? absentTensor(b, loc, tensor, module, absentCount++)
                      : tensor::EmptyOp::create(b, loc, tensor.getShape(),
                                                tensor.getElementType()));
    else
      undefined.push_back(ub::PoisonOp::create(b, loc, type));
  }
  scf::YieldOp::create(b, loc, undefined);
  op.replaceAllUsesWith(ifOp.getResults());
  op.erase();
  return success();
}

/// Builds the placeholder: a dense read-only buffer of `input` (if any), a
/// new buffer for `resultType` (if any), the call, and the result tensor.
void buildPlaceholder(Operation *op, ModuleOp module, StringRef runtimeCall,
                      ArrayRef<Attribute> args, Value input,
                      RankedTensorType resultType, unsigned &counter) {
  OpBuilder b(op);
  Location loc = op->getLoc();
  SmallVector<Value> buffers;
  if (input) {
    auto type = cast<RankedTensorType>(input.getType());
    auto memref = MemRefType::get(type.getShape(), type.getElementType());
    buffers.push_back(bufferization::ToBufferOp::create(
        b, loc, memref, input, /*readOnly=*/true));
  }
  Value out;
  if (resultType) {
    auto memref =
        MemRefType::get(resultType.getShape(), resultType.getElementType());
    out = memref::AllocOp::create(b, loc, memref, b.getI64IntegerAttr(64));
    buffers.push_back(out);
  }
  std::string name;
  do
    name = "soap_comm_" + std::to_string(counter++);
  while (module.lookupSymbol(name));
  func::FuncOp placeholder =
      declare(module, name, ValueRange(buffers).getTypes(), {});
  placeholder->setAttr(kCallAttr, b.getStringAttr(runtimeCall));
  placeholder->setAttr(kArgsAttr, b.getArrayAttr(args));
  func::CallOp::create(b, loc, placeholder, buffers);
  if (resultType) {
    Value result = bufferization::ToTensorOp::create(
        b, loc, resultType, out, /*restrict=*/true, /*writable=*/true);
    op->getResult(0).replaceAllUsesWith(result);
  }
  op->erase();
}

LogicalResult lowerCommunication(Operation *op, ModuleOp module,
                                 unsigned &counter) {
  Builder b(op->getContext());
  auto i64 = [&](int64_t v) -> Attribute { return b.getI64IntegerAttr(v); };
  Attribute buffer = b.getStringAttr(kBufferArg);
  auto list = [&](ArrayRef<int64_t> devices) -> Attribute {
    return b.getDenseI64ArrayAttr(devices);
  };
  RankedTensorType type =
      op->getNumResults() ? cast<RankedTensorType>(op->getResult(0).getType())
                          : cast<RankedTensorType>(op->getOperand(0).getType());
  for (Type t : llvm::concat<Type>(op->getOperandTypes(),
                                   op->getResultTypes()))
    if (!cast<RankedTensorType>(t).hasStaticShape())
      return op->emitError() << "operand or result of type " << t
                             << " needs a static shape for the CPU lowering";
  int64_t dtype = dtypeCode(type.getElementType());
  if (dtype < 0)
    return op->emitError() << "element type " << type.getElementType()
                           << " is not one the MPI backend handles (f32, "
                              "f64, i1, i8, i32, i64, index)";
  std::optional<ReductionKind> kind;
  if (auto reduce = dyn_cast<AllReduceOp>(op))
    kind = reduce.getKind();
  else if (auto scatter = dyn_cast<ReduceScatterOp>(op))
    kind = scatter.getKind();
  if (dtype == SOAPRT_I1 && kind == ReductionKind::mean)
    return op->emitError() << "a mean of i1 values has no i1 result";

  if (auto reduce = dyn_cast<AllReduceOp>(op)) {
    ArrayRef<int64_t> group = reduce.getGroup();
    buildPlaceholder(op, module, "soaprt_all_reduce",
                     {buffer, buffer, i64(type.getNumElements()), i64(dtype),
                      i64(static_cast<int64_t>(reduce.getKind())),
                      list(group), i64(group.size())},
                     reduce.getInput(), type, counter);
  } else if (auto gather = dyn_cast<AllGatherOp>(op)) {
    auto input = cast<RankedTensorType>(gather.getInput().getType());
    int64_t dim = gather.getDim();
    ArrayRef<int64_t> group = gather.getGroup();
    buildPlaceholder(op, module, "soaprt_all_gather",
                     {buffer, buffer, i64(product(input.getShape().take_front(dim))),
                      i64(product(input.getShape().drop_front(dim))),
                      i64(dtype), list(group), i64(group.size())},
                     gather.getInput(), type, counter);
  } else if (auto scatter = dyn_cast<ReduceScatterOp>(op)) {
    int64_t dim = scatter.getDim();
    ArrayRef<int64_t> group = scatter.getGroup();
    buildPlaceholder(op, module, "soaprt_reduce_scatter",
                     {buffer, buffer, i64(product(type.getShape().take_front(dim))),
                      i64(product(type.getShape().drop_front(dim))),
                      i64(dtype), i64(static_cast<int64_t>(scatter.getKind())),
                      list(group), i64(group.size())},
                     scatter.getInput(), type, counter);
  } else if (auto a2a = dyn_cast<AllToAllOp>(op)) {
    auto input = cast<RankedTensorType>(a2a.getInput().getType());
    ArrayRef<int64_t> group = a2a.getGroup();
    int64_t n = group.size();
    int64_t split = a2a.getSplitDim(), concat = a2a.getConcatDim();
    // Each block: the input with its split dimension divided by n.
    SmallVector<int64_t> part(input.getShape());
    part[split] /= n;
    int64_t splitOuter = product(input.getShape().take_front(split));
    int64_t splitChunk = product(input.getShape().drop_front(split)) / n;
    int64_t concatOuter = product(ArrayRef<int64_t>(part).take_front(concat));
    int64_t concatChunk = product(ArrayRef<int64_t>(part).drop_front(concat));
    buildPlaceholder(op, module, "soaprt_all_to_all",
                     {buffer, buffer, i64(splitOuter), i64(splitChunk),
                      i64(concatOuter), i64(concatChunk), i64(dtype),
                      list(group), i64(n)},
                     a2a.getInput(), type, counter);
  } else if (auto bcast = dyn_cast<BroadcastOp>(op)) {
    ArrayRef<int64_t> group = bcast.getGroup();
    if (!llvm::is_contained(group, bcast.getRoot()))
      return op->emitError() << "root " << bcast.getRoot()
                             << " is not in the group";
    buildPlaceholder(op, module, "soaprt_broadcast",
                     {buffer, buffer, i64(type.getNumElements()), i64(dtype),
                      i64(bcast.getRoot()), list(group), i64(group.size())},
                     bcast.getInput(), type, counter);
  } else if (auto send = dyn_cast<SendOp>(op)) {
    if (send.getFrom().size() != send.getTo().size())
      return op->emitError() << "'from' and 'to' must pair up";
    buildPlaceholder(op, module, "soaprt_send",
                     {buffer, i64(type.getNumElements()), i64(dtype),
                      list(send.getFrom()), list(send.getTo()),
                      i64(send.getFrom().size()), i64(send.getTag())},
                     send.getInput(), RankedTensorType(), counter);
  } else if (auto recv = dyn_cast<RecvOp>(op)) {
    if (recv.getFrom().size() != recv.getTo().size())
      return op->emitError() << "'from' and 'to' must pair up";
    buildPlaceholder(op, module, "soaprt_recv",
                     {buffer, i64(type.getNumElements()), i64(dtype),
                      list(recv.getFrom()), list(recv.getTo()),
                      i64(recv.getFrom().size()), i64(recv.getTag())},
                     Value(), type, counter);
  }
  return success();
}


/// A constant global holding `devices`, shared by equal lists.
memref::GlobalOp deviceListGlobal(ModuleOp module, ArrayRef<int64_t> devices) {
  std::string name = "soap_devices";
  for (int64_t d : devices)
    name += "_" + std::to_string(d);
  if (auto existing = module.lookupSymbol<memref::GlobalOp>(name))
    return existing;
  OpBuilder b(module.getContext());
  b.setInsertionPointToStart(module.getBody());
  auto type = MemRefType::get({static_cast<int64_t>(devices.size())},
                              b.getI64Type());
  auto values = DenseElementsAttr::get(
      RankedTensorType::get(type.getShape(), b.getI64Type()), devices);
  auto global = memref::GlobalOp::create(
      b, module.getLoc(), name, b.getStringAttr("private"), type, values,
      /*constant=*/true, /*alignment=*/nullptr);
  global->setAttr(kHostOnlyAttr, b.getUnitAttr());
  return global;
}

} // namespace

int64_t elementBytes(ShapedType type) {
  return llvm::divideCeil(type.getElementTypeBitWidth(), 8);
}

Value pointerTo(OpBuilder &b, Location loc, Value memref) {
  auto type = cast<MemRefType>(memref.getType());
  auto metadata = memref::ExtractStridedMetadataOp::create(b, loc, memref);
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
  Value offsetBytes = arith::MulIOp::create(
      b, loc, metadata.getOffset(),
      arith::ConstantIndexOp::create(b, loc, elementBytes(type)));
  Value address = arith::AddIOp::create(b, loc, base, offsetBytes);
  Value asInt = arith::IndexCastOp::create(b, loc, b.getI64Type(), address);
  return LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext()), asInt);
}

/// Pairs every soap.send with its soap.recv where no loop is around them:
/// on each (source, target, tag) the n-th send meets the n-th receive
/// (MPI's order), so their types must be equal (a send of i64 received as
/// f32 of the same size would reinterpret its bits, a shorter receive
/// truncates), and a send or receive without its partner would wait
/// forever.
static LogicalResult checkSendRecvPairs(ModuleOp module) {
  using Key = std::tuple<int64_t, int64_t, int64_t>;
  std::map<Key, SmallVector<Operation *>> sends, recvs;
  module.walk([&](Operation *op) {
    if (auto send = dyn_cast<SendOp>(op))
      for (auto [from, to] : llvm::zip(send.getFrom(), send.getTo()))
        sends[{from, to, send.getTag()}].push_back(op);
    else if (auto recv = dyn_cast<RecvOp>(op))
      for (auto [from, to] : llvm::zip(recv.getFrom(), recv.getTo()))
        recvs[{from, to, recv.getTag()}].push_back(op);
  });
  auto typeOf = [](Operation *op) {
    if (auto send = dyn_cast<SendOp>(op))
      return send.getInput().getType();
    return cast<RecvOp>(op).getResult().getType();
  };
  auto inLoop = [](Operation *op) {
    return op->getParentOfType<LoopLikeOpInterface>() != nullptr;
  };
  std::set<Key> keys;
  for (auto &entry : sends)
    keys.insert(entry.first);
  for (auto &entry : recvs)
    keys.insert(entry.first);
  for (const Key &key : keys) {
    auto [from, to, tag] = key;
    SmallVector<Operation *> &s = sends[key], &r = recvs[key];
    // Around a loop, which receive meets which send depends on trip
    // counts: that is left to the runtime (and its --timeout).
    if (llvm::any_of(s, inLoop) || llvm::any_of(r, inLoop))
      continue;
    for (size_t i = 0; i < std::min(s.size(), r.size()); ++i)
      if (typeOf(s[i]) != typeOf(r[i])) {
        InFlightDiagnostic diag = r[i]->emitError()
                                  << "receives " << typeOf(r[i]) << " from "
                                  << from << " on " << to << " (tag " << tag
                                  << ") but the soap.send it pairs with sends "
                                  << typeOf(s[i]);
        diag.attachNote(s[i]->getLoc()) << "the soap.send";
        return diag;
      }
    if (s.size() == r.size())
      continue;
    bool moreSends = s.size() > r.size();
    Operation *extra = moreSends ? s[r.size()] : r[s.size()];
    return extra->emitError()
           << (moreSends ? "a soap.send from " : "a soap.recv from ") << from
           << " to " << to << " (tag " << tag << ") has no matching "
           << (moreSends ? "soap.recv" : "soap.send") << " (" << s.size()
           << " send(s), " << r.size()
           << " receive(s) on that pair): the program would wait forever";
  }
  return success();
}

/// Whether a permuting copy of `value` folds into the op that made it
/// (foldTransposesIntoContractions, foldTransposesIntoConvolutions,
/// foldTransposesIntoSums): a contraction or a convolution, a sum of one's
/// result (which foldSumsIntoContractions makes one product), or any sum
/// into a fill of an empty tensor (as owt's sum of a weight gradient's
/// parts over the batch after an all_to_all), through reshapes.
static bool madeByProduct(Value value) {
  Operation *op = value.getDefiningOp();
  while (isa_and_nonnull<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(op))
    op = op->getOperand(0).getDefiningOp();
  auto isProduct = [](Operation *op) {
    auto linalgOp = dyn_cast_or_null<linalg::LinalgOp>(op);
    return linalgOp && (linalg::isaContractionOpInterface(linalgOp) ||
                        linalg::isaConvolutionOpInterface(linalgOp));
  };
  if (isProduct(op))
    return true;
  auto sum = dyn_cast_or_null<linalg::LinalgOp>(op);
  if (!sum || sum.getNumReductionLoops() == 0)
    return false;
  if (llvm::any_of(sum.getDpsInputs(), [&](Value input) {
        return isProduct(input.getDefiningOp());
      }))
    return true;
  return isa<linalg::GenericOp>(op) && sumIntoFill(sum);
}

/// What alone reads an all-reduce's result and only moves its elements
/// runs before the all-reduce instead (an elementwise reduction commutes
/// with a move), next to the op that made the input: a reshape, a sum over
/// unit dimensions (dropUnitDimensionSum: a reshape), and a permuting copy
/// (permutingCopy) as a linalg.transpose where it folds into that op
/// (madeByProduct: also a sum into zeros, as owt's over the batch after an
/// all_to_all; elsewhere it stays to be fused into the update, which reads
/// it in tiles, TransposeTiles.cpp). A weight gradient that the
/// autodiff writes transposed (a convolution's conv(x^T, dy^T)^T, a linear
/// layer's (x^T dy)^T, torch-mlir's batched product summed over the unit
/// batch dimension of a broadcast weight, then transposed) then writes the
/// copy's layout itself (foldTransposesIntoConvolutions,
/// foldTransposesIntoContractions and foldTransposesIntoSums), and its
/// all-reduced gradient is the plain weights' layout, which blocked weights can
/// keep (findBlockedWeights) and the optimizer's update reads in order, instead
/// of reading it through the permutation.
static void movesBeforeAllReduces(ModuleOp module) {
  SmallVector<AllReduceOp> work;
  module.walk([&](AllReduceOp reduce) { work.push_back(reduce); });
  IRRewriter rewriter(module.getContext());
  while (!work.empty()) {
    AllReduceOp reduce = work.pop_back_val();
    if (!reduce->hasOneUse())
      continue;
    Operation *user = *reduce->getUsers().begin();
    if (auto generic = dyn_cast<linalg::GenericOp>(user))
      if (Value collapsed = dropUnitDimensionSum(generic, rewriter))
        user = collapsed.getDefiningOp();
    if (!user || user->getNumResults() != 1)
      continue;
    // Where the all-reduce was (overlap-comm starts it early).
    OpBuilder b(reduce);
    Location loc = user->getLoc();
    Value input = reduce.getInput(), moved;
    auto type = dyn_cast<RankedTensorType>(user->getResult(0).getType());
    if (!type || !type.hasStaticShape())
      continue;
    if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(user)) {
      // Undoes the expand_shape that made the input, where it did (the
      // autodiff's unit batch dimension of a weight gradient): the
      // product then meets what reads it.
      auto expand = input.getDefiningOp<tensor::ExpandShapeOp>();
      if (expand && expand.getSrc().getType() == type &&
          expand.getReassociationIndices() ==
              collapse.getReassociationIndices())
        moved = expand.getSrc();
      else
        moved = tensor::CollapseShapeOp::create(
            b, loc, type, input, collapse.getReassociationIndices());
    } else if (auto expand = dyn_cast<tensor::ExpandShapeOp>(user)) {
      moved = tensor::ExpandShapeOp::create(b, loc, type, input,
                                            expand.getReassociationIndices());
    } else if (std::optional<SmallVector<int64_t>> perm =
                   permutingCopy(user, reduce.getResult());
               perm && madeByProduct(input)) {
      Value init = tensor::EmptyOp::create(b, loc, type.getShape(),
                                           type.getElementType());
      moved =
          linalg::TransposeOp::create(b, loc, input, init, *perm)->getResult(0);
    } else {
      continue;
    }
    auto reduced =
        AllReduceOp::create(b, reduce.getLoc(), moved.getType(),
                            reduce.getKindAttr(), moved, reduce.getGroupAttr());
    user->getResult(0).replaceAllUsesWith(reduced.getResult());
    user->erase();
    reduce.erase();
    work.push_back(reduced);
  }
}

Operation *walkUpToMove(Operation *op,
                        function_ref<bool(Operation *at, bool makes)> passes,
                        SmallVectorImpl<Operation *> &makers) {
  llvm::SmallDenseSet<Value> needed(op->getOperands().begin(),
                                    op->getOperands().end());
  Operation *at = op->getPrevNode();
  for (; at; at = at->getPrevNode()) {
    bool makes = llvm::any_of(at->getResults(),
                              [&](Value v) { return needed.contains(v); });
    if (!passes(at, makes))
      break;
    if (!makes)
      continue;
    if (at->getNumRegions() != 0 || !isMemoryEffectFree(at))
      break;
    makers.push_back(at);
    needed.insert(at->getOperands().begin(), at->getOperands().end());
  }
  return at;
}

void moveUpAfter(Operation *op, ArrayRef<Operation *> makers,
                 Operation *after) {
  Block *block = op->getBlock();
  auto place = [&](Operation *moved) {
    if (after)
      moved->moveAfter(after);
    else
      moved->moveBefore(block, block->begin());
    after = moved;
  };
  for (Operation *maker : llvm::reverse(makers))
    place(maker);
  place(op);
}

/// On the CPU, each soap.send outside loops moves up to right after the op
/// that makes what it sends (with the ops without memory effects or
/// regions that make it from earlier values: a slice, a rank-table
/// lookup), not past a send with its tag (the n-th send of a tag meets the
/// n-th receive). libsoaprt's send copies the message and posts it without
/// waiting, so an earlier send costs the sender nothing, and the receiver,
/// which still receives where it did, no longer waits for the sender's
/// work between the two points. A layer pipeline's backward pass needed
/// that: the partitioner places each transfer before the op that reads it,
/// so the stage that holds the decoder's input gradients sent each time
/// step's block only after its own backward work of the step before, and
/// the stages took turns (the zoo rnnlm's searched strategy on 2 ranks ran
/// 6.5 ms a step where the simulator, which sends a block once it exists,
/// found 3.7 ms).
void sendEarly(ModuleOp module) {
  SmallVector<SendOp> sends;
  module.walk([&](SendOp send) {
    if (!send->getParentOfType<LoopLikeOpInterface>())
      sends.push_back(send);
  });
  for (SendOp send : sends) {
    SmallVector<Operation *> makers;
    Operation *after = walkUpToMove(
        send,
        [&](Operation *at, bool) {
          auto other = dyn_cast<SendOp>(at);
          return !other || other.getTag() != send.getTag();
        },
        makers);
    if (after != send->getPrevNode())
      moveUpAfter(send, makers, after);
  }
}

/// On the CPU, a receive whose target ranks are not all of them runs in a
/// guard of those ranks (soap.on_devices), so that the others, which
/// receive nothing, allocate nothing for it either: its result there is a
/// stand-in (absentTensor). Every rank allocated the whole buffer before,
/// a sender too, which held it until the value it was inserted into died.
static void guardReceivesToTheirTargets(ModuleOp module) {
  auto numDevices =
      module->getAttrOfType<IntegerAttr>(SoapDialect::getNumDevicesAttrName());
  SmallVector<RecvOp> recvs;
  module.walk([&](RecvOp op) {
    if (!op->getParentOfType<OnDevicesOp>())
      recvs.push_back(op);
  });
  for (RecvOp recv : recvs) {
    SmallVector<int64_t> targets(recv.getTo());
    llvm::sort(targets);
    targets.erase(std::unique(targets.begin(), targets.end()), targets.end());
    if (numDevices &&
        static_cast<int64_t>(targets.size()) >= numDevices.getInt())
      continue;
    OpBuilder b(recv);
    auto guard = OnDevicesOp::create(b, recv.getLoc(), recv->getResultTypes(),
                                     b.getDenseI64ArrayAttr(targets));
    recv->replaceAllUsesWith(guard->getResults());
    Block &body = guard.getBody().emplaceBlock();
    recv->moveBefore(&body, body.end());
    b.setInsertionPointToEnd(&body);
    YieldOp::create(b, recv.getLoc(), recv->getResults());
  }
}

LogicalResult lowerCommunicationOps(ModuleOp module, bool hostBuffers) {
  if (failed(checkSendRecvPairs(module)))
    return failure();
  movesBeforeAllReduces(module);
  mergeGuards(module);
  if (hostBuffers) {
    sendEarly(module);
    guardReceivesToTheirTargets(module);
  }
  SmallVector<OnDevicesOp> guards;
  module.walk([&](OnDevicesOp op) { guards.push_back(op); });
  unsigned absentCount = 0;
  for (OnDevicesOp op : guards)
    if (failed(lowerOnDevices(op, module, hostBuffers, absentCount)))
      return failure();

  SmallVector<RankOp> ranks;
  module.walk([&](RankOp op) { ranks.push_back(op); });
  for (RankOp op : ranks) {
    OpBuilder b(op);
    op.replaceAllUsesWith(rankIndex(b, op.getLoc(), module));
    op.erase();
  }

  SmallVector<Operation *> ops;
  module.walk([&](Operation *op) {
    if (isa<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp,
            BroadcastOp, SendOp, RecvOp>(op))
      ops.push_back(op);
  });
  unsigned counter = 0;
  for (Operation *op : ops)
    if (failed(lowerCommunication(op, module, counter)))
      return failure();
  return success();
}

/// An all-reduce whose input buffer dies at it (an allocation of the
/// result's type that the next op of the call's block touching it frees: a
/// gradient that only its all-reduce reads) reduces in place: the result is
/// that buffer, the result's own allocation goes and the input's free
/// with it (the result's free frees it later). libsoaprt passes MPI_IN_PLACE
/// when the two pointers are equal. A gradient's bytes were held twice
/// while it was reduced (the simulator's memory model, Memory.cpp, counts
/// them once).
static void reduceInPlaceWhereInputsDie(ArrayRef<func::CallOp> calls,
                                        ModuleOp module) {
  llvm::DenseMap<Operation *, std::unique_ptr<AliasClasses>> classesOf;
  struct Rewrite {
    func::CallOp call;
    memref::AllocOp in, out;
    memref::DeallocOp free;
  };
  SmallVector<Rewrite> rewrites;
  for (func::CallOp call : calls) {
    auto placeholder = module.lookupSymbol<func::FuncOp>(call.getCallee());
    if (placeholder->getAttrOfType<StringAttr>(kCallAttr).getValue() !=
            "soaprt_all_reduce" ||
        call.getNumOperands() != 2)
      continue;
    auto in = call.getOperand(0).getDefiningOp<memref::AllocOp>();
    auto out = call.getOperand(1).getDefiningOp<memref::AllocOp>();
    if (!in || !out || in.getType() != out.getType() ||
        !in.getType().getLayout().isIdentity())
      continue;
    auto function = call->getParentOfType<func::FuncOp>();
    std::unique_ptr<AliasClasses> &classes = classesOf[function];
    if (!classes)
      classes = std::make_unique<AliasClasses>(function);
    if (classes->isExternal(in) || classes->mayAlias(in, out))
      continue;
    memref::DeallocOp free;
    for (Operation *op = call->getNextNode(); op; op = op->getNextNode())
      if (classes->touches(op, in)) {
        free = dyn_cast<memref::DeallocOp>(op);
        break;
      }
    if (free && free.getMemref() == in.getResult())
      rewrites.push_back({call, in, out, free});
  }
  for (Rewrite &r : rewrites) {
    std::optional<uint64_t> alignment = r.out.getAlignment();
    if (alignment && r.in.getAlignment().value_or(0) < *alignment)
      r.in.setAlignment(*alignment);
    r.out.getResult().replaceAllUsesWith(r.in.getResult());
    r.out.erase();
    r.free.erase();
  }
}

void replaceCommunicationPlaceholders(ModuleOp module, bool startAllReduces) {
  SmallVector<func::CallOp> calls;
  module.walk([&](func::CallOp call) {
    auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee());
    if (callee && callee->hasAttr(kCallAttr))
      calls.push_back(call);
  });
  reduceInPlaceWhereInputsDie(calls, module);
  SmallVector<func::FuncOp> placeholders;
  for (func::CallOp call : calls) {
    auto placeholder = module.lookupSymbol<func::FuncOp>(call.getCallee());
    OpBuilder b(call);
    Location loc = call.getLoc();
    SmallVector<Value> args;
    unsigned nextBuffer = 0;
    for (Attribute arg : placeholder->getAttrOfType<ArrayAttr>(kArgsAttr)) {
      if (isa<StringAttr>(arg)) {
        args.push_back(pointerTo(b, loc, call.getOperand(nextBuffer++)));
      } else if (auto value = dyn_cast<IntegerAttr>(arg)) {
        args.push_back(
            arith::ConstantIntOp::create(b, loc, value.getInt(), 64));
      } else {
        memref::GlobalOp global =
            deviceListGlobal(module, cast<DenseI64ArrayAttr>(arg).asArrayRef());
        Value devices = memref::GetGlobalOp::create(b, loc, global.getType(),
                                                    global.getSymName());
        args.push_back(pointerTo(b, loc, devices));
      }
    }
    StringRef name =
        placeholder->getAttrOfType<StringAttr>(kCallAttr).getValue();
    bool start = startAllReduces && name == "soaprt_all_reduce";
    Type handle = b.getI64Type();
    func::FuncOp callee =
        declare(module, start ? "soaprt_all_reduce_start" : name,
                ValueRange(args).getTypes(),
                start ? TypeRange(handle) : TypeRange());
    auto runtimeCall = func::CallOp::create(b, loc, callee, args);
    SmallVector<Value> buffers(call.getOperands());
    call.erase();
    if (start)
      waitBeforeFirstUse(b, runtimeCall, runtimeCall.getResult(0), buffers,
                         declare(module, "soaprt_wait", handle, {}));
    if (!llvm::is_contained(placeholders, placeholder))
      placeholders.push_back(placeholder);
  }
  for (func::FuncOp placeholder : placeholders)
    placeholder.erase();
}

namespace {
struct SendEarlyPass : PassWrapper<SendEarlyPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(SendEarlyPass)

  StringRef getArgument() const override { return "soap-send-early"; }
  StringRef getDescription() const override {
    return "move each soap.send outside loops up to right after what makes "
           "what it sends (the CPU lowering does it: libsoaprt's send does "
           "not wait)";
  }
  void runOnOperation() override { sendEarly(getOperation()); }
};
} // namespace

std::unique_ptr<Pass> createSendEarlyPass() {
  return std::make_unique<SendEarlyPass>();
}

} // namespace soap::codegen

//===- KernelCalls.cpp - BLAS calls and trace hooks in lowered code ------===//
//
// After bufferization, contractions (matmul in any operand layout,
// batch_matmul, matvec, vecmat and linalg.generic contractions with a
// single reduction) and 2-D convolutions (conv2dRoles: any layout, plain,
// grouped or depthwise) on f32/f64 memrefs become calls of libsoaprt's kernels,
// which take a pointer to element 0 and a stride per dimension of each operand,
// read from the memref's strided metadata, so transposed operands and subviews
// need no copy here. The convolutions' calls are built in
// ConvolutionCalls.cpp; the relayout copies that products and convolutions
// read through (copyRelayout, permutingCopy) are recognised here.
//
//===----------------------------------------------------------------------===//

#include "KernelCallBuilders.h"
#include "soap/support/LinearAffine.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/Pass.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace soap::codegen {

func::FuncOp declareRuntimeFunction(ModuleOp module, StringRef name,
                                    TypeRange inputs) {
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  OpBuilder b(module.getContext());
  b.setInsertionPointToStart(module.getBody());
  auto func = func::FuncOp::create(b, module.getLoc(), name,
                                   b.getFunctionType(inputs, {}));
  func.setPrivate();
  return func;
}

static std::string locationString(Location loc) {
  std::string s;
  llvm::raw_string_ostream os(s);
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    os << file.getFilename().getValue() << ":" << file.getLine() << ":"
       << file.getColumn();
  else if (auto name = dyn_cast<NameLoc>(loc))
    os << name.getName().getValue();
  else if (auto fused = dyn_cast<FusedLoc>(loc)) {
    // A kernel that merged ops (sibling reductions) names each.
    llvm::interleave(
        fused.getLocations(), os,
        [&](Location part) { os << locationString(part); }, ", ");
  }
  return s;
}

/// Brackets each of `targets` with soaprt_op_begin/end calls of a new id,
/// its name (op name and location) appended to `ops`.
static void bracketWithTraceHooks(ModuleOp module,
                                  ArrayRef<Operation *> targets,
                                  std::vector<std::string> &ops) {
  if (targets.empty())
    return;
  MLIRContext *context = module.getContext();
  Type i64 = IntegerType::get(context, 64);
  func::FuncOp begin = declareRuntimeFunction(module, "soaprt_op_begin", {i64});
  func::FuncOp end = declareRuntimeFunction(module, "soaprt_op_end", {i64});
  OpBuilder b(context);
  for (Operation *op : targets) {
    int64_t id = static_cast<int64_t>(ops.size());
    std::string where = locationString(op->getLoc());
    ops.push_back(op->getName().getStringRef().str() +
                  (where.empty() ? "" : " (" + where + ")"));
    Location loc = op->getLoc();
    b.setInsertionPoint(op);
    Value idValue = arith::ConstantIntOp::create(b, loc, id, 64);
    func::CallOp::create(b, loc, begin, ValueRange{idValue});
    b.setInsertionPointAfter(op);
    func::CallOp::create(b, loc, end, ValueRange{idValue});
  }
}

void insertTraceHooks(ModuleOp module, std::vector<std::string> &ops) {
  // Each linalg op, and each loop nest as one, not the ops inside it: the
  // plane updates' (PlaneUpdates.cpp), an embedding gradient's scatter
  // (and the sparse update folded into it), a model's own loops. Work
  // outside every bracket is charged to the next kernel by readers of the
  // trace (soap-profile --run), so no loop may run unbracketed.
  SmallVector<Operation *> targets;
  module.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (op->hasAttr(kPlaneUpdatesAttr) ||
        isa<scf::ForOp, scf::ForallOp, scf::ParallelOp, scf::WhileOp>(op)) {
      targets.push_back(op);
      return WalkResult::skip();
    }
    if (isa<linalg::LinalgOp>(op))
      targets.push_back(op);
    return WalkResult::advance();
  });
  bracketWithTraceHooks(module, targets, ops);
}

void insertCopyTraceHooks(ModuleOp module, std::vector<std::string> &ops) {
  SmallVector<Operation *> targets;
  module.walk([&](memref::CopyOp copy) { targets.push_back(copy); });
  bracketWithTraceHooks(module, targets, ops);
}

std::optional<SmallVector<RelayoutRead>> copyRelayout(linalg::GenericOp op) {
  if (!copiesItsInput(op))
    return std::nullopt;
  auto type = dyn_cast<ShapedType>(op.getDpsInputs().front().getType());
  AffineMap map = op.getIndexingMapsArray().front();
  if (!type || !type.hasStaticShape() ||
      map.getNumResults() != map.getNumDims())
    return std::nullopt;
  SmallVector<RelayoutRead> reads;
  llvm::SmallBitVector seen(map.getNumDims());
  for (auto [p, expr] : llvm::enumerate(map.getResults())) {
    std::optional<LinearExpr> linear = linearize(expr);
    if (!linear || linear->terms.size() != 1)
      return std::nullopt;
    auto [loop, factor] = linear->terms.front();
    bool forwards = factor == 1 && linear->constant == 0;
    bool backwards = factor == -1 && linear->constant == type.getDimSize(p) - 1;
    if ((!forwards && !backwards) || seen.test(loop))
      return std::nullopt;
    seen.set(loop);
    reads.push_back({loop, backwards});
  }
  return reads;
}

std::optional<SmallVector<int64_t>> permutingCopy(Operation *op, Value source) {
  if (auto transpose = dyn_cast<linalg::TransposeOp>(op)) {
    if (transpose.getInput() != source || !transpose.hasPureTensorSemantics())
      return std::nullopt;
    return llvm::to_vector(transpose.getPermutation());
  }
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic || !generic.hasPureTensorSemantics() ||
      generic.getNumDpsInits() != 1 || generic.getNumReductionLoops() != 0)
    return std::nullopt;
  Block &body = generic.getRegion().front();
  OpOperand *init = generic.getDpsInitOperand(0);
  BlockArgument out = generic.getMatchingBlockArgument(init);
  // The one input read (source), the others not read at all.
  OpOperand *read = nullptr;
  for (OpOperand *input : generic.getDpsInputOperands()) {
    if (generic.getMatchingBlockArgument(input).use_empty())
      continue;
    if (read || input->get() != source)
      return std::nullopt;
    read = input;
  }
  if (!read)
    return std::nullopt;
  BlockArgument in = generic.getMatchingBlockArgument(read);
  // Yields the input, or adds it to an output that starts as zeros.
  Value yielded = body.getTerminator()->getOperand(0);
  if (yielded != in) {
    auto add = yielded.getDefiningOp<arith::AddFOp>();
    auto fill = init->get().getDefiningOp<linalg::FillOp>();
    if (!add || add->getBlock() != &body || body.getOperations().size() != 2 ||
        !((add.getLhs() == in && add.getRhs() == out) ||
          (add.getLhs() == out && add.getRhs() == in)) ||
        !fill || !matchPattern(fill.value(), m_AnyZeroFloat()))
      return std::nullopt;
  } else if (body.getOperations().size() != 1) {
    return std::nullopt;
  }
  AffineMap inMap = generic.getMatchingIndexingMap(read),
            outMap = generic.getMatchingIndexingMap(init);
  if (!inMap.isPermutation() || !outMap.isPermutation() ||
      read->get().getType() != source.getType())
    return std::nullopt;
  // Dimension j of the result is loop outMap[j], which the input reads as
  // its dimension perm[j].
  SmallVector<int64_t> perm;
  for (unsigned j = 0; j < outMap.getNumResults(); ++j)
    perm.push_back(*inMap.getResultPosition(
        getAffineDimExpr(outMap.getDimPosition(j), generic.getContext())));
  return perm;
}

StridedOperand stridedOperand(OpBuilder &b, Location loc, Value memref) {
  auto type = cast<MemRefType>(memref.getType());
  auto metadata = memref::ExtractStridedMetadataOp::create(b, loc, memref);
  Value base =
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
  int64_t bytes = elementBytes(type);
  Value offsetBytes = arith::MulIOp::create(
      b, loc, metadata.getOffset(),
      arith::ConstantIndexOp::create(b, loc, bytes));
  Value address = arith::AddIOp::create(b, loc, base, offsetBytes);
  Type i64 = b.getI64Type();
  Value asInt = arith::IndexCastOp::create(b, loc, i64, address);
  StridedOperand result;
  result.pointer = LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext()), asInt);
  for (Value stride : metadata.getStrides())
    result.strides.push_back(arith::IndexCastOp::create(b, loc, i64, stride));
  return result;
}

namespace {

/// The element type suffix of a kernel when every operand of `op` is a
/// memref of f32 (or every one of f64).
std::optional<std::string> kernelSuffix(linalg::LinalgOp op) {
  Type element;
  for (Value operand : op->getOperands()) {
    auto type = dyn_cast<MemRefType>(operand.getType());
    if (!type || !type.hasStaticShape())
      return std::nullopt;
    if (element && type.getElementType() != element)
      return std::nullopt;
    element = type.getElementType();
  }
  if (element && element.isF32())
    return std::string("f32");
  if (element && element.isF64())
    return std::string("f64");
  return std::nullopt;
}

/// For each loop in `loops`, the stride (i64) with which the operand moves
/// along it; zero when the operand does not depend on the loop. Empty when
/// the operand's map is not a projected permutation.
std::optional<SmallVector<Value>>
loopStrides(OpBuilder &b, Location loc, AffineMap map,
            const StridedOperand &operand, ArrayRef<int64_t> loops) {
  if (!map.isProjectedPermutation(/*allowZeroInResults=*/false))
    return std::nullopt;
  SmallVector<Value> strides;
  Value zero;
  for (int64_t loop : loops) {
    Value stride;
    for (auto [i, expr] : llvm::enumerate(map.getResults()))
      if (cast<AffineDimExpr>(expr).getPosition() == loop)
        stride = operand.strides[i];
    if (!stride) {
      if (!zero)
        zero = arith::ConstantIntOp::create(b, loc, 0, 64);
      stride = zero;
    }
    strides.push_back(stride);
  }
  return strides;
}

/// Whether every matrix the call passes has, in the memref type, a static
/// unit stride along one of its two loops (or a size of 1 there).
bool hasUnitStrideMatrices(linalg::LinalgOp op,
                           ArrayRef<std::pair<OpOperand *, std::array<int64_t, 2>>>
                               matrices) {
  SmallVector<int64_t> sizes = op.getStaticLoopRanges();
  for (auto [operand, loops] : matrices) {
    auto type = cast<MemRefType>(operand->get().getType());
    SmallVector<int64_t> strides;
    int64_t offset;
    if (failed(type.getStridesAndOffset(strides, offset)))
      return false;
    AffineMap map = op.getMatchingIndexingMap(operand);
    bool unit = false;
    for (int64_t loop : loops) {
      if (loop < 0 || sizes[loop] == 1) {
        unit = true;
        continue;
      }
      for (auto [i, expr] : llvm::enumerate(map.getResults()))
        if (cast<AffineDimExpr>(expr).getPosition() == loop &&
            strides[i] == 1)
          unit = true;
    }
    if (!unit)
      return false;
  }
  return true;
}

} // namespace

std::optional<linalg::ContractionDimensions>
matmulDimensions(linalg::LinalgOp op) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      !linalg::isaContractionOpInterface(op))
    return std::nullopt;
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims))
    return std::nullopt;
  // Without a batch loop, a second m, n or k loop (a product of a weight
  // broadcast over the batch, or summed over it:
  // foldBroadcastsIntoContractions, foldSumsIntoContractions) runs as the
  // call's batch, the outer of the two: an operand that does not depend on it
  // reads it with stride 0, and a k batch adds every batch's product into the
  // one C.
  if (dims->batch.empty())
    for (SmallVector<unsigned, 2> *loops : {&dims->m, &dims->n, &dims->k})
      if (loops->size() == 2) {
        auto outer = llvm::min_element(*loops);
        dims->batch.push_back(*outer);
        loops->erase(outer);
        break;
      }
  if (dims->batch.size() > 1 || dims->m.size() > 1 || dims->n.size() > 1 ||
      dims->k.size() != 1)
    return std::nullopt;
  // Every loop must be one of batch, m, n, k.
  if (dims->batch.size() + dims->m.size() + dims->n.size() + 1 !=
      op.getNumLoops())
    return std::nullopt;
  return *dims;
}

/// Erases `op` and the trace hooks that bracket it (insertTraceHooks).
void eraseWithTraceHooks(Operation *op) {
  auto hook = [](Operation *call, StringRef name) {
    auto callOp = dyn_cast_or_null<func::CallOp>(call);
    return callOp && callOp.getCallee() == name ? callOp : func::CallOp();
  };
  func::CallOp begin = hook(op->getPrevNode(), "soaprt_op_begin");
  func::CallOp end = hook(op->getNextNode(), "soaprt_op_end");
  op->erase();
  if (begin && end && begin.getOperands() == end.getOperands()) {
    end->erase();
    begin->erase();
  }
}

namespace {

/// C += A * B over (batch,) m, n, k as one runtime call. A zero fill the
/// call makes unnecessary is appended to `dead`.
bool replaceContraction(linalg::LinalgOp op, const std::string &suffix,
                        const CallTarget &target,
                        SmallVectorImpl<Operation *> &dead,
                        AliasClasses &classes) {
  std::optional<linalg::ContractionDimensions> dims = matmulDimensions(op);
  if (!dims)
    return false;
  SmallVector<int64_t> sizes = op.getStaticLoopRanges();
  // A missing m or n is a dimension of size 1 (loop -1: stride 0).
  int64_t m = dims->m.empty() ? -1 : static_cast<int64_t>(dims->m[0]);
  int64_t n = dims->n.empty() ? -1 : static_cast<int64_t>(dims->n[0]);
  int64_t k = dims->k[0];
  auto size = [&](int64_t loop) { return loop < 0 ? 1 : sizes[loop]; };

  // A batch C does not depend on sums into it: the GPU's strided batched
  // GEMM would write every batch's C at once.
  if (target.math && !dims->batch.empty() &&
      !op.getMatchingIndexingMap(op.getDpsInitOperand(0))
           .isFunctionOfDim(dims->batch[0]))
    return false;
  if (target.needsUnitStride &&
      !hasUnitStrideMatrices(op, {{op.getDpsInputOperand(0), {m, k}},
                                  {op.getDpsInputOperand(1), {k, n}},
                                  {op.getDpsInitOperand(0), {m, n}}}))
    return false;

  // On the CPU, an output filled with zeros right before the product is
  // overwritten by it instead (BLAS's beta = 0): the fill goes, and the
  // product does not read the zeros back. (Looked for before the call's
  // arguments, whose metadata reads of the output come between.)
  Operation *zeroFill = target.math ? nullptr : zeroFillBefore(op, classes);
  OpBuilder b(op);
  Location loc = op.getLoc();
  SmallVector<Value> args;
  auto constant = [&](int64_t v) {
    return arith::ConstantIntOp::create(b, loc, v, 64).getResult();
  };
  if (target.math)
    args.push_back(constant(*target.math));
  bool batched = !dims->batch.empty();
  if (batched)
    args.push_back(constant(sizes[dims->batch[0]]));
  args.append({constant(size(m)), constant(size(n)), constant(size(k))});
  auto addOperand = [&](OpOperand *operand, ArrayRef<int64_t> loops) {
    StridedOperand strided = stridedOperand(b, loc, operand->get());
    std::optional<SmallVector<Value>> strides = loopStrides(
        b, loc, op.getMatchingIndexingMap(operand), strided, loops);
    if (!strides)
      return false;
    args.push_back(strided.pointer);
    args.append(*strides);
    return true;
  };
  SmallVector<int64_t> batch(dims->batch.begin(), dims->batch.end());
  auto with = [&](int64_t a, int64_t c) {
    SmallVector<int64_t> loops = batch;
    loops.append({a, c});
    return loops;
  };
  if (!addOperand(op.getDpsInputOperand(0), with(m, k)) ||
      !addOperand(op.getDpsInputOperand(1), with(k, n)) ||
      !addOperand(op.getDpsInitOperand(0), with(m, n))) {
    // Nothing uses the partial call arguments; erase them with the op kept.
    return false;
  }
  if (!target.math)
    args.push_back(constant(zeroFill ? 0 : 1));
  std::string name = target.prefix +
                     (batched ? "batch_matmul_" : "matmul_") + suffix;
  auto module = op->getParentOfType<ModuleOp>();
  func::FuncOp callee = declareRuntimeFunction(
      module, name, ValueRange(args).getTypes());
  func::CallOp::create(b, loc, callee, args);
  op->erase();
  if (zeroFill)
    dead.push_back(zeroFill);
  return true;
}

/// With `weightBlock` > 0 (the CPU), weights that can stay in oneDNN's
/// blocked layout do (findBlockedWeights), and the entry arguments that
/// hold them are appended to `blockedArguments`.
int replaceKernelsByCalls(
    ModuleOp module, const CallTarget &target, int64_t weightBlock = 0,
    SmallVectorImpl<unsigned> *blockedArguments = nullptr) {
  SmallVector<linalg::LinalgOp> candidates;
  module.walk([&](linalg::LinalgOp op) {
    if (op.hasPureBufferSemantics())
      candidates.push_back(op);
  });
  bool gpu = target.math.has_value();
  int replaced = 0;
  // Ops only the replaced kernels needed (spreadImage's), erased once no
  // candidate can be one of them.
  SmallVector<Operation *> dead;
  std::vector<PlannedConvolution> convolutions;
  AliasClasses classes(module);
  for (linalg::LinalgOp op : candidates) {
    std::optional<std::string> suffix = kernelSuffix(op);
    if (!suffix || (gpu && *suffix != "f32"))
      continue;
    // The GPU kernel (cuDNN) is only used, and tested, in NCHW, ungrouped.
    if (!gpu || isa<linalg::Conv2DNchwFchwOp>(op.getOperation()))
      if (std::optional<Conv2dRoles> roles = conv2dRoles(op)) {
        convolutions.push_back(
            planConvolution(op, *roles, *suffix, gpu, classes));
        continue;
      }
    if (gpu && isa<linalg::PoolingNchwMaxOp>(op.getOperation())) {
      replaced += replacePooling(op, 0);
      continue;
    }
    if (gpu && isa<linalg::PoolingNchwSumOp>(op.getOperation())) {
      replaced += replacePooling(op, 1);
      continue;
    }
    if (!linalg::isaContractionOpInterface(op))
      continue;
    // Maps must be projected permutations before anything is built.
    if (!llvm::all_of(op.getIndexingMapsArray(), [](AffineMap map) {
          return map.isProjectedPermutation(false);
        }))
      continue;
    replaced += replaceContraction(op, *suffix, target, dead, classes);
  }
  BlockedWeights blocked;
  if (weightBlock > 0)
    if (auto entry = module.lookupSymbol<func::FuncOp>(kEntrySymbol)) {
      std::vector<ConvolutionCall> calls;
      for (const PlannedConvolution &c : convolutions) {
        ConvolutionCall call{c.op, c.roles};
        if (c.relaid) {
          call.relaidCopy = c.relaid->copy;
          call.relaidReads = c.relaid->reads;
        }
        call.writesView = c.spread && c.spread->interior;
        calls.push_back(std::move(call));
      }
      blocked = findBlockedWeights(entry, calls, weightBlock);
      if (blockedArguments)
        blockedArguments->append(blocked.arguments);
    }
  for (PlannedConvolution &c : convolutions) {
    if (!replaceConvolution(c.op, c.roles, c.suffix, target, c.spread, c.relaid,
                            c.zeroFill != nullptr, blocked.calls.lookup(c.op)))
      continue;
    ++replaced;
    if (c.zeroFill)
      dead.push_back(c.zeroFill);
    if (c.spread)
      dead.append(c.spread->dead);
    if (c.relaid)
      dead.append(c.relaid->dead);
  }
  for (Operation *op : dead)
    eraseWithTraceHooks(op);
  return replaced;
}

} // namespace

int replaceKernelsByBlasCalls(ModuleOp module, int64_t weightBlock,
                              SmallVectorImpl<unsigned> *blockedArguments) {
  return replaceKernelsByCalls(module, CallTarget(), weightBlock,
                               blockedArguments);
}

namespace {
struct KernelCallsPass : PassWrapper<KernelCallsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(KernelCallsPass)

  StringRef getArgument() const override { return "soap-kernel-calls"; }
  StringRef getDescription() const override {
    return "contractions and 2-D convolutions on buffers become runtime "
           "calls (BLAS, oneDNN), reading spread images and relaid filters "
           "where they are (the step of --soap-lower-cpu's kernels=blas "
           "after bufferization, without blocked weights)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<LLVM::LLVMDialect, arith::ArithDialect,
                    memref::MemRefDialect, func::FuncDialect>();
  }
  void runOnOperation() override {
    replaceKernelsByBlasCalls(getOperation(), /*weightBlock=*/0, nullptr);
  }
};
} // namespace

std::unique_ptr<Pass> createKernelCallsPass() {
  return std::make_unique<KernelCallsPass>();
}

int replaceKernelsByGpuLibraryCalls(ModuleOp module, int64_t math) {
  CallTarget target;
  target.prefix = "soaprt_gpu_";
  target.math = math;
  target.needsUnitStride = true;
  return replaceKernelsByCalls(module, target);
}

} // namespace soap::codegen

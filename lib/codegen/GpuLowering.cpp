//===- GpuLowering.cpp - a training step to LLVM for NVIDIA GPUs ---------===//
//
// The order of the steps:
//   1. as the CPU lowering: describe and rename the entry, communication
//      ops, trace hooks, transposes folded into contractions, one-shot
//      bufferization with deallocation, communication calls;
//   2. f32 contractions, NCHW convolutions and poolings become calls of
//      libsoaprt's cuBLAS/cuDNN kernels (KernelCalls.cpp);
//   3. every other op becomes one CUDA kernel: memref.copy becomes
//      linalg.copy; each linalg op is generalized with its parallel loops
//      first and lowered to an scf.parallel over them (reductions as scf.for
//      inside); the scf.parallel becomes a gpu.launch of 256-thread blocks,
//      one thread per point of the parallel loops. Reductions over 32
//      points or more get one block per output point instead, and a
//      gather's scatter-add gradient one thread per point with atomic adds
//      (GpuKernels.cpp); other loop nests on buffers run on one thread;
//   4. constants that kernels read are copied to device memory at the start
//      of the step;
//   5. kernels are outlined, compiled through NVVM to PTX (or a fatbin) and
//      embedded; the host code goes to the LLVM dialect with every buffer
//      allocated by libsoaprt in device memory (_mlir_memref_to_llvm_alloc);
//   6. the C ABI for the driver, with "target": "gpu" in soap_model_info,
//      and soap.target = "gpu" on the module for soap-translate.
//
//===----------------------------------------------------------------------===//

#include "soap/codegen/GpuLowering.h"

#include "GpuKernels.h"
#include "LoweringSteps.h"
#include "soap/Dialect/SoapDialect.h"
#include "soap/codegen/BlasKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <cstdlib>

using namespace mlir;

namespace soap {

namespace {

/// Marks the scf.execute_region that holds one op's loops until they
/// become a kernel.
constexpr llvm::StringLiteral kKernelMarker = "soap_gpu_kernel";

const char *kToParallelLoopsPipeline =
    "func.func(convert-linalg-to-parallel-loops)";

std::string toLLVMPipeline(const GpuLoweringOptions &options,
                           StringRef libdevice) {
  return llvm::formatv(
      "gpu-kernel-outlining, "
      "nvvm-attach-target{{chip={0} features={1} O=3 l={3}}, "
      "gpu.module(convert-scf-to-cf, convert-gpu-to-nvvm, canonicalize, cse, "
      "reconcile-unrealized-casts), "
      "func.func(fold-memref-alias-ops, canonicalize, cse), "
      "expand-strided-metadata, lower-affine, soap-scf-to-cf, "
      "func.func(canonicalize, cse), "
      "finalize-memref-to-llvm{{use-generic-functions=true}, "
      "convert-math-to-llvm, convert-math-to-libm, convert-arith-to-llvm, "
      "convert-ub-to-llvm, convert-index-to-llvm, "
      "convert-func-to-llvm{{use-bare-ptr-memref-call-conv=true}, "
      "convert-cf-to-llvm, gpu-to-llvm, reconcile-unrealized-casts, "
      "gpu-module-to-binary{{format={2}}",
      options.chip, options.features, options.format, libdevice);
}

/// libdevice (the CUDA math library as LLVM bitcode) of the CUDA toolkit:
/// under $CUDA_HOME, $CUDA_PATH or $CUDA_ROOT, next to the ptxas on PATH,
/// or under /usr/local/cuda. Empty when none has it.
std::string findLibdevice() {
  SmallVector<std::string> roots;
  for (const char *variable : {"CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"})
    if (const char *value = std::getenv(variable))
      roots.push_back(value);
  if (llvm::ErrorOr<std::string> ptxas = llvm::sys::findProgramByName("ptxas"))
    roots.push_back(
        llvm::sys::path::parent_path(llvm::sys::path::parent_path(*ptxas))
            .str());
  roots.push_back("/usr/local/cuda");
  for (const std::string &root : roots) {
    SmallString<256> path(root);
    llvm::sys::path::append(path, "nvvm", "libdevice", "libdevice.10.bc");
    if (llvm::sys::fs::exists(path))
      return path.str().str();
  }
  return "";
}

/// memref.copy (from bufferization) between device buffers: a kernel.
void copiesToLinalg(ModuleOp module) {
  SmallVector<memref::CopyOp> copies;
  module.walk([&](memref::CopyOp copy) { copies.push_back(copy); });
  for (memref::CopyOp copy : copies) {
    OpBuilder b(copy);
    linalg::CopyOp::create(b, copy.getLoc(), copy.getSource(),
                           copy.getTarget());
    copy.erase();
  }
}

/// `op` alone in a marked scf.execute_region: a kernel.
static void markKernel(RewriterBase &rewriter, Operation *op) {
  rewriter.setInsertionPoint(op);
  auto region =
      scf::ExecuteRegionOp::create(rewriter, op->getLoc(), TypeRange{});
  region->setAttr(kKernelMarker, rewriter.getUnitAttr());
  Block &block = region.getRegion().emplaceBlock();
  op->moveBefore(&block, block.end());
  rewriter.setInsertionPointToEnd(&block);
  scf::YieldOp::create(rewriter, op->getLoc());
}

/// A loop nest on buffers that only loads, stores and computes (a gather's
/// scatter-add gradient, lib/autodiff/GatherGradient.cpp, once bufferized
/// in place): device code. Loops over buffers of `index` or `i1` (the
/// lowered deallocation's ownership bookkeeping) are host code.
static bool isDeviceLoopNest(scf::ForOp loop) {
  if (loop->getNumResults() != 0)
    return false;
  bool touchesMemory = false;
  WalkResult walk = loop.getBody()->walk([&](Operation *op) {
    if (isa<memref::LoadOp, memref::StoreOp>(op)) {
      Value buffer = isa<memref::LoadOp>(op)
                         ? cast<memref::LoadOp>(op).getMemRef()
                         : cast<memref::StoreOp>(op).getMemRef();
      Type element = cast<MemRefType>(buffer.getType()).getElementType();
      if (element.isIndex() || element.isInteger(1))
        return WalkResult::interrupt();
      touchesMemory = true;
      return WalkResult::advance();
    }
    if (isa<scf::ForOp, scf::IfOp, scf::YieldOp>(op) || isPure(op))
      return WalkResult::advance();
    return WalkResult::interrupt();
  });
  return touchesMemory && !walk.wasInterrupted();
}

/// Each linalg op left on buffers: generalized, then a block reduction
/// when it reduces many points into few (GpuKernels.cpp), else with its
/// parallel loops first, alone in a marked scf.execute_region. Device loop
/// nests: a kernel of atomic adds when they are scatter-adds, else marked
/// too (they run on one thread).
void isolateKernels(ModuleOp module) {
  SmallVector<linalg::LinalgOp> ops;
  SmallVector<scf::ForOp> loops;
  module.walk([&](Operation *op) {
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
        linalgOp && linalgOp.hasPureBufferSemantics())
      ops.push_back(linalgOp);
    if (auto loop = dyn_cast<scf::ForOp>(op);
        loop && !loop->getParentOfType<scf::ForOp>() &&
        !loop->getParentOfType<linalg::LinalgOp>() && isDeviceLoopNest(loop))
      loops.push_back(loop);
  });
  IRRewriter rewriter(module.getContext());
  for (scf::ForOp loop : loops)
    if (!codegen::launchScatterAdd(rewriter, loop))
      markKernel(rewriter, loop);
  for (linalg::LinalgOp op : ops) {
    rewriter.setInsertionPoint(op);
    Operation *kernel = op;
    auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
    if (!generic) {
      FailureOr<linalg::GenericOp> generalized =
          linalg::generalizeNamedOp(rewriter, op);
      if (succeeded(generalized)) {
        generic = *generalized;
        kernel = generic;
      }
    }
    if (generic && codegen::launchBlockReduction(rewriter, generic))
      continue;
    if (generic) {
      SmallVector<unsigned> order;
      SmallVector<utils::IteratorType> iterators =
          generic.getIteratorTypesArray();
      for (auto [i, it] : llvm::enumerate(iterators))
        if (it == utils::IteratorType::parallel)
          order.push_back(i);
      for (auto [i, it] : llvm::enumerate(iterators))
        if (it != utils::IteratorType::parallel)
          order.push_back(i);
      bool identity = llvm::all_of(llvm::enumerate(order), [](auto p) {
        return p.index() == p.value();
      });
      if (!identity) {
        FailureOr<linalg::GenericOp> interchanged =
            linalg::interchangeGenericOp(rewriter, generic, order);
        if (succeeded(interchanged))
          kernel = *interchanged;
      }
    }
    markKernel(rewriter, kernel);
  }
}

/// One thread per point of `loop`'s iteration space: the thread's linear
/// index is split into the loop's induction variables (the last one
/// fastest, so that neighbouring threads touch neighbouring elements of
/// row-major buffers). False when a bound is not a constant.
bool parallelLoopToLaunch(OpBuilder &b, scf::ParallelOp loop) {
  SmallVector<codegen::LoopRange> ranges;
  int64_t total = 1;
  for (auto [lb, ub, step] :
       llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
    std::optional<codegen::LoopRange> range =
        codegen::constantRange(lb, ub, step);
    if (!range)
      return false;
    ranges.push_back(*range);
    total *= range->count;
  }
  b.setInsertionPoint(loop);
  if (total == 0) {
    loop.erase();
    return true;
  }
  IRMapping mapping;
  for (auto [var, iv] : llvm::zip(
           loop.getInductionVars(),
           codegen::launchOnePerPoint(b, loop.getLoc(), ranges)))
    mapping.map(var, iv);
  for (Operation &op : loop.getBody()->without_terminator())
    b.clone(op, mapping);
  loop.erase();
  return true;
}

/// The ops of `block` but its terminator, on one GPU thread.
void runOnOneThread(OpBuilder &b, Block &block) {
  Operation *first = &block.front();
  if (first == block.getTerminator())
    return;
  SmallVector<Operation *> ops;
  for (Operation &op : block.without_terminator())
    ops.push_back(&op);
  b.setInsertionPoint(first);
  gpu::LaunchOp launch = codegen::createLaunch(b, first->getLoc(), 1, 1);
  Block &body = launch.getBody().front();
  for (Operation *op : ops)
    op->moveBefore(body.getTerminator());
}

/// Every marked execute_region: its loops become a kernel launch, then the
/// region is inlined where it stands.
void launchKernels(ModuleOp module) {
  SmallVector<scf::ExecuteRegionOp> regions;
  module.walk([&](scf::ExecuteRegionOp region) {
    if (region->hasAttr(kKernelMarker))
      regions.push_back(region);
  });
  IRRewriter rewriter(module.getContext());
  for (scf::ExecuteRegionOp region : regions) {
    Block &block = region.getRegion().front();
    scf::ParallelOp loop;
    bool onlyLoop = true;
    for (Operation &op : block.without_terminator()) {
      if (auto parallel = dyn_cast<scf::ParallelOp>(op)) {
        onlyLoop &= !loop;
        loop = parallel;
      } else if (!isMemoryEffectFree(&op) || op.getNumRegions() != 0) {
        onlyLoop = false;
      }
    }
    if (!(loop && onlyLoop && parallelLoopToLaunch(rewriter, loop)))
      runOnOneThread(rewriter, block);
    rewriter.eraseOp(block.getTerminator());
    rewriter.inlineBlockBefore(&block, region);
    rewriter.eraseOp(region);
  }
}

/// Whether device code can read `value`, a view of a constant's host
/// buffer: an op inside a kernel (gpu.launch) uses it, or anything but a
/// host load or store does (a library call's pointer, a copy), directly or
/// through views of it.
static bool reachesDevice(Value value) {
  for (OpOperand &use : value.getUses()) {
    Operation *user = use.getOwner();
    if (user->getParentOfType<gpu::LaunchOp>())
      return true;
    if (isa<memref::LoadOp, memref::StoreOp>(user))
      continue;
    if (auto view = dyn_cast<ViewLikeOpInterface>(user);
        view && view.getViewSource() == value) {
      if (llvm::any_of(user->getResults(), reachesDevice))
        return true;
      continue;
    }
    return true;
  }
  return false;
}

/// Constants (memref.global) that kernels or library calls read live in
/// host memory: each function copies the ones its device code reads,
/// directly or through views (a slice of an exported constant: BERT's
/// position ids), into device buffers at its start (mgpuMemcpy), reads them
/// there, and frees them before it returns. Host loads and stores keep the
/// host copy, and so do constants only the runtime's host code reads
/// (kHostOnlyAttr: a communication call's device list).
LogicalResult copyGlobalsToDevice(ModuleOp module) {
  MLIRContext *context = module.getContext();
  Type ptr = LLVM::LLVMPointerType::get(context);
  Type i64 = IntegerType::get(context, 64);
  // Built once: a lookup in the module itself walks all its ops.
  SymbolTable symbols(module);
  for (auto function : module.getOps<func::FuncOp>()) {
    if (function.isExternal())
      continue;
    // Host-side reads of each global that device code reaches, by symbol.
    llvm::MapVector<StringAttr, SmallVector<memref::GetGlobalOp>> uses;
    DenseMap<StringAttr, MemRefType> types;
    function.walk([&](memref::GetGlobalOp global) {
      auto symbol =
          symbols.lookup<memref::GlobalOp>(global.getNameAttr().getAttr());
      if (global->getParentOfType<gpu::LaunchOp>() ||
          (symbol && symbol->hasAttr(codegen::kHostOnlyAttr)) ||
          !reachesDevice(global.getResult()))
        return;
      uses[global.getNameAttr().getAttr()].push_back(global);
      types[global.getNameAttr().getAttr()] = global.getType();
    });
    if (uses.empty())
      continue;
    if (!function.getBody().hasOneBlock())
      return function.emitError()
             << "the GPU lowering needs a function body of one block";
    Block &entry = function.getBody().front();
    OpBuilder b(context);
    b.setInsertionPointToStart(&entry);
    Location loc = function.getLoc();
    auto memcpy = module.lookupSymbol<func::FuncOp>("mgpuMemcpy");
    if (!memcpy) {
      OpBuilder top(context);
      top.setInsertionPointToStart(module.getBody());
      memcpy =
          func::FuncOp::create(top, loc, "mgpuMemcpy",
                               top.getFunctionType({ptr, ptr, i64, ptr}, {}));
      memcpy.setPrivate();
    }
    SmallVector<Value> copies;
    for (auto &[name, operands] : uses) {
      MemRefType type = types[name];
      if (!type.hasStaticShape() || !type.getLayout().isIdentity())
        return function.emitError()
               << "a kernel reads the constant @" << name.getValue()
               << " of type " << type
               << ", which the GPU lowering cannot copy to the device";
      Value host = memref::GetGlobalOp::create(b, loc, type, name.getValue());
      Value device = memref::AllocOp::create(b, loc, type);
      int64_t bytes = type.getNumElements() * codegen::elementBytes(type);
      Value size = arith::ConstantIntOp::create(b, loc, bytes, 64);
      Value stream = LLVM::ZeroOp::create(b, loc, ptr);
      func::CallOp::create(b, loc, memcpy,
                           ValueRange{codegen::pointerTo(b, loc, device),
                                      codegen::pointerTo(b, loc, host), size,
                                      stream});
      for (memref::GetGlobalOp global : operands)
        global.getResult().replaceUsesWithIf(device, [](OpOperand &use) {
          Operation *user = use.getOwner();
          return !isa<memref::LoadOp, memref::StoreOp>(user) ||
                 user->getParentOfType<gpu::LaunchOp>();
        });
      copies.push_back(device);
    }
    function.walk([&](func::ReturnOp ret) {
      OpBuilder at(ret);
      for (Value device : copies)
        memref::DeallocOp::create(at, ret.getLoc(), device);
    });
  }
  return success();
}

/// Buffers that only host code reads and writes (the pointer arrays of the
/// deallocation of buffers with dynamic ownership) go on the host stack
/// instead of device memory.
void keepHostBuffersOnHost(ModuleOp module) {
  SmallVector<memref::AllocOp> allocs;
  module.walk([&](memref::AllocOp alloc) {
    if (alloc->getParentOfType<gpu::LaunchOp>() ||
        !alloc.getType().hasStaticShape() ||
        alloc.getType().getNumElements() > 4096)
      return;
    bool hostOnly = !alloc->use_empty();
    for (Operation *user : alloc->getUsers()) {
      bool access = isa<memref::LoadOp, memref::StoreOp>(user) &&
                    !user->getParentOfType<gpu::LaunchOp>();
      hostOnly &= access || isa<memref::DeallocOp>(user);
    }
    if (hostOnly)
      allocs.push_back(alloc);
  });
  for (memref::AllocOp alloc : allocs) {
    OpBuilder b(alloc);
    auto alloca = memref::AllocaOp::create(b, alloc.getLoc(), alloc.getType());
    for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
      if (isa<memref::DeallocOp>(user))
        user->erase();
    alloc.replaceAllUsesWith(alloca.getResult());
    alloc.erase();
  }
}

/// Host code may read and write only host memory: constants, stack
/// buffers. Anything else left outside a kernel is an error.
LogicalResult checkHostAccesses(ModuleOp module) {
  WalkResult result = module->walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (isa<gpu::GPUModuleOp>(op) || isa<gpu::LaunchOp>(op))
      return WalkResult::skip();
    Value memref;
    if (auto load = dyn_cast<memref::LoadOp>(op))
      memref = load.getMemRef();
    else if (auto store = dyn_cast<memref::StoreOp>(op))
      memref = store.getMemRef();
    if (!memref)
      return WalkResult::advance();
    Operation *def = memref.getDefiningOp();
    if (def && isa<memref::GetGlobalOp, memref::AllocaOp>(def))
      return WalkResult::advance();
    op->emitError() << "the GPU lowering cannot access this buffer from the "
                       "host (it lives in device memory): "
                    << *op;
    return WalkResult::interrupt();
  });
  return failure(result.wasInterrupted());
}

} // namespace

std::optional<GpuMath> parseGpuMath(StringRef name) {
  return llvm::StringSwitch<std::optional<GpuMath>>(name)
      .Case("f32", GpuMath::F32)
      .Case("tf32", GpuMath::TF32)
      .Case("bf16", GpuMath::BF16)
      .Default(std::nullopt);
}

LogicalResult lowerModuleForGpu(ModuleOp module,
                                const GpuLoweringOptions &options,
                                PipelineRunner runPipeline) {
  if (options.format != "isa" && options.format != "fatbin")
    return module.emitError()
           << "format=" << options.format << " is not one of isa (PTX), fatbin";
  codegen::ModelDescription description;
  description.target = "gpu";
  if (options.overlapComm)
    codegen::startAllReducesEarly(module);
  if (failed(codegen::prepareEntry(module, options.entry, description)))
    return failure();
  codegen::foldTransposesIntoContractions(module);
  if (failed(codegen::fuseElementwiseChains(module)))
    return failure();
  if (options.traceOps)
    codegen::insertTraceHooks(module, description.ops);
  if (failed(codegen::runParsed(module, codegen::getBufferizePipeline(),
                                runPipeline)))
    return failure();
  codegen::replaceCommunicationPlaceholders(module, options.overlapComm);
  codegen::replaceKernelsByGpuLibraryCalls(module,
                                           static_cast<int64_t>(options.math));
  copiesToLinalg(module);
  isolateKernels(module);
  if (failed(codegen::runParsed(module, kToParallelLoopsPipeline, runPipeline)))
    return failure();
  launchKernels(module);
  keepHostBuffersOnHost(module);
  if (failed(copyGlobalsToDevice(module)) || failed(checkHostAccesses(module)))
    return failure();
  module->setAttr("gpu.container_module", UnitAttr::get(module.getContext()));
  module->setAttr(SoapDialect::getTargetAttrName(),
                  StringAttr::get(module.getContext(), "gpu"));
  std::string libdevice = findLibdevice();
  if (libdevice.empty())
    return module.emitError()
           << "the GPU lowering needs libdevice "
              "(nvvm/libdevice/libdevice.10.bc) from the CUDA toolkit: set "
              "CUDA_HOME to the toolkit, or put its ptxas on PATH";
  std::string pipeline = toLLVMPipeline(options, libdevice);
  if (failed(codegen::runParsed(module, pipeline.c_str(), runPipeline)))
    return failure();
  return codegen::emitRuntimeInterface(module, codegen::kEntrySymbol,
                                       description);
}

void getGpuLoweringDependentDialects(DialectRegistry &registry) {
  getCpuLoweringDependentDialects(registry);
  GpuLoweringOptions defaults;
  std::string pipeline = toLLVMPipeline(defaults, "");
  for (const char *text : {kToParallelLoopsPipeline, pipeline.c_str()}) {
    OpPassManager pm(ModuleOp::getOperationName());
    if (succeeded(parsePassPipeline(text, pm)))
      pm.getDependentDialects(registry);
  }
  registry.insert<gpu::GPUDialect, NVVM::NVVMDialect, math::MathDialect>();
  // gpu-module-to-binary translates kernels to LLVM IR and compiles them.
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
}

} // namespace soap

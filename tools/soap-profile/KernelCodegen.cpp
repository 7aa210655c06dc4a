//===- KernelCodegen.cpp - one op as a JIT-compiled CPU kernel ------------===//

#include "KernelCodegen.h"

#include "soap/Dialect/Gather.h"
#include "soap/Runtime/Runtime.h"
#include "soap/codegen/BlasKernels.h"
#include "soap/codegen/CpuLowering.h"
#include "soap/codegen/TargetTuning.h"
#include "soap/codegen/Vectorize.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Hoisting.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/RegionUtils.h"

#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

using namespace mlir;

namespace soap::profile {

const char *codegenName(Codegen codegen) {
  switch (codegen) {
  case Codegen::Blas:
    return "blas";
  case Codegen::Vector:
    return "vector";
  case Codegen::Loops:
    break;
  }
  return "loops";
}

int64_t KernelBuffer::numElements() const {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  return n;
}

static std::string typeString(Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  type.print(os);
  return s;
}


std::optional<KernelModule>
buildKernelModule(Operation *op,
                  const std::vector<std::vector<int64_t>> &operandShapes,
                  std::string &error) {
  MLIRContext *context = op->getContext();
  // Values the body uses from above: a tensor (a gather's table, read with
  // tensor.extract) becomes one more buffer after the operands', whole, as
  // the partitioner materializes it; a scalar is a copy of its constant or,
  // when it is not one, a zero of its type, as for the operands below.
  llvm::SetVector<Value> captured;
  getUsedValuesDefinedAbove(op->getRegions(), captured);
  SmallVector<Value> capturedTensors, capturedScalars;
  for (Value value : captured) {
    if (auto tensor = dyn_cast<RankedTensorType>(value.getType())) {
      if (!tensor.hasStaticShape()) {
        error = "its body reads a tensor of dynamic shape from outside the op";
        return std::nullopt;
      }
      capturedTensors.push_back(value);
    } else if (value.getType().isIntOrIndexOrFloat()) {
      capturedScalars.push_back(value);
    } else {
      error = "its body uses a value of type " + typeString(value.getType()) +
              " defined outside the op";
      return std::nullopt;
    }
  }

  KernelModule result;
  SmallVector<Type> argTypes;
  SmallVector<Value> tensorOperands;
  for (Value operand : op->getOperands())
    if (isa<RankedTensorType>(operand.getType()))
      tensorOperands.push_back(operand);
  if (tensorOperands.size() > operandShapes.size()) {
    error = "internal: fewer operand shapes than tensor operands";
    return std::nullopt;
  }
  for (Value table : capturedTensors)
    tensorOperands.push_back(table);
  for (Value operand : tensorOperands) {
    auto tensor = cast<RankedTensorType>(operand.getType());
    size_t index = result.buffers.size();
    Type element = tensor.getElementType();
    if (!element.isIntOrIndexOrFloat()) {
      error =
          "operand element type " + typeString(element) + " is not a number";
      return std::nullopt;
    }
    KernelBuffer buffer;
    if (index < operandShapes.size())
      buffer.shape = operandShapes[index];
    else
      buffer.shape.assign(tensor.getShape().begin(), tensor.getShape().end());
    buffer.elementBytes =
        element.isIndex()
            ? 8
            : std::max<int64_t>(1, (element.getIntOrFloatBitWidth() + 7) / 8);
    buffer.dtype = typeString(element);
    argTypes.push_back(MemRefType::get(buffer.shape, element));
    result.buffers.push_back(std::move(buffer));
  }

  OpBuilder b(context);
  Location loc = UnknownLoc::get(context);
  result.module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(result.module->getBody());
  auto func =
      func::FuncOp::create(b, loc, "kernel", b.getFunctionType(argTypes, {}));
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  // The op runs on tensors that alias the buffers; bufferization later
  // makes it read and write them in place.
  auto dps = dyn_cast<DestinationStyleOpInterface>(op);
  SmallVector<Value> operands;
  SmallVector<Value> destinations; // buffer of each result
  // The stand-in for a scalar whose value does not matter to the timing.
  auto zeroOf = [&](Type type) -> Value {
    return arith::ConstantOp::create(b, loc,
                                     cast<TypedAttr>(b.getZeroAttr(type)));
  };
  unsigned nextArg = 0;
  for (OpOperand &operand : op->getOpOperands()) {
    auto tensor = dyn_cast<RankedTensorType>(operand.get().getType());
    if (tensor) {
      Value buffer = entry->getArgument(nextArg++);
      auto local =
          RankedTensorType::get(cast<MemRefType>(buffer.getType()).getShape(),
                                tensor.getElementType());
      bool isInit = dps && dps.isDpsInit(&operand);
      Value value = bufferization::ToTensorOp::create(
          b, loc, local, buffer, /*restrict=*/true, /*writable=*/isInit);
      // An output the model fills with zeros first is filled here too, so
      // that the lowering makes the call the executable makes (a product
      // that overwrites its output instead of adding to the zeros).
      if (isInit)
        if (auto fill = operand.get().getDefiningOp<linalg::FillOp>())
          if (matchPattern(fill.value(), m_AnyZeroFloat()))
            value = linalg::FillOp::create(
                        b, loc, zeroOf(tensor.getElementType()), value)
                        .getResult(0);
      operands.push_back(value);
      if (isInit)
        destinations.push_back(buffer);
      continue;
    }
    // A scalar (the value of linalg.fill): any constant will do.
    Type type = operand.get().getType();
    if (!type.isIntOrIndexOrFloat()) {
      error = "operand of type " + typeString(type) + " is not supported";
      return std::nullopt;
    }
    operands.push_back(zeroOf(type));
  }
  if (!dps || destinations.size() != op->getNumResults()) {
    error = "not an op that writes its results into its outputs";
    return std::nullopt;
  }
  IRMapping fromAbove;
  for (auto [i, table] : llvm::enumerate(capturedTensors)) {
    // A gather's table is the task's part of it (its rows and columns).
    Value buffer = entry->getArgument(nextArg + i);
    auto local = RankedTensorType::get(
        cast<MemRefType>(buffer.getType()).getShape(),
        cast<RankedTensorType>(table.getType()).getElementType());
    fromAbove.map(table, bufferization::ToTensorOp::create(
                             b, loc, local, buffer, /*restrict=*/true,
                             /*writable=*/false));
  }
  for (Value scalar : capturedScalars) {
    Operation *def = scalar.getDefiningOp();
    if (def && def->hasTrait<OpTrait::ConstantLike>() &&
        def->getNumResults() == 1)
      fromAbove.map(scalar, b.clone(*def)->getResult(0));
    else
      fromAbove.map(scalar, zeroOf(scalar.getType()));
  }
  SmallVector<Type> resultTypes;
  for (OpOperand &init : dps.getDpsInitsMutable())
    resultTypes.push_back(operands[init.getOperandNumber()].getType());
  Operation *copy = clone(b, op, resultTypes, operands);
  // The body's uses of values from above read the kernel's copies.
  for (Region &region : copy->getRegions())
    for (auto [from, to] : fromAbove.getValueMap())
      replaceAllUsesInRegionWith(from, to, region);
  // A task's part of a gather's table, looked up as the partitioner's
  // tasks do (rows it lacks yield zero).
  if (std::optional<GatherLookup> whole = matchGather(op))
    if (std::optional<GatherLookup> part = matchGather(copy))
      lookUpLocally(b, *whole, LocalTable{part->table(), {}}, part->extract);
  copy->setDiscardableAttrs(DictionaryAttr::get(context));
  copy->setLoc(loc);
  for (auto [value, buffer] : llvm::zip(copy->getResults(), destinations))
    bufferization::MaterializeInDestinationOp::create(
        b, loc, Type(), value, buffer, /*restrict=*/false, /*writable=*/true);
  func::ReturnOp::create(b, loc);

  DiagnosticCollector diagnostics(context);
  if (failed(verify(*result.module))) {
    error = "the kernel does not verify: " + diagnostics.text;
    return std::nullopt;
  }
  return result;
}

/// Tiles and vectorizes the kernel's linalg op in place.
static bool tileAndVectorize(func::FuncOp func, std::string &error) {
  linalg::LinalgOp target;
  func.walk([&](linalg::LinalgOp op) { target = op; });
  if (!target) {
    error = "no linalg op in the kernel";
    return false;
  }
  return codegen::tileAndVectorize(target, error);
}

LogicalResult runPasses(ModuleOp module, OpPassManager &pipeline) {
  PassManager pm(module.getContext(), ModuleOp::getOperationName());
  static_cast<OpPassManager &>(pm) = pipeline;
  return pm.run(module);
}

bool runPipeline(ModuleOp module, llvm::StringRef pipeline,
                 llvm::StringRef what, std::string &error) {
  PassManager pm(module.getContext(), ModuleOp::getOperationName());
  std::string parseError;
  llvm::raw_string_ostream os(parseError);
  if (failed(parsePassPipeline(pipeline, pm, os))) {
    error = "internal: bad pass pipeline: " + parseError;
    return false;
  }
  DiagnosticCollector diagnostics(module.getContext());
  if (failed(pm.run(module))) {
    error = (what + " failed: " + diagnostics.text).str();
    return false;
  }
  return true;
}

std::vector<std::vector<int64_t>> tensorOperandShapes(Operation *op) {
  std::vector<std::vector<int64_t>> shapes;
  for (Value operand : op->getOperands())
    if (auto tensor = dyn_cast<RankedTensorType>(operand.getType()))
      shapes.emplace_back(tensor.getShape().begin(), tensor.getShape().end());
  return shapes;
}

bool lowerKernelToLLVM(ModuleOp module, Codegen codegen, std::string &error) {
  if (codegen == Codegen::Vector) {
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      bool hasLinalg = false;
      func.walk([&](linalg::LinalgOp) { hasLinalg = true; });
      if (hasLinalg && !tileAndVectorize(func, error))
        return false;
    }
    // Bufferize, fold the tiles' subviews into the transfers and hoist
    // loop-invariant code, so that output tiles stay in registers across
    // reduction loops.
    if (!runPipeline(module,
                     "func.func(canonicalize, cse), one-shot-bufferize, "
                     "func.func(canonicalize, cse, fold-memref-alias-ops, "
                     "loop-invariant-code-motion, canonicalize, cse)",
                     "lowering", error))
      return false;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      linalg::hoistRedundantVectorTransfers(func);
      if (!codegen::lowerVectorOps(func, error))
        return false;
    }
  } else if (!runPipeline(module, "one-shot-bufferize, func.func(canonicalize)",
                          "lowering", error)) {
    return false;
  } else if (codegen == Codegen::Blas &&
             codegen::replaceKernelsByBlasCalls(module) == 0) {
    error = "no op became a libsoaprt BLAS call (the runtime's kernels "
            "cannot express its dimensions)";
    return false;
  }
  // As --soap-lower-cpu's defaults do.
  tileTransposingLoopNests(module);
  accumulateReductionsInRegisters(module, /*reassociate=*/true);
  codegen::approximateMathFunctions(module);
  return runPipeline(module, getCpuToLLVMPipeline(), "lowering", error);
}

//===----------------------------------------------------------------------===//
// JIT
//===----------------------------------------------------------------------===//

void registerKernelCodegen(DialectRegistry &registry) {
  static bool initialized = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    return true;
  }();
  (void)initialized;
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
}

void fillBuffer(void *data, const KernelBuffer &buffer, size_t index) {
  int64_t n = buffer.numElements();
  uint64_t state = 0x9E3779B97F4A7C15ull * (index + 1);
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return 0.5 + static_cast<double>(state >> 11) * 0x1.0p-54;
  };
  if (buffer.dtype == "f32") {
    auto *p = static_cast<float *>(data);
    for (int64_t i = 0; i < n; ++i)
      p[i] = static_cast<float>(next());
  } else if (buffer.dtype == "f64") {
    auto *p = static_cast<double *>(data);
    for (int64_t i = 0; i < n; ++i)
      p[i] = next();
  } else {
    std::memset(data, 0, static_cast<size_t>(buffer.bytes()));
  }
}

std::unique_ptr<CompiledKernel>
CompiledKernel::create(ModuleOp module, const std::string &function,
                       const std::vector<KernelBuffer> &buffers,
                       std::string &error,
                       const std::vector<int64_t> &extraArgs) {
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder) {
    error = "cannot target this CPU: " + llvm::toString(builder.takeError());
    return nullptr;
  }
  builder->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  // The executable's tuning, so that kernels are timed as they will run.
  soap::codegen::addCodegenTuning(builder->getTargetTriple(),
                                  builder->getFeatures());
  auto machine = builder->createTargetMachine();
  if (!machine) {
    error = "cannot target this CPU: " + llvm::toString(machine.takeError());
    return nullptr;
  }
  // The optimizer needs the target machine to know the vector width.
  auto transformer = makeOptimizingTransformer(3, 0, machine->get());
  ExecutionEngineOptions options;
  options.transformer = transformer;
  options.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Aggressive;
  options.enableGDBNotificationListener = false;
  options.enablePerfNotificationListener = false;
  DiagnosticCollector diagnostics(module.getContext());
  auto engine = ExecutionEngine::create(module, options, std::move(*machine));
  if (!engine) {
    error = "JIT compilation failed: " + llvm::toString(engine.takeError());
    if (!diagnostics.text.empty())
      error += ": " + diagnostics.text.substr(0, diagnostics.text.find('\n'));
    return nullptr;
  }
  // Calls that replaceKernelsByBlasCalls made: libsoaprt is linked into
  // soap-profile, so the kernels the executables call are right here.
  (*engine)->registerSymbols([](llvm::orc::MangleAndInterner interner) {
    llvm::orc::SymbolMap symbols;
    auto add = [&](const char *name, auto *address) {
      symbols[interner(name)] = {
          llvm::orc::ExecutorAddr::fromPtr(reinterpret_cast<void *>(address)),
          llvm::JITSymbolFlags::Exported};
    };
    // The lowering's buffers (finalize-memref-to-llvm's generic functions)
    // on the host, as CPU executables allocate them.
    add("_mlir_memref_to_llvm_alloc", &soaprt_host_alloc);
    add("_mlir_memref_to_llvm_aligned_alloc", &soaprt_host_aligned_alloc);
    add("_mlir_memref_to_llvm_free", &soaprt_host_free);
    add("soaprt_matmul_f32", &soaprt_matmul_f32);
    add("soaprt_matmul_f64", &soaprt_matmul_f64);
    add("soaprt_batch_matmul_f32", &soaprt_batch_matmul_f32);
    add("soaprt_batch_matmul_f64", &soaprt_batch_matmul_f64);
    add("soaprt_conv2d_nchw_fchw_f32", &soaprt_conv2d_nchw_fchw_f32);
    add("soaprt_conv2d_nchw_fchw_f64", &soaprt_conv2d_nchw_fchw_f64);
    add("soaprt_conv2d_grouped_f32", &soaprt_conv2d_grouped_f32);
    add("soaprt_conv2d_grouped_f64", &soaprt_conv2d_grouped_f64);
    add("soaprt_conv2d_spread_f32", &soaprt_conv2d_spread_f32);
    return symbols;
  });
  auto entry = (*engine)->lookupPacked(function);
  if (!entry) {
    error = "JIT: " + llvm::toString(entry.takeError());
    return nullptr;
  }

  std::unique_ptr<CompiledKernel> kernel(new CompiledKernel());
  kernel->engine = std::move(*engine);
  kernel->entry = *entry;
  for (const KernelBuffer &buffer : buffers) {
    size_t bytes = static_cast<size_t>(std::max<int64_t>(buffer.bytes(), 1));
    bytes = (bytes + 63) / 64 * 64;
    void *data = std::aligned_alloc(64, bytes);
    if (!data) {
      error = "cannot allocate " + std::to_string(bytes) + " bytes";
      return nullptr;
    }
    kernel->data.push_back(data);
    kernel->specs.push_back(buffer);
    fillBuffer(data, buffer, kernel->data.size() - 1);
  }
  kernel->scalars = extraArgs;
  // The packed entry takes a pointer to each argument: to each buffer
  // pointer, then to each scalar.
  for (void *&data : kernel->data)
    kernel->argPointers.push_back(&data);
  for (int64_t &scalar : kernel->scalars)
    kernel->argPointers.push_back(&scalar);
  return kernel;
}

CompiledKernel::~CompiledKernel() {
  for (void *data : data)
    std::free(data);
}

bool CompiledKernel::coldCaches = false;

/// Writes a buffer twice the size of the core's L2 cache (at least 1 MiB),
/// one byte per cache line, so that the kernel's buffers have left the
/// core's private caches (the shared last level may still hold them).
static void evictPrivateCaches() {
  static std::vector<char> scratch = [] {
    long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    size_t bytes = std::clamp<size_t>(l2 > 0 ? 2 * size_t(l2) : 8u << 20,
                                      1u << 20, 64u << 20);
    return std::vector<char>(bytes);
  }();
  for (size_t k = 0; k < scratch.size(); k += 64)
    scratch[k] += 1;
}

double CompiledKernel::medianSeconds(int warmup, int repeat) {
  using Clock = std::chrono::steady_clock;
  // At least one untimed call: it also sizes the batches.
  warmup = std::max(warmup, 1);
  auto start = Clock::now();
  for (int i = 0; i < warmup; ++i)
    run();
  double perCall =
      std::chrono::duration<double>(Clock::now() - start).count() / warmup;
  // Kernels shorter than the clock's resolution run in batches of at least
  // about 20 us; a sample is the batch's time per call.
  int batch = static_cast<int>(
      std::clamp(2e-5 / std::max(perCall, 1e-12), 1.0, 10000.0));
  std::vector<double> times;
  for (int i = 0; i < std::max(repeat, 1); ++i) {
    if (coldCaches)
      evictPrivateCaches();
    auto begin = Clock::now();
    for (int j = 0; j < batch; ++j)
      run();
    times.push_back(
        std::chrono::duration<double>(Clock::now() - begin).count() / batch);
  }
  std::sort(times.begin(), times.end());
  size_t n = times.size();
  return n % 2 ? times[n / 2] : (times[n / 2 - 1] + times[n / 2]) / 2;
}

template <typename T>
static bool compareValues(const void *a, const void *b, int64_t n,
                          double tolerance, int64_t &where) {
  const T *x = static_cast<const T *>(a), *y = static_cast<const T *>(b);
  for (int64_t i = 0; i < n; ++i) {
    double u = static_cast<double>(x[i]), v = static_cast<double>(y[i]);
    if (u == v)
      continue;
    if (std::isnan(u) && std::isnan(v))
      continue;
    if (!(std::fabs(u - v) <=
          tolerance * std::max(std::fabs(u), std::fabs(v)))) {
      where = i;
      return false;
    }
  }
  return true;
}

bool sameResults(CompiledKernel &a, CompiledKernel &b,
                 std::string &difference) {
  if (a.numBuffers() != b.numBuffers()) {
    difference = "different numbers of buffers";
    return false;
  }
  std::vector<std::vector<char>> before;
  for (size_t i = 0; i < a.numBuffers(); ++i) {
    const char *data = static_cast<const char *>(a.buffer(i));
    before.emplace_back(data, data + a.bufferSpec(i).bytes());
  }
  a.run();
  b.run();
  bool wrote = false;
  for (size_t i = 0; i < a.numBuffers(); ++i)
    wrote |= std::memcmp(before[i].data(), a.buffer(i), before[i].size()) != 0;
  if (!wrote) {
    difference = "the kernel left every buffer as it was";
    return false;
  }
  for (size_t i = 0; i < a.numBuffers(); ++i) {
    const KernelBuffer &spec = a.bufferSpec(i);
    int64_t n = spec.numElements(), where = -1;
    bool same;
    if (spec.dtype == "f32")
      same = compareValues<float>(a.buffer(i), b.buffer(i), n, 1e-4, where);
    else if (spec.dtype == "f64")
      same = compareValues<double>(a.buffer(i), b.buffer(i), n, 1e-4, where);
    else
      same = std::memcmp(a.buffer(i), b.buffer(i),
                         static_cast<size_t>(spec.bytes())) == 0;
    if (!same) {
      difference = "buffer " + std::to_string(i) + " differs" +
                   (where >= 0 ? " at element " + std::to_string(where) : "");
      return false;
    }
  }
  return true;
}

std::unique_ptr<CompiledKernel>
compileOpKernel(Operation *op,
                const std::vector<std::vector<int64_t>> &operandShapes,
                Codegen codegen, Codegen &used, std::string &error,
                std::string *fallbackReason) {
  std::optional<KernelModule> kernel =
      buildKernelModule(op, operandShapes, error);
  if (!kernel)
    return nullptr;
  if (codegen != Codegen::Loops) {
    // The op as the kernel holds it (on tensors), judged as the CPU
    // lowering judges it: a BLAS call, a vectorized tile, or loops.
    bool blasKernels = codegen == Codegen::Blas;
    bool blas = false, vector = false;
    kernel->module->walk([&](linalg::LinalgOp linalgOp) {
      blas |= blasKernels && linalgOp.hasPureTensorSemantics() &&
              codegen::blasTakes(linalgOp);
      vector |= codegen::vectorizedByLowering(linalgOp, blasKernels);
    });
    codegen = blas ? Codegen::Blas : vector ? Codegen::Vector : Codegen::Loops;
  }
  used = codegen;
  if (!lowerKernelToLLVM(*kernel->module, codegen, error)) {
    if (codegen == Codegen::Loops)
      return nullptr;
    // The vectorizer declined (or its lowering failed), or BLAS did not take
    // the op (the CPU lowering makes loops of it too): scalar loops.
    if (fallbackReason)
      *fallbackReason =
          std::string(codegen == Codegen::Blas ? "not blas: "
                                               : "not vectorized: ") +
          error.substr(0, error.find('\n'));
    kernel = buildKernelModule(op, operandShapes, error);
    if (!kernel)
      return nullptr;
    used = Codegen::Loops;
    if (!lowerKernelToLLVM(*kernel->module, Codegen::Loops, error))
      return nullptr;
  }
  return CompiledKernel::create(*kernel->module, "kernel", kernel->buffers,
                                error);
}

extern "C" void openblas_set_num_threads(int);

void useOneBlasThread() { openblas_set_num_threads(1); }

} // namespace soap::profile

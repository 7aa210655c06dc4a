//===- GpuProfiler.cpp - op shards compiled for and timed on a GPU --------===//
//
// A function to time becomes a training step that lowerModuleForGpu
// accepts (it returns what it computes, plus a constant loss the driver
// would print), is lowered with trace hooks around every linalg op, and is
// JIT-compiled. The hooks resolve to recorders of CUDA events on
// libsoaprt_gpu's compute stream, which every library call, generated
// kernel and copy of the step is enqueued on; so an op's time is its own
// work on the GPU, not the host's launch latency, the allocations or the
// copies into the step's results. The ops to time are told apart by their
// location (soap_model_info names each traced op with it).
//
//===----------------------------------------------------------------------===//

#include "GpuProfiler.h"

#include "CalibrationMath.h"
#include "HostBenchmarks.h"
#include "KernelCodegen.h"

#include "soap/Autodiff/TrainingStep.h"
#include "soap/Runtime/Runtime.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/RegionUtils.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <set>

using namespace mlir;

namespace soap::profile {

bool builtWithGpuSupport() { return true; }

namespace {

/// The location that marks the op timeOp times, and the forward op that a
/// backward function holds (not timed).
constexpr llvm::StringLiteral kMeasured = "soap-profile.measured";
constexpr llvm::StringLiteral kNotTimed = "soap-profile.not-timed";

/// The open device's architecture, for generated kernels.
std::string deviceChip;

bool checked(cudaError_t status, const char *call, std::string &error) {
  if (status == cudaSuccess)
    return true;
  error = std::string(call) + " failed: " + cudaGetErrorString(status);
  return false;
}

/// CUDA events around each traced op of one run of a step, recorded on the
/// compute stream by the step's soaprt_op_begin/end calls.
struct OpEvents {
  cudaStream_t stream = nullptr;
  std::vector<cudaEvent_t> pool;
  size_t used = 0;
  std::vector<std::pair<int64_t, cudaEvent_t>> open;
  std::vector<std::tuple<int64_t, cudaEvent_t, cudaEvent_t>> closed;
  cudaError_t status = cudaSuccess;

  cudaEvent_t record() {
    if (used == pool.size()) {
      cudaEvent_t event = nullptr;
      cudaError_t created = cudaEventCreate(&event);
      if (created != cudaSuccess) {
        status = created;
        return nullptr;
      }
      pool.push_back(event);
    }
    cudaEvent_t event = pool[used++];
    cudaError_t recorded = cudaEventRecord(event, stream);
    if (recorded != cudaSuccess)
      status = recorded;
    return event;
  }
  void reset() {
    used = 0;
    open.clear();
    closed.clear();
  }
};

OpEvents &opEvents() {
  static OpEvents events;
  return events;
}

void recordOpBegin(int64_t id) {
  OpEvents &e = opEvents();
  e.open.emplace_back(id, e.record());
}

void recordOpEnd(int64_t id) {
  OpEvents &e = opEvents();
  if (e.open.empty())
    return;
  cudaEvent_t begin = e.open.back().second;
  e.open.pop_back();
  e.closed.emplace_back(id, begin, e.record());
}

/// What a lowered step calls, for the JIT: libsoaprt_gpu (linked into
/// soap-profile) and the event recorders in place of the trace hooks.
llvm::orc::SymbolMap gpuRuntimeSymbols(llvm::orc::MangleAndInterner interner) {
  llvm::orc::SymbolMap symbols;
  auto add = [&](const char *name, auto *address) {
    symbols[interner(name)] = {
        llvm::orc::ExecutorAddr::fromPtr(reinterpret_cast<void *>(address)),
        llvm::JITSymbolFlags::Exported};
  };
  add("soaprt_op_begin", &recordOpBegin);
  add("soaprt_op_end", &recordOpEnd);
  add("soaprt_gpu_matmul_f32", &soaprt_gpu_matmul_f32);
  add("soaprt_gpu_batch_matmul_f32", &soaprt_gpu_batch_matmul_f32);
  add("soaprt_gpu_conv2d_nchw_fchw_f32", &soaprt_gpu_conv2d_nchw_fchw_f32);
  add("soaprt_gpu_pool2d_nchw_f32", &soaprt_gpu_pool2d_nchw_f32);
  add("mgpuModuleLoad", &mgpuModuleLoad);
  add("mgpuModuleLoadJIT", &mgpuModuleLoadJIT);
  add("mgpuModuleUnload", &mgpuModuleUnload);
  add("mgpuModuleGetFunction", &mgpuModuleGetFunction);
  add("mgpuLaunchKernel", &mgpuLaunchKernel);
  add("mgpuStreamCreate", &mgpuStreamCreate);
  add("mgpuStreamSynchronize", &mgpuStreamSynchronize);
  add("mgpuStreamDestroy", &mgpuStreamDestroy);
  add("mgpuEventCreate", &mgpuEventCreate);
  add("mgpuEventDestroy", &mgpuEventDestroy);
  add("mgpuEventSynchronize", &mgpuEventSynchronize);
  add("mgpuEventRecord", &mgpuEventRecord);
  add("mgpuStreamWaitEvent", &mgpuStreamWaitEvent);
  add("mgpuMemAlloc", &mgpuMemAlloc);
  add("mgpuMemFree", &mgpuMemFree);
  add("mgpuMemcpy", &mgpuMemcpy);
  add("mgpuMemset32", &mgpuMemset32);
  add("mgpuMemset16", &mgpuMemset16);
  add("_mlir_memref_to_llvm_alloc", &_mlir_memref_to_llvm_alloc);
  add("_mlir_memref_to_llvm_aligned_alloc",
      &_mlir_memref_to_llvm_aligned_alloc);
  add("_mlir_memref_to_llvm_free", &_mlir_memref_to_llvm_free);
  return symbols;
}

/// A buffer of the step's argument or result `type` (a static tensor).
KernelBuffer bufferOf(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  Type element = tensor.getElementType();
  KernelBuffer buffer;
  buffer.shape.assign(tensor.getShape().begin(), tensor.getShape().end());
  buffer.elementBytes =
      element.isIndex()
          ? 8
          : std::max<int64_t>(1, (element.getIntOrFloatBitWidth() + 7) / 8);
  std::string text;
  llvm::raw_string_ostream os(text);
  element.print(os);
  buffer.dtype = text;
  return buffer;
}

/// Device buffers of a step, freed with it.
struct DeviceBuffers {
  std::vector<void *> pointers;
  ~DeviceBuffers() {
    for (void *p : pointers)
      cudaFree(p);
  }
};

/// `function` returns a constant 0 as its loss too, so that it is a
/// training step to lowerModuleForGpu.
void addLossResult(func::FuncOp function) {
  auto ret = cast<func::ReturnOp>(function.getBody().back().getTerminator());
  OpBuilder b(ret);
  auto scalar = RankedTensorType::get({}, b.getF32Type());
  Value loss = arith::ConstantOp::create(
      b, ret.getLoc(), DenseElementsAttr::get(scalar, 0.0f));
  ret.getOperandsMutable().append(loss);
  SmallVector<Type> results(function.getResultTypes());
  results.push_back(scalar);
  function.setFunctionType(
      b.getFunctionType(function.getArgumentTypes(), results));
  function.setResultAttr(results.size() - 1, "soap.role",
                         b.getStringAttr("loss"));
}

} // namespace

bool openGpu(std::string &description, std::string &error) {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count < 1) {
    error = "no CUDA device usable: " +
            std::string(status != cudaSuccess ? cudaGetErrorString(status)
                                              : "no CUDA device found");
    return false;
  }
  // libsoaprt_gpu picks the device (SOAP_GPU_DEVICE, else the first) and
  // creates the compute stream.
  opEvents().stream = static_cast<cudaStream_t>(mgpuStreamCreate());
  int device = 0;
  cudaDeviceProp properties;
  if (!checked(cudaGetDevice(&device), "cudaGetDevice", error) ||
      !checked(cudaGetDeviceProperties(&properties, device),
               "cudaGetDeviceProperties", error))
    return false;
  deviceChip = "sm_" + std::to_string(properties.major) +
               std::to_string(properties.minor);
  description = llvm::formatv("{0} ({1}, {2:F1} GiB, device {3} of {4})",
                              properties.name, deviceChip,
                              properties.totalGlobalMem / double(1 << 30),
                              device, count)
                    .str();
  return true;
}

GpuShardTimer::GpuShardTimer(GpuTimingOptions options)
    : timing(std::move(options)) {}

GpuShardTimer::~GpuShardTimer() = default;

namespace {

/// Lowers `module`'s `entry` (a function on tensors whose ops to time are
/// those `timed` accepts by location) as a training step, runs it and
/// returns the median over the runs of the summed GPU time of those ops.
/// `library` gets what runs the work: cublas, cudnn or kernel.
std::optional<double>
lowerAndTime(ModuleOp module, StringRef entry,
             llvm::function_ref<bool(StringRef location)> timed,
             const GpuTimingOptions &timing, std::string &library,
             std::string &error) {
  MLIRContext *context = module.getContext();
  auto function = module.lookupSymbol<func::FuncOp>(entry);
  addLossResult(function);
  std::vector<KernelBuffer> buffers;
  for (Type type : function.getArgumentTypes())
    buffers.push_back(bufferOf(type));
  size_t numArgs = buffers.size();
  for (Type type : function.getResultTypes())
    buffers.push_back(bufferOf(type));

  GpuLoweringOptions lowering;
  lowering.entry = entry.str();
  lowering.math = timing.math;
  lowering.chip = timing.chip.empty() ? deviceChip : timing.chip;
  // PTX 8.0 (CUDA 12.0) knows architectures up to sm_90; newer ones need
  // the PTX of CUDA 12.8.
  if (lowering.chip.size() > 5 && lowering.chip.compare(3, 2, "10") >= 0)
    lowering.features = "+ptx87";
  lowering.format = "isa";
  lowering.traceOps = true;
  {
    DiagnosticCollector diagnostics(context);
    auto run = [&](OpPassManager &pm) { return runPasses(module, pm); };
    if (failed(lowerModuleForGpu(module, lowering, run))) {
      error = "the GPU lowering failed: " + diagnostics.text;
      return std::nullopt;
    }
  }
  library = "kernel";
  for (auto callee : module.getOps<LLVM::LLVMFuncOp>()) {
    StringRef name = callee.getSymName();
    if (name.starts_with("soaprt_gpu_conv") ||
        name.starts_with("soaprt_gpu_pool"))
      library = "cudnn";
    else if (name.starts_with("soaprt_gpu_") && library != "cudnn")
      library = "cublas";
  }

  ExecutionEngineOptions options;
  options.enableGDBNotificationListener = false;
  options.enablePerfNotificationListener = false;
  auto engine = ExecutionEngine::create(module, options);
  if (!engine) {
    error = "JIT compilation failed: " + llvm::toString(engine.takeError());
    return std::nullopt;
  }
  (*engine)->registerSymbols(gpuRuntimeSymbols);
  (*engine)->initialize();
  auto info = (*engine)->lookup("soap_model_info");
  auto step = (*engine)->lookup("soap_train_step_packed");
  if (!info || !step) {
    error = "JIT: " + llvm::toString(info ? step.takeError()
                                          : info.takeError());
    return std::nullopt;
  }
  // The ids of the ops to time, by the location in their names.
  std::set<int64_t> ids;
  llvm::Expected<llvm::json::Value> parsed =
      llvm::json::parse(static_cast<const char *>(*info));
  if (!parsed) {
    error = "internal: soap_model_info: " + llvm::toString(parsed.takeError());
    return std::nullopt;
  }
  if (const llvm::json::Array *ops =
          parsed->getAsObject() ? parsed->getAsObject()->getArray("ops")
                                : nullptr)
    for (auto [id, op] : llvm::enumerate(*ops)) {
      StringRef name = op.getAsString().value_or("");
      size_t open = name.rfind(" (");
      StringRef location =
          open == StringRef::npos ? "" : name.drop_front(open + 2).drop_back();
      if (timed(location))
        ids.insert(static_cast<int64_t>(id));
    }
  if (ids.empty()) {
    error = "internal: no traced op to time in the lowered step";
    return std::nullopt;
  }

  DeviceBuffers device;
  for (auto [index, buffer] : llvm::enumerate(buffers)) {
    size_t bytes = static_cast<size_t>(std::max<int64_t>(buffer.bytes(), 1));
    void *p = nullptr;
    if (!checked(cudaMalloc(&p, bytes), "cudaMalloc", error))
      return std::nullopt;
    device.pointers.push_back(p);
    if (index >= numArgs)
      continue;
    std::vector<char> host(bytes);
    fillBuffer(host.data(), buffer, index);
    if (!checked(cudaMemcpy(p, host.data(), bytes, cudaMemcpyHostToDevice),
                 "cudaMemcpy", error))
      return std::nullopt;
  }

  auto run = reinterpret_cast<void (*)(void **)>(*step);
  OpEvents &events = opEvents();
  auto runOnce = [&]() -> std::optional<double> {
    events.reset();
    run(device.pointers.data());
    if (!checked(cudaStreamSynchronize(events.stream), "cudaStreamSynchronize",
                 error) ||
        !checked(events.status, "cudaEventRecord", error))
      return std::nullopt;
    double seconds = 0;
    for (auto [id, begin, end] : events.closed) {
      if (!ids.count(id))
        continue;
      float ms = 0;
      if (!checked(cudaEventElapsedTime(&ms, begin, end),
                   "cudaEventElapsedTime", error))
        return std::nullopt;
      seconds += ms * 1e-3;
    }
    return seconds;
  };
  // The first run also loads the kernels and lets the libraries choose
  // their algorithms.
  std::optional<double> first = runOnce();
  if (!first)
    return std::nullopt;
  if (*first > timing.maxOpSeconds) {
    error = llvm::formatv("one run took {0:F3} s (--max-op-seconds)", *first)
                .str();
    return std::nullopt;
  }
  for (int i = 1; i < timing.warmup; ++i)
    if (!runOnce())
      return std::nullopt;
  std::vector<double> times;
  for (int i = 0; i < std::max(timing.repeat, 1); ++i) {
    std::optional<double> t = runOnce();
    if (!t)
      return std::nullopt;
    times.push_back(*t);
  }
  return median(times);
}

} // namespace

std::optional<double>
GpuShardTimer::timeOp(Operation *op,
                      const std::vector<std::vector<int64_t>> &shapes,
                      std::string &how, std::string &error) {
  MLIRContext *context = op->getContext();
  llvm::SetVector<Value> captured;
  getUsedValuesDefinedAbove(op->getRegions(), captured);
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!captured.empty() || !linalgOp) {
    error = captured.empty() ? "not a linalg op"
                             : "its body uses value(s) defined outside the op";
    return std::nullopt;
  }
  // @kernel(inputs at local shapes) -> (results): the op's outputs are new
  // tensors (zeros where the op reads them), as a training step's are.
  Location loc = UnknownLoc::get(context);
  OpBuilder b(context);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  SmallVector<Type> argTypes;
  size_t next = 0;
  for (OpOperand &operand : op->getOpOperands())
    if (auto tensor = dyn_cast<RankedTensorType>(operand.get().getType())) {
      auto local = RankedTensorType::get(shapes.at(next++),
                                         tensor.getElementType());
      if (!linalgOp.isDpsInit(&operand))
        argTypes.push_back(local);
    }
  auto function =
      func::FuncOp::create(b, loc, "kernel", b.getFunctionType(argTypes, {}));
  Block *entry = function.addEntryBlock();
  b.setInsertionPointToStart(entry);
  SmallVector<Value> operands;
  SmallVector<Type> resultTypes;
  next = 0;
  size_t nextArg = 0;
  for (OpOperand &operand : op->getOpOperands()) {
    Type type = operand.get().getType();
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor) {
      operands.push_back(arith::ConstantOp::create(
          b, loc, cast<TypedAttr>(b.getZeroAttr(type))));
      continue;
    }
    auto local =
        RankedTensorType::get(shapes.at(next++), tensor.getElementType());
    if (!linalgOp.isDpsInit(&operand)) {
      operands.push_back(entry->getArgument(nextArg++));
      continue;
    }
    Value init = tensor::EmptyOp::create(b, loc, local.getShape(),
                                         local.getElementType());
    if (linalgOp.payloadUsesValueFromOperand(&operand)) {
      Value zero = arith::ConstantOp::create(
          b, loc, cast<TypedAttr>(b.getZeroAttr(local.getElementType())));
      init = linalg::FillOp::create(b, NameLoc::get(b.getStringAttr(kNotTimed)),
                                    zero, init)
                 .getResult(0);
    }
    operands.push_back(init);
    resultTypes.push_back(local);
  }
  Operation *copy = clone(b, op, resultTypes, operands);
  copy->setDiscardableAttrs(DictionaryAttr::get(context));
  copy->setLoc(NameLoc::get(b.getStringAttr(kMeasured)));
  func::ReturnOp::create(b, loc, copy->getResults());
  function.setFunctionType(b.getFunctionType(argTypes, resultTypes));
  return lowerAndTime(
      *module, "kernel",
      [](StringRef location) { return location == kMeasured; }, timing, how,
      error);
}

std::optional<double> GpuShardTimer::timeFunction(ModuleOp module,
                                                  StringRef function,
                                                  Operation *exclude,
                                                  std::string &error) {
  if (exclude)
    exclude->setLoc(NameLoc::get(
        StringAttr::get(module.getContext(), kNotTimed)));
  std::string library;
  return lowerAndTime(
      module, function,
      [](StringRef location) { return location != kNotTimed; }, timing,
      library, error);
}

std::optional<double> timeGpuUpdate(MLIRContext &context,
                                    GpuShardTimer &timer,
                                    const std::string &optimizer,
                                    int64_t elements, std::string &error) {
  std::optional<UpdateOperands> operands =
      updateOperands(context, optimizer, elements, error);
  if (!operands)
    return std::nullopt;
  const autodiff::TrainingStepOptions &options = operands->options;
  // @update(parameter, gradient, state...) -> (new parameter, new state...).
  SmallVector<Type> inputs(operands->types.begin(), operands->types.end());
  OpBuilder b(&context);
  Location loc = UnknownLoc::get(&context);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  auto function =
      func::FuncOp::create(b, loc, "update", b.getFunctionType(inputs, {}));
  Block *entry = function.addEntryBlock();
  b.setInsertionPointToStart(entry);
  SmallVector<Value> newParams, newState;
  SmallVector<Value> state(entry->getArguments().drop_front(2));
  autodiff::emitOptimizerUpdates(b, loc, options, entry->getArgument(0),
                                 entry->getArgument(1), state, newParams,
                                 newState);
  SmallVector<Value> results(newParams);
  llvm::append_range(results, newState);
  func::ReturnOp::create(b, loc, results);
  function.setFunctionType(
      b.getFunctionType(inputs, ValueRange(results).getTypes()));
  return timer.timeFunction(*module, "update", nullptr, error);
}

} // namespace soap::profile

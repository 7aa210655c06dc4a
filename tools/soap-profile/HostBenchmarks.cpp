//===- HostBenchmarks.cpp - peak FLOP/s and memory bandwidth of a core ----===//

#include "HostBenchmarks.h"

#include "soap/Autodiff/TrainingStep.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <unistd.h>
#include <vector>

using namespace mlir;

namespace soap::profile {

using Clock = std::chrono::steady_clock;

static double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

static std::unique_ptr<CompiledKernel>
compileText(MLIRContext &context, const std::string &text,
            const std::vector<KernelBuffer> &buffers, Codegen codegen,
            std::string &error, const std::vector<int64_t> &extraArgs = {}) {
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &context);
  if (!module) {
    error = "internal: a benchmark kernel does not parse";
    return nullptr;
  }
  if (!lowerKernelToLLVM(*module, codegen, error))
    return nullptr;
  return CompiledKernel::create(*module, "kernel", buffers, error, extraArgs);
}

/// `chains` independent chains x = fma(x, a, b) of vector<lanes x type>,
/// `n` steps each: 2 * chains * lanes FLOP per step. The chains start from
/// different values so that the compiler cannot merge them.
static std::string peakKernelText(const std::string &type, int lanes,
                                  int chains) {
  std::string vec = llvm::formatv("vector<{0}x{1}>", lanes, type).str();
  int elements = lanes * (chains + 3);
  std::string mem = llvm::formatv("memref<{0}x{1}>", elements, type).str();
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "func.func @kernel(%buf: " << mem << ", %n: i64) {\n"
     << "  %c0 = arith.constant 0 : index\n"
     << "  %c1 = arith.constant 1 : index\n";
  for (int i = 0; i < chains + 3; ++i)
    os << "  %o" << i << " = arith.constant " << i * lanes << " : index\n";
  os << "  %a = vector.load %buf[%o0] : " << mem << ", " << vec << "\n"
     << "  %b = vector.load %buf[%o1] : " << mem << ", " << vec << "\n";
  for (int i = 0; i < chains; ++i)
    os << "  %i" << i << " = vector.load %buf[%o" << i + 2 << "] : " << mem
       << ", " << vec << "\n";
  os << "  %steps = arith.index_cast %n : i64 to index\n"
     << "  %r:" << chains
     << " = scf.for %k = %c0 to %steps step %c1 iter_args(";
  for (int i = 0; i < chains; ++i)
    os << (i ? ", " : "") << "%x" << i << " = %i" << i;
  os << ") -> (";
  for (int i = 0; i < chains; ++i)
    os << (i ? ", " : "") << vec;
  os << ") {\n";
  for (int i = 0; i < chains; ++i)
    os << "    %y" << i << " = vector.fma %x" << i << ", %a, %b : " << vec
       << "\n";
  os << "    scf.yield ";
  for (int i = 0; i < chains; ++i)
    os << (i ? ", " : "") << "%y" << i;
  os << " : ";
  for (int i = 0; i < chains; ++i)
    os << (i ? ", " : "") << vec;
  os << "\n  }\n";
  // Keep every chain alive: their sum goes back to memory.
  os << "  %s0 = arith.addf %r#0, %r#1 : " << vec << "\n";
  for (int i = 2; i < chains; ++i)
    os << "  %s" << i - 1 << " = arith.addf %s" << i - 2 << ", %r#" << i
       << " : " << vec << "\n";
  os << "  vector.store %s" << chains - 2 << ", %buf[%o" << chains + 2
     << "] : " << mem << ", " << vec << "\n"
     << "  return\n}\n";
  return s;
}

/// FLOP/s of the FMA chains: the best of a few runs of about 0.1 s.
static std::optional<double> measurePeak(MLIRContext &context,
                                         const std::string &type,
                                         int elementBytes, std::string &error) {
  // 64-byte vectors (one AVX-512 register, two AVX2 ones) and enough
  // chains to cover the FMA latency of two FMA units.
  int lanes = 64 / elementBytes;
  int chains = 16;
  KernelBuffer buffer;
  buffer.shape = {lanes * (chains + 3)};
  buffer.elementBytes = elementBytes;
  buffer.dtype = type;
  int64_t steps = 1000;
  auto kernel = compileText(context, peakKernelText(type, lanes, chains),
                            {buffer}, Codegen::Loops, error, {steps});
  if (!kernel)
    return std::nullopt;
  // Grow the step count until a run takes about 0.1 s, then take the
  // best of five runs.
  double seconds = 0;
  for (int attempt = 0; attempt < 20; ++attempt) {
    kernel->setExtraArg(0, steps);
    auto start = Clock::now();
    kernel->run();
    seconds = secondsSince(start);
    if (seconds >= 0.05)
      break;
    steps *= seconds < 0.005 ? 16 : 2;
  }
  double flops = 2.0 * chains * lanes * static_cast<double>(steps);
  double best = flops / seconds;
  for (int i = 0; i < 5; ++i) {
    auto start = Clock::now();
    kernel->run();
    best = std::max(best, flops / secondsSince(start));
  }
  return best;
}

static std::optional<double> measureMatmul(MLIRContext &context, int n,
                                           Codegen codegen,
                                           std::string &error) {
  std::string type = llvm::formatv("memref<{0}x{0}xf32>", n).str();
  std::string text = "func.func @kernel(%a: " + type + ", %b: " + type +
                     ", %c: " + type +
                     ") {\n  linalg.matmul ins(%a, %b : " + type + ", " + type +
                     ") outs(%c : " + type + ")\n  return\n}\n";
  KernelBuffer buffer;
  buffer.shape = {n, n};
  std::unique_ptr<CompiledKernel> kernel;
  kernel = compileText(context, text, {buffer, buffer, buffer}, codegen, error);
  if (!kernel && codegen != Codegen::Loops)
    kernel = compileText(context, text, {buffer, buffer, buffer},
                         Codegen::Loops, error);
  if (!kernel)
    return std::nullopt;
  // One run checks the code: C = C0 + A B at a few elements.
  const float *a = static_cast<const float *>(kernel->buffer(0));
  const float *b = static_cast<const float *>(kernel->buffer(1));
  const float *c = static_cast<const float *>(kernel->buffer(2));
  std::vector<std::pair<int, int>> probes = {
      {0, 0}, {n / 2, n / 3}, {n - 1, n - 1}};
  std::vector<double> expected;
  for (auto [i, j] : probes) {
    double sum = c[i * n + j];
    for (int k = 0; k < n; ++k)
      sum += static_cast<double>(a[i * n + k]) * b[k * n + j];
    expected.push_back(sum);
  }
  double flops = 2.0 * n * static_cast<double>(n) * n;
  auto start = Clock::now();
  kernel->run();
  double once = secondsSince(start);
  for (size_t p = 0; p < probes.size(); ++p) {
    auto [i, j] = probes[p];
    if (std::fabs(c[i * n + j] - expected[p]) > 1e-4 * std::fabs(expected[p])) {
      error = llvm::formatv("the compiled matmul computes C[{0}][{1}] = {2}, "
                            "not {3}",
                            i, j, c[i * n + j], expected[p])
                  .str();
      return std::nullopt;
    }
  }
  int repeat =
      static_cast<int>(std::clamp(0.5 / std::max(once, 1e-9), 3.0, 50.0));
  return flops / kernel->medianSeconds(1, repeat);
}

int64_t defaultStreamBytes() {
  int64_t cache = 0;
#ifdef _SC_LEVEL3_CACHE_SIZE
  cache = std::max<int64_t>(cache, sysconf(_SC_LEVEL3_CACHE_SIZE));
#endif
#ifdef _SC_LEVEL2_CACHE_SIZE
  cache = std::max<int64_t>(cache, sysconf(_SC_LEVEL2_CACHE_SIZE));
#endif
  int64_t bytes = std::max<int64_t>(4 * cache, int64_t(64) << 20);
  int64_t physical =
      static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  if (physical > 0)
    bytes = std::min(bytes, physical / 8);
  return bytes;
}

extern "C" void memrefCopy(int64_t elemSize, void *src, void *dst);

/// A pad as executables do it (--soap-lower-cpu): fill the padded buffer,
/// then libsoaprt's memrefCopy of the image into its interior; median of
/// 51 runs, as bytes read and written per second.
static double measurePad() {
  const int64_t n = 8, c = 32, h = 16, w = 16, ph = h + 2, pw = w + 2;
  std::vector<float> in(n * c * h * w, 1.0f), out(n * c * ph * pw);
  // Ranked descriptors {allocated, aligned, offset, sizes[4], strides[4]}
  // and their unranked wrappers {rank, descriptor}, as MLIR passes them.
  struct Descriptor {
    void *allocated, *aligned;
    int64_t offset, sizes[4], strides[4];
  };
  struct Unranked {
    int64_t rank;
    void *descriptor;
  };
  Descriptor from{in.data(), in.data(), 0, {n, c, h, w},
                  {c * h * w, h * w, w, 1}};
  Descriptor to{out.data(), out.data(), pw + 1, {n, c, h, w},
                {c * ph * pw, ph * pw, pw, 1}};
  Unranked src{4, &from}, dst{4, &to};
  std::vector<double> times;
  for (int i = 0; i < 51; ++i) {
    auto start = std::chrono::steady_clock::now();
    std::fill(out.begin(), out.end(), 0.0f);
    memrefCopy(sizeof(float), &src, &dst);
    times.push_back(secondsSince(start));
  }
  std::sort(times.begin(), times.end());
  double bytes = sizeof(float) * double(in.size() + out.size());
  return bytes / times[times.size() / 2];
}

/// STREAM copy (c = a) and triad (a = b + s * c) on doubles, best of five;
/// bytes counted as STREAM does (no write-allocate traffic).
static void measureStream(int64_t bytesPerArray, double &copy, double &triad) {
  size_t n = static_cast<size_t>(bytesPerArray / sizeof(double));
  std::vector<double> a(n, 1.0), b(n, 2.0), c(n, 0.0);
  const double s = 3.0;
  copy = triad = 0;
  for (int rep = 0; rep < 5; ++rep) {
    auto start = Clock::now();
    for (size_t i = 0; i < n; ++i)
      c[i] = a[i];
    copy = std::max(copy, 16.0 * n / secondsSince(start));
    start = Clock::now();
    for (size_t i = 0; i < n; ++i)
      a[i] = b[i] + s * c[i];
    triad = std::max(triad, 24.0 * n / secondsSince(start));
  }
  // Keep the loops: their results are observed.
  volatile double sink = a[n / 2] + c[n / 3];
  (void)sink;
}

std::optional<UpdateOperands> updateOperands(MLIRContext &context,
                                             const std::string &optimizer,
                                             int64_t elements,
                                             std::string &error) {
  UpdateOperands result;
  std::optional<autodiff::OptimizerKind> kind =
      autodiff::parseOptimizerKind(optimizer);
  if (!kind) {
    error = "unknown optimizer '" + optimizer + "'";
    return std::nullopt;
  }
  result.options.optimizer = *kind;
  auto param = RankedTensorType::get({elements}, Float32Type::get(&context));
  result.types = {param, param};
  llvm::append_range(result.types, autodiff::optimizerStateTypes(
                                       result.options, param, &context));
  return result;
}

std::optional<double> measureUpdate(MLIRContext &context,
                                    const std::string &optimizer,
                                    int64_t elements, std::string &error) {
  std::optional<UpdateOperands> operands =
      updateOperands(context, optimizer, elements, error);
  if (!operands)
    return std::nullopt;
  const autodiff::TrainingStepOptions &options = operands->options;
  // One parameter of `elements` f32, its gradient and its optimizer state
  // in buffers; the new parameter and state written into buffers of their
  // own (as bufferization gives @train_step's results).
  SmallVector<RankedTensorType> inputs = operands->types;
  RankedTensorType param = inputs.front();
  SmallVector<RankedTensorType> outputs(inputs.begin() + 1, inputs.end());
  outputs.front() = param; // the new parameter, then the new state
  std::vector<KernelBuffer> buffers;
  SmallVector<Type> argTypes;
  for (RankedTensorType type :
       llvm::concat<RankedTensorType>(inputs, outputs)) {
    KernelBuffer buffer;
    buffer.shape.assign(type.getShape().begin(), type.getShape().end());
    buffer.elementBytes = 4;
    buffer.dtype = "f32";
    buffers.push_back(std::move(buffer));
    argTypes.push_back(MemRefType::get(type.getShape(), type.getElementType()));
  }
  OpBuilder b(&context);
  Location loc = UnknownLoc::get(&context);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  auto func =
      func::FuncOp::create(b, loc, "kernel", b.getFunctionType(argTypes, {}));
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  SmallVector<Value> values;
  for (auto [type, buffer] : llvm::zip(inputs, entry->getArguments()))
    values.push_back(bufferization::ToTensorOp::create(
        b, loc, type, buffer, /*restrict=*/true, /*writable=*/false));
  SmallVector<Value> newParams, newState;
  autodiff::emitOptimizerUpdates(b, loc, options, values[0], values[1],
                                 ArrayRef<Value>(values).drop_front(2),
                                 newParams, newState);
  for (auto [value, buffer] :
       llvm::zip(llvm::concat<Value>(newParams, newState),
                 entry->getArguments().drop_front(inputs.size()))) {
    // The op writes straight into the buffer instead of a fresh tensor
    // (no allocation and copy per run: executables reuse their freed
    // buffers), as buildKernelModule's kernels do.
    auto op = value.getDefiningOp<DestinationStyleOpInterface>();
    if (op && op.getNumDpsInits() == 1 &&
        op.getDpsInits()[0].getDefiningOp<tensor::EmptyOp>()) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(op);
      op.getDpsInitsMutable()[0].set(bufferization::ToTensorOp::create(
          b, loc, value.getType(), buffer, /*restrict=*/true,
          /*writable=*/true));
    }
    bufferization::MaterializeInDestinationOp::create(
        b, loc, Type(), value, buffer, /*restrict=*/false, /*writable=*/true);
  }
  func::ReturnOp::create(b, loc);
  if (!lowerKernelToLLVM(*module, Codegen::Loops, error))
    return std::nullopt;
  auto kernel = CompiledKernel::create(*module, "kernel", buffers, error);
  if (!kernel)
    return std::nullopt;
  return kernel->medianSeconds(3, 11);
}

std::optional<HostMeasurements> measureHost(MLIRContext &context,
                                            const HostBenchmarkOptions &options,
                                            std::string &error) {
  HostMeasurements m;
  auto f32 = measurePeak(context, "f32", 4, error);
  if (!f32)
    return std::nullopt;
  m.peakFlopsF32 = *f32;
  auto f64 = measurePeak(context, "f64", 8, error);
  if (!f64)
    return std::nullopt;
  m.peakFlopsF64 = *f64;

  m.matmulSize = options.matmulSize;
  auto matmul =
      measureMatmul(context, options.matmulSize, options.codegen, error);
  if (!matmul)
    return std::nullopt;
  m.matmulFlops = *matmul;

  auto empty = compileText(context, "func.func @kernel() { return }\n", {},
                           Codegen::Loops, error);
  if (!empty)
    return std::nullopt;
  m.callOverhead = empty->medianSeconds(1000, 10001);

  m.streamBytes =
      options.streamBytes > 0 ? options.streamBytes : defaultStreamBytes();
  measureStream(m.streamBytes, m.copyBandwidth, m.triadBandwidth);
  m.padBandwidth = measurePad();
  return m;
}

} // namespace soap::profile

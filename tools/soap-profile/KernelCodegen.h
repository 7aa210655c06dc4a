//===- KernelCodegen.h - one op as a JIT-compiled CPU kernel ----*- C++ -*-===//
//
// soap-profile measures an op by running it alone: a copy of the op on
// buffers of a task's local shapes, in a function
//
//   func.func @kernel(%b0: memref<...>, %b1: memref<...>, ...)
//
// lowered to LLVM with upstream passes and compiled for this CPU by
// mlir::ExecutionEngine at -O3. The kernel takes bare pointers (static
// shapes), so the caller passes one pointer per buffer.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_TOOLS_PROFILE_KERNELCODEGEN_H
#define SOAP_TOOLS_PROFILE_KERNELCODEGEN_H

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OwningOpRef.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace soap::profile {

/// Collects the diagnostics emitted while alive into one line.
class DiagnosticCollector {
public:
  explicit DiagnosticCollector(mlir::MLIRContext *context)
      : handler(context, [this](mlir::Diagnostic &diag) {
          if (!text.empty())
            text += "; ";
          text += diag.str();
          return mlir::success();
        }) {}
  std::string text;

private:
  mlir::ScopedDiagnosticHandler handler;
};

/// How a kernel is lowered.
enum class Codegen {
  /// What `--soap-lower-cpu` (kernels=blas, its default) emits: an op it
  /// sends to libsoaprt (soap::codegen::blasTakes: contractions and
  /// conv_2d_nchw_fchw on f32/f64) becomes the same OpenBLAS-backed
  /// soaprt_* call after bufferization (replaceKernelsByBlasCalls), or
  /// scalar loops when that call cannot express it, as in the lowering;
  /// other ops are compiled as Vector.
  Blas,
  /// Tile the op so that its innermost loop becomes a vector (and, for
  /// contractions, a register block of the output), vectorize the tile,
  /// keep output tiles in registers across the reduction; falls back to
  /// Loops for ops the vectorizer does not handle.
  Vector,
  /// linalg-to-loops: scalar loops that LLVM's optimizer may vectorize.
  Loops,
};
const char *codegenName(Codegen codegen);

/// One argument of a kernel.
struct KernelBuffer {
  std::vector<int64_t> shape;
  int64_t elementBytes = 4;
  /// "f32", "f64": filled with values in [0.5, 1); other element types
  /// (indices, labels, f16) are zero, which is a valid index.
  std::string dtype = "f32";

  int64_t numElements() const;
  int64_t bytes() const { return numElements() * elementBytes; }
};

/// Fills `data` (host memory of `buffer.bytes()`) as kernels' buffers are
/// filled: values in [0.5, 1) from a fixed sequence (no denormals, no
/// zeros to divide by, no overflow in exp of a sum) for f32 and f64, zeros
/// otherwise. Each buffer gets its own sequence (`index`), so that an op
/// that copies one buffer into another changes it.
void fillBuffer(void *data, const KernelBuffer &buffer, size_t index);

/// A module holding `@kernel`, and the buffers its arguments need.
struct KernelModule {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::vector<KernelBuffer> buffers;
};

/// Builds the kernel module for `op`, a linalg structured op on tensors:
/// its tensor operands become buffers (memrefs) of `operandShapes` (one
/// shape per tensor operand, in operand order) that the copy of the op
/// reads through bufferization.to_tensor and writes its results into with
/// bufferization.materialize_in_destination. Scalar operands become
/// constants. Fails, with the reason in `error`, for ops whose body uses
/// values defined outside the op, and when the copy does not verify.
std::optional<KernelModule>
buildKernelModule(mlir::Operation *op,
                  const std::vector<std::vector<int64_t>> &operandShapes,
                  std::string &error);

/// Lowers a kernel module (linalg on tensors as buildKernelModule makes it,
/// or vector/scf/arith code on memrefs) to the LLVM dialect: tiling and
/// vectorization (Codegen::Vector), one-shot bufferization, libsoaprt calls
/// (Codegen::Blas: fails when no op becomes one), then upstream
/// conversions. With Codegen::Vector or Codegen::Blas the caller should
/// rebuild the module and retry with Codegen::Loops when this fails.
bool lowerKernelToLLVM(mlir::ModuleOp module, Codegen codegen,
                       std::string &error);

/// A compiled kernel with its own buffers.
class CompiledKernel {
public:
  /// JIT-compiles `module` (already in the LLVM dialect) at -O3 for the host
  /// CPU, and allocates and fills `buffers`. Calls of libsoaprt's BLAS
  /// kernels resolve to the copies linked into soap-profile. `function` takes one pointer
  /// per buffer, then `extraArgs` (int64 values) when given.
  static std::unique_ptr<CompiledKernel>
  create(mlir::ModuleOp module, const std::string &function,
         const std::vector<KernelBuffer> &buffers, std::string &error,
         const std::vector<int64_t> &extraArgs = {});
  ~CompiledKernel();

  /// Calls the kernel once.
  void run() { entry(argPointers.data()); }
  /// Seconds of one call of run(): the median of `repeat` samples taken
  /// after `warmup` untimed calls (at least one). Kernels shorter than about 20
  /// us are timed in batches of back-to-back calls (a sample is the batch's
  /// time per call), since one call is below the clock's resolution.
  double medianSeconds(int warmup, int repeat);
  /// When set, every sample starts with the kernel's buffers out of the
  /// core's private caches (evictPrivateCaches): in a training step, other
  /// ops run between two runs of a kernel. Off: back to back on warm
  /// buffers.
  static bool coldCaches;
  void *buffer(size_t i) { return data[i]; }
  size_t numBuffers() const { return data.size(); }
  const KernelBuffer &bufferSpec(size_t i) const { return specs[i]; }
  /// Changes the value of the i-th extra argument.
  void setExtraArg(size_t i, int64_t value) { scalars[i] = value; }

private:
  CompiledKernel() = default;
  std::unique_ptr<mlir::ExecutionEngine> engine;
  void (*entry)(void **) = nullptr;
  std::vector<void *> data;
  std::vector<KernelBuffer> specs;
  std::vector<int64_t> scalars;
  std::vector<void *> argPointers;
};

/// Runs `pipeline` on `module` with a pass manager of its own (the
/// PipelineRunner that soap-profile gives the CPU and GPU lowerings).
mlir::LogicalResult runPasses(mlir::ModuleOp module,
                              mlir::OpPassManager &pipeline);

/// Runs the passes of `pipeline` (text, without the "builtin.module(...)"
/// around them) on `module`; false, with "WHAT failed: " and the
/// diagnostics in `error`, when they fail.
bool runPipeline(mlir::ModuleOp module, llvm::StringRef pipeline,
                 llvm::StringRef what, std::string &error);

/// The shapes of `op`'s tensor operands, in order (a kernel of the op at
/// the shapes it has).
std::vector<std::vector<int64_t>> tensorOperandShapes(mlir::Operation *op);

/// Builds, lowers and compiles a kernel for `op` (buildKernelModule, then
/// lowerKernelToLLVM with `codegen`, falling back to Codegen::Loops), and
/// says which codegen it used in `used` and, after a fallback, why in
/// `fallbackReason` ("not blas: ..." or "not vectorized: ..."). With Codegen::Blas an op that the CPU lowering does not
/// send to BLAS is compiled as Codegen::Vector.
std::unique_ptr<CompiledKernel>
compileOpKernel(mlir::Operation *op,
                const std::vector<std::vector<int64_t>> &operandShapes,
                Codegen codegen, Codegen &used, std::string &error,
                std::string *fallbackReason = nullptr);

/// Whether two kernels compiled from the same op (e.g. with different
/// codegens), each run once from their freshly filled buffers, left the
/// same values in every buffer (floats to a relative 1e-4, to allow for
/// reassociated sums), and changed at least one of them. Otherwise
/// `difference` names the first mismatch.
bool sameResults(CompiledKernel &a, CompiledKernel &b, std::string &difference);

/// Registers the dialects and LLVM translations kernels need in `registry`,
/// and initializes the native target (once).
void registerKernelCodegen(mlir::DialectRegistry &registry);

/// Makes OpenBLAS run on one thread (a device of cpu-local.json is one
/// core, and executables run with OPENBLAS_NUM_THREADS=1), whatever
/// OPENBLAS_NUM_THREADS says.
void useOneBlasThread();

} // namespace soap::profile

#endif // SOAP_TOOLS_PROFILE_KERNELCODEGEN_H

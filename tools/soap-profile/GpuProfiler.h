//===- GpuProfiler.h - op shards and calibration on a GPU -------*- C++ -*-===//
//
// `soap-profile --device gpu`: an op shard is compiled as --soap-lower-gpu
// compiles a training step (lowerModuleForGpu: cuBLAS/cuDNN calls of
// libsoaprt_gpu where the lowering makes them, generated CUDA kernels
// otherwise), JIT-compiled with mlir::ExecutionEngine, run on device
// buffers, and timed with CUDA events recorded on libsoaprt_gpu's compute
// stream around the op (the lowering's trace hooks, soaprt_op_begin/end,
// resolve to the profiler's event recorders).
//
// No CUDA types here: soap-profile includes this header in every build.
// GpuProfiler.cpp and GpuCalibration.cpp implement it where libsoaprt_gpu
// is built (SOAP_HAVE_CUDA); GpuUnavailable.cpp, which says that this
// build has no GPU support, everywhere else.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_TOOLS_PROFILE_GPUPROFILER_H
#define SOAP_TOOLS_PROFILE_GPUPROFILER_H

#include "soap/codegen/GpuLowering.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace soap::profile {

/// Whether this soap-profile was built with libsoaprt_gpu.
bool builtWithGpuSupport();

/// Starts libsoaprt_gpu on a usable CUDA device. Otherwise false, with a
/// one-line `error`: "no CUDA device usable: <CUDA's reason>", or that
/// this build has no GPU support. `description` gets the device's name,
/// compute capability and memory.
bool openGpu(std::string &description, std::string &error);

/// How kernels are compiled and timed on the GPU.
struct GpuTimingOptions {
  /// The arithmetic of cuBLAS/cuDNN calls (--soap-lower-gpu's math=).
  GpuMath math = GpuMath::F32;
  /// The architecture generated kernels are compiled for (chip=); empty:
  /// the open device's (sm_XY).
  std::string chip;
  int warmup = 3;
  int repeat = 10;
  /// A kernel whose first run takes longer is not timed further.
  double maxOpSeconds = 2;
};

/// Compiles and times functions on the GPU (openGpu first).
class GpuShardTimer {
public:
  explicit GpuShardTimer(GpuTimingOptions options);
  ~GpuShardTimer();

  /// Seconds of `op` (a linalg op on tensors) on operands of the local
  /// `shapes` (one per tensor operand): the median over `repeat` runs of
  /// its work on the GPU. `how` says what runs it ("cublas", "cudnn" or
  /// "kernel": a generated CUDA kernel). Nothing, with `error`, when it
  /// cannot be compiled or its first run exceeds maxOpSeconds.
  std::optional<double> timeOp(mlir::Operation *op,
                               const std::vector<std::vector<int64_t>> &shapes,
                               std::string &how, std::string &error);

  /// Seconds of all linalg ops of `function` (on tensors, returning what it
  /// computes) but `exclude` (may be null), added up; `function` is lowered
  /// in place (its module must hold nothing else that matters).
  std::optional<double> timeFunction(mlir::ModuleOp module,
                                     llvm::StringRef function,
                                     mlir::Operation *exclude,
                                     std::string &error);

  const GpuTimingOptions &options() const { return timing; }

private:
  GpuTimingOptions timing;
};

/// Seconds of one `optimizer` update ("sgd", "momentum", "adam") of
/// `elements` f32 parameters on the GPU: the ops --soap-training-step emits
/// for it, timed by `timer`.
std::optional<double> timeGpuUpdate(mlir::MLIRContext &context,
                                    GpuShardTimer &timer,
                                    const std::string &optimizer,
                                    int64_t elements, std::string &error);

/// `soap-profile --device gpu --calibrate`.
struct GpuCalibrationOptions {
  /// The machine file to start from (a path or a name in machines/).
  std::string base = "h100-8";
  /// Where to write; empty: <base name>-calibrated.json in the current
  /// folder (never over a file of machines/ unless the user says so).
  std::string output;
  /// The N x N x N f32 product timed through libsoaprt_gpu's cuBLAS call.
  int matmulSize = 8192;
  /// Bytes of the device-to-device copy that measures memory bandwidth.
  int64_t bandwidthBytes = int64_t(1) << 30;
  /// Largest NCCL all-reduce (with several local GPUs).
  int64_t maxMessageBytes = int64_t(256) << 20;
  std::string chip; ///< for the generated elementwise kernel
  bool quiet = false;
};

/// Measures this node's GPUs and writes the calibrated machine file;
/// returns the exit code. Fails, with one line, without a usable GPU.
int runGpuCalibration(mlir::MLIRContext &context,
                      const GpuCalibrationOptions &options);

} // namespace soap::profile

#endif // SOAP_TOOLS_PROFILE_GPUPROFILER_H

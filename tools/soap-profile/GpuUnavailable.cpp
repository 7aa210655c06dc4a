//===- GpuUnavailable.cpp - GpuProfiler.h in a build without CUDA ---------===//
//
// Built instead of GpuProfiler.cpp and GpuCalibration.cpp when libsoaprt_gpu
// is not (-DSOAP_ENABLE_GPU=OFF, or no CUDA toolkit, cuDNN or NCCL at
// configure time): every GPU mode says so and fails.
//
//===----------------------------------------------------------------------===//

#include "GpuProfiler.h"

#include "llvm/Support/raw_ostream.h"

namespace soap::profile {

static const char *const kNoGpuSupport =
    "this soap-profile was built without GPU support (libsoaprt_gpu: CUDA, "
    "cuDNN and NCCL were not found at configure time, or "
    "-DSOAP_ENABLE_GPU=OFF)";

bool builtWithGpuSupport() { return false; }

bool openGpu(std::string &, std::string &error) {
  error = kNoGpuSupport;
  return false;
}

GpuShardTimer::GpuShardTimer(GpuTimingOptions options)
    : timing(std::move(options)) {}

GpuShardTimer::~GpuShardTimer() = default;

std::optional<double>
GpuShardTimer::timeOp(mlir::Operation *,
                      const std::vector<std::vector<int64_t>> &,
                      std::string &, std::string &error) {
  error = kNoGpuSupport;
  return std::nullopt;
}

std::optional<double> GpuShardTimer::timeFunction(mlir::ModuleOp,
                                                  llvm::StringRef,
                                                  mlir::Operation *,
                                                  std::string &error) {
  error = kNoGpuSupport;
  return std::nullopt;
}

std::optional<double> timeGpuUpdate(mlir::MLIRContext &, GpuShardTimer &,
                                    const std::string &, int64_t,
                                    std::string &error) {
  error = kNoGpuSupport;
  return std::nullopt;
}

int runGpuCalibration(mlir::MLIRContext &, const GpuCalibrationOptions &) {
  llvm::errs() << "soap-profile: " << kNoGpuSupport << "\n";
  return 1;
}

} // namespace soap::profile

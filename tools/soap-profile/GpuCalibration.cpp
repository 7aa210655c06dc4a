//===- GpuCalibration.cpp - calibrate a GPU machine file ------------------===//
//
// `soap-profile --device gpu --calibrate`: on this node's GPU, through what
// executables run (libsoaprt_gpu):
//   - dense f32 products through soaprt_gpu_matmul_f32 in each math mode
//     (f32, tf32, bf16): the matmul efficiency is the f32 mode's (the
//     default of --soap-lower-gpu) over the machine's f32 peak;
//   - memory bandwidth: a device-to-device copy (bytes read + written);
//   - the elementwise efficiency: an f32 add compiled by the GPU lowering
//     (a generated kernel), over that bandwidth;
//   - launch overhead: back-to-back launches of an empty kernel;
//   - with several local GPUs, NCCL all-reduce over all of them, fitted as
//     the ring model of docs/machines.md (latency and bandwidth of a link).
// Every other field keeps the base file's value.
//
//===----------------------------------------------------------------------===//

#include "CalibrationMath.h"
#include "GpuProfiler.h"
#include "KernelCodegen.h"
#include "MachineFiles.h"

#include "soap/Runtime/Runtime.h"
#include "soap/machine/Machine.h"
#include "soap/support/AtomicFile.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Parser/Parser.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>

namespace soap::profile {

namespace {

int fail(const std::string &message) {
  llvm::errs() << "soap-profile: " << message << "\n";
  return 1;
}

bool checked(cudaError_t status, const char *call, std::string &error) {
  if (status == cudaSuccess)
    return true;
  error = std::string(call) + " failed: " + cudaGetErrorString(status);
  return false;
}

bool checked(ncclResult_t status, const char *call, std::string &error) {
  if (status == ncclSuccess)
    return true;
  error = std::string(call) + " failed: " + ncclGetErrorString(status);
  return false;
}

cudaStream_t computeStream() {
  return static_cast<cudaStream_t>(mgpuStreamCreate());
}

/// The median GPU time of `samples` runs of `work` (after `warmup`), each
/// bracketed by events on the compute stream.
template <typename Work>
std::optional<double> timeOnStream(int warmup, int samples, Work work,
                                   std::string &error) {
  cudaStream_t stream = computeStream();
  cudaEvent_t begin, end;
  if (!checked(cudaEventCreate(&begin), "cudaEventCreate", error) ||
      !checked(cudaEventCreate(&end), "cudaEventCreate", error))
    return std::nullopt;
  for (int i = 0; i < warmup; ++i)
    work();
  std::vector<double> times;
  for (int i = 0; i < samples; ++i) {
    float ms = 0;
    if (!checked(cudaEventRecord(begin, stream), "cudaEventRecord", error))
      return std::nullopt;
    work();
    if (!checked(cudaEventRecord(end, stream), "cudaEventRecord", error) ||
        !checked(cudaEventSynchronize(end), "cudaEventSynchronize", error) ||
        !checked(cudaEventElapsedTime(&ms, begin, end),
                 "cudaEventElapsedTime", error))
      return std::nullopt;
    times.push_back(ms * 1e-3);
  }
  cudaEventDestroy(begin);
  cudaEventDestroy(end);
  return median(times);
}

/// Device memory freed on scope exit.
struct DeviceMemory {
  void *data = nullptr;
  ~DeviceMemory() { cudaFree(data); }
  bool allocate(size_t bytes, std::string &error) {
    return checked(cudaMalloc(&data, bytes), "cudaMalloc", error);
  }
};

/// FLOP/s of an n x n x n f32 product through libsoaprt_gpu's cuBLAS call
/// in each math mode (SOAPRT_MATH_*: f32, tf32, bf16).
std::optional<std::vector<double>> measureMatmul(int n, std::string &error) {
  size_t bytes = size_t(n) * n * 4;
  DeviceMemory a, b, c;
  if (!a.allocate(bytes, error) || !b.allocate(bytes, error) ||
      !c.allocate(bytes, error))
    return std::nullopt;
  KernelBuffer spec;
  spec.shape = {n, n};
  std::vector<char> host(bytes);
  DeviceMemory *operands[] = {&a, &b};
  for (size_t index = 0; index < 2; ++index) {
    fillBuffer(host.data(), spec, index);
    if (!checked(cudaMemcpy(operands[index]->data, host.data(), bytes,
                            cudaMemcpyHostToDevice),
                 "cudaMemcpy", error))
      return std::nullopt;
  }
  if (!checked(cudaMemset(c.data, 0, bytes), "cudaMemset", error))
    return std::nullopt;
  std::vector<double> flops;
  for (int64_t math : {SOAPRT_MATH_F32, SOAPRT_MATH_TF32, SOAPRT_MATH_BF16}) {
    auto product = [&] {
      soaprt_gpu_matmul_f32(math, n, n, n, static_cast<float *>(a.data), n, 1,
                            static_cast<float *>(b.data), n, 1,
                            static_cast<float *>(c.data), n, 1);
    };
    std::optional<double> seconds = timeOnStream(2, 5, product, error);
    if (!seconds)
      return std::nullopt;
    flops.push_back(2.0 * n * n * double(n) / *seconds);
  }
  return flops;
}

/// Bytes per second read and written by a device-to-device copy.
std::optional<double> measureCopy(int64_t bytes, std::string &error) {
  DeviceMemory from, to;
  if (!from.allocate(bytes, error) || !to.allocate(bytes, error))
    return std::nullopt;
  cudaStream_t stream = computeStream();
  cudaError_t status = cudaSuccess;
  std::optional<double> seconds = timeOnStream(
      2, 10,
      [&] {
        cudaError_t s = cudaMemcpyAsync(to.data, from.data, bytes,
                                        cudaMemcpyDeviceToDevice, stream);
        if (s != cudaSuccess)
          status = s;
      },
      error);
  if (!seconds || !checked(status, "cudaMemcpyAsync", error))
    return std::nullopt;
  return 2.0 * bytes / *seconds;
}

/// An empty kernel in PTX (the driver compiles it for the device).
constexpr const char *kEmptyKernel = ".version 7.0\n"
                                     ".target sm_75\n"
                                     ".address_size 64\n"
                                     ".visible .entry soap_profile_empty()\n"
                                     "{\n"
                                     "  ret;\n"
                                     "}\n";

/// Seconds per kernel of back-to-back launches of an empty kernel.
std::optional<double> measureLaunch(std::string &error) {
  void *module = mgpuModuleLoadJIT(const_cast<char *>(kEmptyKernel), 2);
  void *function = mgpuModuleGetFunction(module, "soap_profile_empty");
  cudaStream_t stream = computeStream();
  constexpr int kLaunches = 1000;
  std::optional<double> seconds = timeOnStream(
      1, 5,
      [&] {
        for (int i = 0; i < kLaunches; ++i)
          mgpuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, stream, nullptr,
                           nullptr, 0);
      },
      error);
  if (!seconds)
    return std::nullopt;
  return *seconds / kLaunches;
}

/// Bytes per second (read + written) of an f32 add of `elements` compiled
/// by the GPU lowering (a generated kernel).
std::optional<double> measureElementwise(mlir::MLIRContext &context,
                                         GpuShardTimer &timer,
                                         int64_t elements,
                                         std::string &error) {
  std::string type = "tensor<" + std::to_string(elements) + "xf32>";
  std::string text = "func.func @add(%a: " + type + ", %b: " + type +
                     ", %c: " + type + ") -> " + type +
                     " {\n  %r = linalg.add ins(%a, %b : " + type + ", " +
                     type + ") outs(%c : " + type + ") -> " + type +
                     "\n  return %r : " + type + "\n}\n";
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(text, &context);
  mlir::Operation *add = nullptr;
  if (module)
    module->walk([&](mlir::linalg::AddOp op) { add = op; });
  if (!add) {
    error = "internal: the elementwise benchmark does not parse";
    return std::nullopt;
  }
  std::string how;
  std::optional<double> seconds =
      timer.timeOp(add, {{elements}, {elements}, {elements}}, how, error);
  if (!seconds)
    return std::nullopt;
  return 12.0 * elements / *seconds;
}

/// NCCL all-reduce (f32 sum) over all local GPUs: median seconds by size.
std::optional<std::vector<std::pair<int64_t, double>>>
measureAllReduce(int devices, int64_t maxBytes, std::string &error) {
  int current = 0;
  cudaGetDevice(&current);
  std::vector<int> list(devices);
  for (int d = 0; d < devices; ++d)
    list[d] = d;
  std::vector<ncclComm_t> comms(devices);
  if (!checked(ncclCommInitAll(comms.data(), devices, list.data()),
               "ncclCommInitAll", error))
    return std::nullopt;
  std::vector<cudaStream_t> streams(devices);
  std::vector<void *> send(devices), receive(devices);
  for (int d = 0; d < devices; ++d) {
    if (!checked(cudaSetDevice(d), "cudaSetDevice", error) ||
        !checked(cudaStreamCreate(&streams[d]), "cudaStreamCreate", error) ||
        !checked(cudaMalloc(&send[d], maxBytes), "cudaMalloc", error) ||
        !checked(cudaMalloc(&receive[d], maxBytes), "cudaMalloc", error) ||
        !checked(cudaMemset(send[d], 0, maxBytes), "cudaMemset", error))
      return std::nullopt;
  }
  auto allReduce = [&](int64_t bytes) -> bool {
    if (!checked(ncclGroupStart(), "ncclGroupStart", error))
      return false;
    for (int d = 0; d < devices; ++d)
      if (!checked(ncclAllReduce(send[d], receive[d], bytes / 4, ncclFloat,
                                 ncclSum, comms[d], streams[d]),
                   "ncclAllReduce", error))
        return false;
    if (!checked(ncclGroupEnd(), "ncclGroupEnd", error))
      return false;
    for (int d = 0; d < devices; ++d)
      if (!checked(cudaSetDevice(d), "cudaSetDevice", error) ||
          !checked(cudaStreamSynchronize(streams[d]), "cudaStreamSynchronize",
                   error))
        return false;
    return true;
  };
  using Clock = std::chrono::steady_clock;
  std::vector<std::pair<int64_t, double>> points;
  for (int64_t bytes : messageSizes(8, maxBytes, 4)) {
    int reps = static_cast<int>(std::clamp<int64_t>(
        (int64_t(1) << 30) / std::max<int64_t>(bytes, 1), 5, 100));
    std::vector<double> times;
    for (int i = 0; i < reps + 2; ++i) {
      auto start = Clock::now();
      if (!allReduce(bytes))
        return std::nullopt;
      if (i >= 2) // two warm-up calls
        times.push_back(
            std::chrono::duration<double>(Clock::now() - start).count());
    }
    points.emplace_back(bytes, median(times));
  }
  for (int d = 0; d < devices; ++d) {
    cudaSetDevice(d);
    cudaFree(send[d]);
    cudaFree(receive[d]);
    cudaStreamDestroy(streams[d]);
    ncclCommDestroy(comms[d]);
  }
  cudaSetDevice(current);
  return points;
}

} // namespace

int runGpuCalibration(mlir::MLIRContext &context,
                      const GpuCalibrationOptions &options) {
  std::string error, gpu;
  if (!openGpu(gpu, error))
    return fail(error);
  std::string basePath = resolveMachinePath(options.base, error);
  if (basePath.empty())
    return fail(error);
  std::optional<Machine> base = Machine::load(basePath, error);
  if (!base)
    return fail(error);
  MachineSpec spec = base->spec();
  std::string output = options.output.empty()
                           ? spec.name + "-calibrated.json"
                           : options.output;
  llvm::raw_ostream &os = llvm::outs();
  os << "soap-profile: calibrating " << spec.deviceType << " of " << spec.name
     << " on " << gpu << "\n";

  GpuTimingOptions timing;
  timing.chip = options.chip;
  GpuShardTimer timer(timing);
  std::optional<std::vector<double>> matmul =
      measureMatmul(options.matmulSize, error);
  if (!matmul)
    return fail("matmul: " + error);
  std::optional<double> copy = measureCopy(options.bandwidthBytes, error);
  if (!copy)
    return fail("copy: " + error);
  std::optional<double> elementwise = measureElementwise(
      context, timer, std::max<int64_t>(options.bandwidthBytes / 12, 1),
      error);
  if (!elementwise)
    return fail("elementwise kernel: " + error);
  std::optional<double> launch = measureLaunch(error);
  if (!launch)
    return fail("launch: " + error);
  int devices = 0;
  cudaGetDeviceCount(&devices);
  std::optional<std::vector<std::pair<int64_t, double>>> reduces;
  std::optional<AlphaBeta> fit;
  if (devices > 1) {
    reduces = measureAllReduce(devices, options.maxMessageBytes, error);
    if (!reduces)
      return fail("NCCL all-reduce: " + error);
    fit = fitAlphaBeta(*reduces);
  }

  DeviceType &device = spec.deviceTypes[spec.deviceType];
  const char *modes[] = {"f32", "tf32", "bf16"};
  double peakF32 = device.peakFlopsFor("f32");
  device.memoryBandwidth = roundToFourDigits(*copy);
  device.launchOverhead = roundToFourDigits(*launch);
  device.efficiency["matmul"] =
      std::clamp(roundToFourDigits((*matmul)[0] / peakF32), 0.01, 1.0);
  device.efficiency["elementwise"] = std::clamp(
      roundToFourDigits(*elementwise / device.memoryBandwidth), 0.01, 1.0);
  std::string text;
  llvm::raw_string_ostream d(text);
  d << base->spec().description << " Calibrated by soap-profile --device gpu "
    << "--calibrate on " << today() << " on " << gpu << ": a "
    << options.matmulSize << "^3 product through libsoaprt_gpu's cuBLAS call";
  for (auto [i, mode] : llvm::enumerate(modes)) {
    double peak = device.peakFlopsFor(mode);
    d << llvm::formatv("{0} {1:F1} TFLOP/s in {2} math ({3:P0} of the {2} "
                       "peak)",
                       i ? "," : "", (*matmul)[i] / 1e12, mode,
                       (*matmul)[i] / peak);
  }
  d << llvm::formatv("; the matmul efficiency is the f32 one. Memory "
                     "bandwidth: a device-to-device copy, {0:F0} GB/s read + "
                     "written; a generated f32 add kernel moves {1:F0} GB/s "
                     "(the elementwise efficiency); {2} per kernel launch",
                     *copy / 1e9, *elementwise / 1e9, formatTime(*launch));
  if (fit && spec.intraNode) {
    // The ring all-reduce of n devices: 2(n-1) steps of a latency and
    // bytes/n over one link.
    double steps = 2.0 * (devices - 1);
    spec.intraNode->latency = roundToFourDigits(fit->alpha / steps);
    spec.intraNode->bandwidth =
        roundToFourDigits(fit->beta * steps / devices);
    d << llvm::formatv("; NCCL all-reduce over {0} local GPUs fits a link "
                       "latency of {1} and bandwidth of {2:F1} GB/s",
                       devices, formatTime(spec.intraNode->latency),
                       spec.intraNode->bandwidth / 1e9);
  } else {
    d << "; links keep the base file's figures (one local GPU: no NCCL "
         "measurement)";
  }
  d << ". Other fields are the base file's.";
  spec.description = text;
  std::optional<Machine> calibrated = Machine::create(spec, error);
  if (!calibrated)
    return fail("the calibrated machine is invalid: " + error);

  if (!options.quiet) {
    for (auto [i, mode] : llvm::enumerate(modes))
      os << llvm::formatv("  matmul {0}^3, {1} math: {2:F1} TFLOP/s\n",
                          options.matmulSize, mode, (*matmul)[i] / 1e12);
    os << llvm::formatv("  device-to-device copy: {0:F0} GB/s; generated add "
                        "kernel: {1:F0} GB/s; kernel launch: {2}\n",
                        *copy / 1e9, *elementwise / 1e9, formatTime(*launch));
    if (reduces) {
      std::vector<int> group(devices);
      for (int i = 0; i < devices; ++i)
        group[i] = i;
      os << "  all-reduce (NCCL, f32 sum over " << devices
         << " GPUs) against the calibrated model:\n";
      for (auto [bytes, measured] : *reduces) {
        CollectiveCost predicted = calibrated->collectiveCost(
            CollectiveKind::AllReduce, bytes, group);
        os << llvm::formatv("    {0,10} {1,12} {2,12} {3,6:F2}\n",
                            formatBytes(bytes), formatTime(measured),
                            formatTime(predicted.time),
                            predicted.time / measured);
      }
    }
  }
  if (!writeFileAtomically(output, machineSpecToJson(spec) + "\n", error) ||
      !Machine::load(output, error))
    return fail(error);
  os << llvm::formatv("soap-profile: matmul efficiency {0}, elementwise {1}, "
                      "launch {2}; wrote {3}\n",
                      device.efficiency["matmul"],
                      device.efficiency["elementwise"],
                      formatTime(device.launchOverhead), output);
  return 0;
}

} // namespace soap::profile

//===- GpuDevice.cpp - this rank's GPU, its stream, handles and memory ----===//
//
// The GPU runtime starts on first use (the driver starts it right after MPI,
// so that the device follows the rank): it picks the device, creates one
// non-blocking compute stream and, on their first use, the cuBLAS, cuBLASLt
// and cuDNN handles bound to it. Device memory comes from the device's
// stream-ordered pool, told to keep freed memory (the next step allocates the
// same intermediates again). The CUDA runtime API loads the driver itself,
// so an executable starts without one and reports that no device is usable.
//
// The hook table of GpuHooks.h is filled here, at static initialization.
//
//===----------------------------------------------------------------------===//

#include "GpuRuntime.h"

#include "Comm.h"
#include "GpuHooks.h"

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace soaprt {
namespace gpu {
namespace {

struct Device {
  bool started = false;
  int id = -1, count = 0;
  cudaStream_t stream = nullptr;
  cudaStream_t comm = nullptr;
  cublasHandle_t blas = nullptr;
  cublasLtHandle_t lt = nullptr;
  cudnnHandle_t dnn = nullptr;
  void *scratch[kNumScratch] = {};
  size_t scratchBytes[kNumScratch] = {};
  void *pinned[kNumHost] = {};
  size_t pinnedBytes[kNumHost] = {};
};

Device &state() {
  static Device d;
  return d;
}

/// An integer environment variable, or -1 when unset.
long envInteger(const char *name) {
  const char *text = std::getenv(name);
  if (!text || !*text)
    return -1;
  char *end = nullptr;
  errno = 0;
  long value = std::strtol(text, &end, 10);
  if (errno || *end || value < 0)
    failWith(std::string(name) + "='" + text +
             "' is not a non-negative integer");
  return value;
}

long firstEnv(std::initializer_list<const char *> names) {
  for (const char *name : names) {
    long value = envInteger(name);
    if (value >= 0)
      return value;
  }
  return -1;
}

} // namespace

void fail(const char *call, const std::string &reason) {
  failWith(std::string(call) + " failed: " + reason);
}

void failWith(const std::string &message) { commFail(message, kGpuError); }

void check(cudaError_t status, const char *call) {
  if (status != cudaSuccess)
    fail(call, cudaGetErrorString(status));
}

void check(cublasStatus_t status, const char *call) {
  if (status != CUBLAS_STATUS_SUCCESS)
    fail(call, cublasGetStatusString(status));
}

void check(cudnnStatus_t status, const char *call) {
  if (status != CUDNN_STATUS_SUCCESS)
    fail(call, cudnnGetErrorString(status));
}

void check(ncclResult_t status, const char *call) {
  if (status == ncclSuccess)
    return;
  std::string reason = ncclGetErrorString(status);
  if (const char *last = ncclGetLastError(nullptr))
    if (*last)
      reason += std::string(" (") + last + ")";
  fail(call, reason);
}

int localRank() {
  long rank = firstEnv({"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                        "SLURM_LOCALID", "PMI_LOCAL_RANK"});
  return rank >= 0 ? static_cast<int>(rank) : commRank();
}

int localSize() {
  long size = firstEnv({"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
                        "PMI_LOCAL_SIZE"});
  return size > 0 ? static_cast<int>(size) : commWorldSize();
}

void start() {
  Device &d = state();
  if (d.started)
    return;
  cudaError_t status = cudaGetDeviceCount(&d.count);
  if (status != cudaSuccess || d.count < 1)
    failWith("this executable was compiled for a GPU but no CUDA device is "
             "usable: " +
             std::string(status != cudaSuccess ? cudaGetErrorString(status)
                                               : "no CUDA device"));
  long chosen = envInteger("SOAP_GPU_DEVICE");
  if (chosen >= d.count)
    failWith("SOAP_GPU_DEVICE=" + std::to_string(chosen) +
             " but this node has " + std::to_string(d.count) +
             " CUDA device" + (d.count == 1 ? "" : "s"));
  d.id = chosen >= 0 ? static_cast<int>(chosen) : localRank() % d.count;
  check(cudaSetDevice(d.id), "cudaSetDevice");
  check(cudaStreamCreateWithFlags(&d.stream, cudaStreamNonBlocking),
        "cudaStreamCreateWithFlags");
  // NCCL kernels get the highest priority, so that a reduction started
  // early is not starved by the compute kernels enqueued behind it.
  int lowest = 0, highest = 0;
  check(cudaDeviceGetStreamPriorityRange(&lowest, &highest),
        "cudaDeviceGetStreamPriorityRange");
  check(cudaStreamCreateWithPriority(&d.comm, cudaStreamNonBlocking, highest),
        "cudaStreamCreateWithPriority");
  // Keep freed blocks in the pool instead of returning them to the driver
  // at every synchronization: each step allocates the same buffers again.
  cudaMemPool_t pool;
  check(cudaDeviceGetDefaultMemPool(&pool, d.id),
        "cudaDeviceGetDefaultMemPool");
  uint64_t keepAll = UINT64_MAX;
  check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold,
                                &keepAll),
        "cudaMemPoolSetAttribute");
  d.started = true;
}

bool started() { return state().started; }

int device() {
  start();
  return state().id;
}

int deviceCount() {
  start();
  return state().count;
}

cudaStream_t stream() {
  start();
  return state().stream;
}

cudaStream_t commStream() {
  start();
  return state().comm;
}

cublasHandle_t cublas() {
  Device &d = state();
  if (!d.blas) {
    start();
    check(cublasCreate(&d.blas), "cublasCreate");
    check(cublasSetStream(d.blas, d.stream), "cublasSetStream");
    // Pointer scalars (alpha, beta) live on the host.
    check(cublasSetPointerMode(d.blas, CUBLAS_POINTER_MODE_HOST),
          "cublasSetPointerMode");
  }
  return d.blas;
}

cublasLtHandle_t cublasLt() {
  Device &d = state();
  if (!d.lt) {
    start();
    check(cublasLtCreate(&d.lt), "cublasLtCreate");
  }
  return d.lt;
}

cudnnHandle_t cudnn() {
  Device &d = state();
  if (!d.dnn) {
    start();
    check(cudnnCreate(&d.dnn), "cudnnCreate");
    check(cudnnSetStream(d.dnn, d.stream), "cudnnSetStream");
  }
  return d.dnn;
}

void synchronize() {
  if (started())
    check(cudaStreamSynchronize(state().stream), "cudaStreamSynchronize");
}

void *allocate(size_t bytes) {
  if (bytes == 0)
    return nullptr;
  void *p = nullptr;
  check(cudaMallocAsync(&p, bytes, stream()), "cudaMallocAsync");
  return p;
}

void release(void *p, cudaStream_t on) {
  if (p)
    check(cudaFreeAsync(p, on ? on : stream()), "cudaFreeAsync");
}

void *scratch(ScratchSlot slot, size_t bytes) {
  Device &d = state();
  if (d.scratchBytes[slot] < bytes) {
    // Stream-ordered: work already enqueued on the old buffer finishes
    // before it is freed.
    release(d.scratch[slot]);
    size_t grown = bytes + bytes / 4;
    d.scratch[slot] = allocate(grown);
    d.scratchBytes[slot] = grown;
  }
  return d.scratch[slot];
}

void *pinnedScratch(HostSlot slot, size_t bytes) {
  Device &d = state();
  if (d.pinnedBytes[slot] < bytes) {
    // The host may still be waiting on nothing here: staged copies
    // synchronize before they return.
    if (d.pinned[slot])
      check(cudaFreeHost(d.pinned[slot]), "cudaFreeHost");
    size_t grown = bytes + bytes / 4;
    check(cudaMallocHost(&d.pinned[slot], grown), "cudaMallocHost");
    d.pinnedBytes[slot] = grown;
  }
  return d.pinned[slot];
}

namespace {

// The driver's side of the hook table.

void hookStart() {
  start();
  startComm();
}

void *hookAlloc(size_t bytes) {
  if (bytes == 0)
    return nullptr;
  void *p = nullptr;
  start();
  check(cudaMalloc(&p, bytes), "cudaMalloc");
  return p;
}

void hookFree(void *p) {
  if (p)
    check(cudaFree(p), "cudaFree");
}

void hookToDevice(void *device, const void *host, size_t bytes) {
  if (bytes == 0)
    return;
  check(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice,
                        stream()),
        "cudaMemcpyAsync");
  // From pageable memory the copy is staged before the call returns, but
  // the caller may overwrite `host` right away: wait.
  synchronize();
}

void hookToHost(void *host, const void *device, size_t bytes) {
  if (bytes == 0)
    return;
  check(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost,
                        stream()),
        "cudaMemcpyAsync");
  synchronize();
}

void hookDeviceToDevice(void *dst, const void *src, size_t bytes) {
  if (bytes)
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice,
                          stream()),
          "cudaMemcpyAsync");
}

bool hookIsDevicePointer(const void *p) {
  if (!started())
    return false;
  cudaPointerAttributes attributes;
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    cudaGetLastError(); // not an error worth keeping: not a CUDA pointer
    return false;
  }
  return attributes.type == cudaMemoryTypeDevice ||
         attributes.type == cudaMemoryTypeManaged;
}

GpuHooks hooks = {hookStart,
                  hookAlloc,
                  hookFree,
                  hookToDevice,
                  hookToHost,
                  hookDeviceToDevice,
                  synchronize,
                  hookIsDevicePointer,
                  allReduce,
                  allReduceStart,
                  waitFor,
                  allGather,
                  reduceScatter,
                  allToAll,
                  broadcast,
                  send,
                  recv,
                  completePendingSends};

[[maybe_unused]] const bool registered = [] {
  gpuHooks = &hooks;
  return true;
}();

} // namespace
} // namespace gpu
} // namespace soaprt

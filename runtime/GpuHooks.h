//===- GpuHooks.h - how CPU-only libsoaprt code reaches the GPU runtime -*- C++ -*-===//
//
// libsoaprt and libsoaprt_driver are built without CUDA. When an executable
// also links libsoaprt_gpu (runtime/Gpu*.cpp, built only where the CUDA
// toolkit, cuDNN and NCCL were found), a static initializer there fills
// `gpuHooks`; otherwise it stays null and a GPU model fails with a clear
// error. The driver moves buffers through it, and the communication calls
// of Comm.cpp hand device buffers to it.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_RUNTIME_GPUHOOKS_H
#define SOAP_RUNTIME_GPUHOOKS_H

#include <cstddef>
#include <cstdint>

namespace soaprt {

/// The GPU runtime as plain function pointers (no CUDA types).
struct GpuHooks {
  /// Selects this rank's GPU and creates the compute stream; fails the job
  /// with a clear error when no CUDA device is usable.
  void (*start)();
  /// Device memory (cudaMalloc; never null for bytes > 0).
  void *(*alloc)(size_t bytes);
  void (*free)(void *device);
  /// Copies ordered on the compute stream. toDevice returns once `host`
  /// may be reused; toHost returns once `host` holds the data.
  void (*toDevice)(void *device, const void *host, size_t bytes);
  void (*toHost)(void *host, const void *device, size_t bytes);
  void (*deviceToDevice)(void *dst, const void *src, size_t bytes);
  /// Waits until everything enqueued on the compute stream has finished;
  /// a failed kernel is reported here.
  void (*synchronize)();

  /// Whether `p` is device (or managed) memory; false before start().
  bool (*isDevicePointer)(const void *p);
  /// The soaprt_* communication calls of Runtime.h on device buffers.
  void (*allReduce)(const void *in, void *out, int64_t count, int64_t dtype,
                    int64_t op, const int64_t *group, int64_t groupSize);
  /// soaprt_all_reduce_start: the GPU runtime's handle (0 when the call is
  /// already complete), which `wait` takes.
  int64_t (*allReduceStart)(const void *in, void *out, int64_t count,
                            int64_t dtype, int64_t op, const int64_t *group,
                            int64_t groupSize);
  /// The compute stream waits for the call `handle` started.
  void (*wait)(int64_t handle);
  void (*allGather)(const void *in, void *out, int64_t outer, int64_t chunk,
                    int64_t dtype, const int64_t *group, int64_t groupSize);
  void (*reduceScatter)(const void *in, void *out, int64_t outer,
                        int64_t chunk, int64_t dtype, int64_t op,
                        const int64_t *group, int64_t groupSize);
  void (*allToAll)(const void *in, void *out, int64_t splitOuter,
                   int64_t splitChunk, int64_t concatOuter,
                   int64_t concatChunk, int64_t dtype, const int64_t *group,
                   int64_t groupSize);
  void (*broadcast)(const void *in, void *out, int64_t count, int64_t dtype,
                    int64_t root, const int64_t *group, int64_t groupSize);
  void (*send)(const void *in, int64_t count, int64_t dtype,
               const int64_t *from, const int64_t *to, int64_t pairs,
               int64_t tag);
  void (*recv)(void *out, int64_t count, int64_t dtype, const int64_t *from,
               const int64_t *to, int64_t pairs, int64_t tag);
  /// Issues the sends still deferred (NCCL) at the end of a step.
  void (*completePendingSends)();
};

/// Set by libsoaprt_gpu when it is linked in; null otherwise.
extern GpuHooks *gpuHooks;

/// Whether a communication call gets a device buffer (`p` may be null).
inline bool onGpu(const void *p) {
  return gpuHooks && p && gpuHooks->isDevicePointer(p);
}

} // namespace soaprt

#endif // SOAP_RUNTIME_GPUHOOKS_H

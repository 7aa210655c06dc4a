//===- GpuRuntime.h - libsoaprt_gpu's device, stream and handles -*- C++ -*-===//
//
// Shared by the files of libsoaprt_gpu (runtime/Gpu*.cpp): the one GPU of
// this rank, its single compute stream, the cuBLAS, cuBLASLt and cuDNN
// handles bound to that stream (created on first use), a growable scratch
// area, and the checks that turn a failed CUDA, cuBLAS, cuDNN or NCCL call
// into `error: [rank R: ]<call> failed: <reason>` and the end of the job.
//
// Every kernel, library call and copy is enqueued on the compute stream, so
// they run in program order; the host waits for the stream (synchronize)
// only before it reads device memory. NCCL operations run in program order
// on a second stream, the communication stream, each after the compute
// work enqueued before it; the compute stream waits for a blocking call's
// result at once, and for a started all-reduce's at soaprt_wait (GpuComm.cpp).
// So a gradient all-reduce runs while the rest of the backward pass
// computes.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_RUNTIME_GPURUNTIME_H
#define SOAP_RUNTIME_GPURUNTIME_H

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace soaprt {
namespace gpu {

/// Exit status of a job ended by a GPU error (docs/runtime.md).
constexpr int kGpuError = 5;

/// Prints `error: [rank R: ]<call> failed: <reason>` and ends the job.
[[noreturn]] void fail(const char *call, const std::string &reason);
/// Prints `error: [rank R: ]<message>` and ends the job.
[[noreturn]] void failWith(const std::string &message);

void check(cudaError_t status, const char *call);
void check(cublasStatus_t status, const char *call);
void check(cudnnStatus_t status, const char *call);
void check(ncclResult_t status, const char *call);

/// Starts the GPU runtime on first use: picks the device (SOAP_GPU_DEVICE,
/// else the node-local rank modulo the device count), creates the stream.
void start();
bool started();
/// The device this rank uses.
int device();
/// The compute stream (starts the runtime).
cudaStream_t stream();
/// The communication stream, of the highest priority (NCCL operations).
cudaStream_t commStream();
cublasHandle_t cublas();
cublasLtHandle_t cublasLt();
cudnnHandle_t cudnn();

/// Waits for the compute stream; reports a failed kernel.
void synchronize();

/// Device memory ordered on the compute stream (cudaMallocAsync from the
/// device's pool, which keeps freed memory for the next step).
void *allocate(size_t bytes);
/// Frees `p` once the work enqueued on `on` (default: the compute stream)
/// is done with it.
void release(void *p, cudaStream_t on = nullptr);

/// A device buffer of at least `bytes` that stays valid until the next
/// scratch(slot, ...) call with the same slot; grown, never shrunk. Slots
/// keep the buffers of one operation apart (workspace, a converted
/// operand, a staged copy).
enum ScratchSlot {
  kWorkspace,
  kPoolResult,
  kFilterCopy,
  kCommIn,
  kCommOut,
  kNumScratch
};
void *scratch(ScratchSlot slot, size_t bytes);

/// A pinned host buffer for staged communication (as scratch()).
enum HostSlot { kHostIn, kHostOut, kNumHost };
void *pinnedScratch(HostSlot slot, size_t bytes);

/// The node-local rank and the number of ranks on this node (from the
/// launcher's environment; the world rank and size otherwise).
int localRank();
int localSize();
/// The number of CUDA devices of this node (after start()).
int deviceCount();

/// The communication calls on device buffers (GpuComm.cpp), as GpuHooks
/// lists them.
void allReduce(const void *in, void *out, int64_t count, int64_t dtype,
               int64_t op, const int64_t *group, int64_t groupSize);
/// allReduce on the communication stream without making the compute stream
/// wait: a handle for waitFor, or 0 when the call is already complete.
int64_t allReduceStart(const void *in, void *out, int64_t count,
                       int64_t dtype, int64_t op, const int64_t *group,
                       int64_t groupSize);
/// The compute stream waits for the call `handle` started.
void waitFor(int64_t handle);
void allGather(const void *in, void *out, int64_t outer, int64_t chunk,
               int64_t dtype, const int64_t *group, int64_t groupSize);
void reduceScatter(const void *in, void *out, int64_t outer, int64_t chunk,
                   int64_t dtype, int64_t op, const int64_t *group,
                   int64_t groupSize);
void allToAll(const void *in, void *out, int64_t splitOuter,
              int64_t splitChunk, int64_t concatOuter, int64_t concatChunk,
              int64_t dtype, const int64_t *group, int64_t groupSize);
void broadcast(const void *in, void *out, int64_t count, int64_t dtype,
               int64_t root, const int64_t *group, int64_t groupSize);
void send(const void *in, int64_t count, int64_t dtype, const int64_t *from,
          const int64_t *to, int64_t pairs, int64_t tag);
void recv(void *out, int64_t count, int64_t dtype, const int64_t *from,
          const int64_t *to, int64_t pairs, int64_t tag);
void completePendingSends();
/// With NCCL on several ranks: creates the world's communicators (called by
/// the driver on every rank at start-up, as creating them is collective).
void startComm();

/// Which backend moves device buffers: NCCL, or MPI through pinned host
/// copies (SOAP_GPU_COMM=nccl|mpi; by default NCCL when every rank of the
/// node has a GPU of its own).
enum class CommBackend { Nccl, StagedMpi };
CommBackend commBackend();

} // namespace gpu
} // namespace soaprt

#endif // SOAP_RUNTIME_GPURUNTIME_H

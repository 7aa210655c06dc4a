//===- GpuComm.cpp - the soaprt_* communication calls on device buffers ---===//
//
// Comm.cpp hands a call to these functions when its buffers are device
// memory. Two backends (SOAP_GPU_COMM=nccl|mpi, by default NCCL when every
// rank of the node has a GPU of its own, MPI otherwise):
//
//  - NCCL, on the communication stream (GpuRuntime.h), in program order:
//    each call first makes that stream wait for the compute work enqueued
//    before it, then the compute stream waits for the call's result, so
//    the call returns once it is enqueued. allReduceStart leaves out that
//    last wait until waitFor(handle), which the lowering places right
//    before the first use of the result. A device group gets its
//    communicator the first time its members use it (ncclGetUniqueId on
//    the first member, broadcast over the group's MPI communicator,
//    ncclCommInitRank), like the MPI backend's groups. The
//    driver creates the world's communicator, and one split from it for
//    send/recv, right after start-up. The block reorders of all_gather,
//    reduce_scatter and all_to_all are cudaMemcpy2DAsync copies; a mean is a
//    sum scaled by 1/n (cuBLAS scal). A send is copied to a device buffer
//    and issued at this rank's next communication call (or at the end of
//    the step) in one NCCL group with the receives there, so that ranks
//    sending to each other before receiving cannot deadlock; NCCL has no
//    tags, so sends and receives between two ranks match in program order.
//  - MPI through pinned host buffers: device -> host, the MPI backend's
//    call, host -> device, synchronously. Slower, but several ranks can
//    share one GPU (NCCL refuses two ranks on one device).
//
// A group of one is a copy on the device (with either backend, and without
// MPI).
//
//===----------------------------------------------------------------------===//

#include "GpuRuntime.h"

#include "Comm.h"
#include "Trace.h"

#include "soap/Runtime/Runtime.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace soaprt {
namespace gpu {
namespace {

struct PendingSend {
  void *data;   // a device copy, released once the send is enqueued
  size_t count; // elements
  int64_t dtype;
  int peer;
  int64_t tag;
};

struct CommState {
  bool backendChosen = false;
  CommBackend backend = CommBackend::Nccl;
  /// NCCL communicators by group (world ranks in group order).
  std::map<std::vector<int64_t>, ncclComm_t> groups;
  /// Over the world, for send/recv (peers are world ranks).
  ncclComm_t pointToPoint = nullptr;
  std::vector<PendingSend> sends;
  /// Events of started all-reduces, by handle, until waitFor; and events
  /// free for reuse (once a wait on an event is enqueued, recording it again
  /// does not change that wait).
  std::map<int64_t, cudaEvent_t> started;
  int64_t nextHandle = 1;
  std::vector<cudaEvent_t> freeEvents;
};

CommState &state() {
  static CommState s;
  return s;
}

ncclDataType_t ncclType(int64_t dtype) {
  switch (dtype) {
  case SOAPRT_F32:
    return ncclFloat32;
  case SOAPRT_F64:
    return ncclFloat64;
  case SOAPRT_I32:
    return ncclInt32;
  case SOAPRT_I64:
    return ncclInt64;
  case SOAPRT_I8:
    return ncclInt8;
  case SOAPRT_I1:
    return ncclUint8;
  }
  commElementBytes(dtype); // fails, naming the code
  return ncclFloat32;
}

ncclRedOp_t ncclOp(int64_t op) {
  switch (op) {
  case SOAPRT_SUM:
  case SOAPRT_MEAN:
    return ncclSum;
  case SOAPRT_MAX:
    return ncclMax;
  case SOAPRT_MIN:
    return ncclMin;
  }
  failWith("internal: unknown reduction code " + std::to_string(op));
}

int64_t memberIndex(const int64_t *group, int64_t size) {
  for (int64_t i = 0; i < size; ++i)
    if (group[i] == commRank())
      return i;
  return -1;
}

/// The NCCL communicator of `group` (this rank is a member), created by the
/// members the first time.
ncclComm_t groupComm(const int64_t *group, int64_t size) {
  CommState &s = state();
  std::vector<int64_t> key(group, group + size);
  auto it = s.groups.find(key);
  if (it != s.groups.end())
    return it->second;
  ncclUniqueId id, received;
  std::memset(&id, 0, sizeof(id));
  if (group[0] == commRank())
    check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  static_assert(sizeof(ncclUniqueId) % 4 == 0, "sent as i32 elements");
  // Host buffers: the MPI backend's broadcast over the group.
  soaprt_broadcast(&id, &received, sizeof(id) / 4, SOAPRT_I32, group[0], group,
                   size);
  ncclComm_t comm;
  start();
  check(ncclCommInitRank(&comm, static_cast<int>(size), received,
                         static_cast<int>(memberIndex(group, size))),
        "ncclCommInitRank");
  s.groups.emplace(std::move(key), comm);
  return comm;
}

std::vector<int64_t> worldGroup() {
  std::vector<int64_t> world(commWorldSize());
  for (size_t i = 0; i < world.size(); ++i)
    world[i] = static_cast<int64_t>(i);
  return world;
}

/// Collective over the world the first time: the driver calls it at
/// start-up (startComm) on every rank.
ncclComm_t pointToPointComm() {
  CommState &s = state();
  if (!s.pointToPoint) {
    std::vector<int64_t> world = worldGroup();
    ncclComm_t all = groupComm(world.data(), world.size());
    check(ncclCommSplit(all, 0, commRank(), &s.pointToPoint, nullptr),
          "ncclCommSplit");
  }
  return s.pointToPoint;
}

bool useNccl() { return commBackend() == CommBackend::Nccl; }

cudaEvent_t takeEvent() {
  CommState &s = state();
  if (!s.freeEvents.empty()) {
    cudaEvent_t event = s.freeEvents.back();
    s.freeEvents.pop_back();
    return event;
  }
  cudaEvent_t event;
  check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
        "cudaEventCreateWithFlags");
  return event;
}

/// `waiter` waits for the work enqueued so far on `signaller`.
void follow(cudaStream_t waiter, cudaStream_t signaller) {
  cudaEvent_t event = takeEvent();
  check(cudaEventRecord(event, signaller), "cudaEventRecord");
  check(cudaStreamWaitEvent(waiter, event, 0), "cudaStreamWaitEvent");
  state().freeEvents.push_back(event);
}

/// The NCCL work of one call, on the communication stream after the compute
/// work enqueued before it (which made the call's inputs). Unless started,
/// the compute stream waits for it when the scope ends. Device memory the
/// call allocates (scratch) is allocated before the scope begins.
class OnCommStream {
public:
  OnCommStream() { follow(commStream(), stream()); }
  ~OnCommStream() {
    if (!handle)
      follow(stream(), commStream());
  }
  OnCommStream(const OnCommStream &) = delete;
  OnCommStream &operator=(const OnCommStream &) = delete;

  /// Leaves the compute stream free to go on; waitFor(handle) makes it wait.
  int64_t start() {
    CommState &s = state();
    cudaEvent_t event = takeEvent();
    check(cudaEventRecord(event, commStream()), "cudaEventRecord");
    handle = s.nextHandle++;
    s.started.emplace(handle, event);
    return handle;
  }

private:
  int64_t handle = 0;
};

/// dst[j][i][:] = src[i][j][:] for src of shape [a][b][chunkBytes], on the
/// device: one strided 2-D copy per index of the shorter dimension, on the
/// communication stream (around NCCL calls).
void swapLeadingOnDevice(const void *src, void *dst, int64_t a, int64_t b,
                         size_t chunkBytes) {
  const char *from = static_cast<const char *>(src);
  char *to = static_cast<char *>(dst);
  if (a <= b) {
    for (int64_t i = 0; i < a; ++i)
      check(cudaMemcpy2DAsync(to + i * chunkBytes, a * chunkBytes,
                              from + i * b * chunkBytes, chunkBytes,
                              chunkBytes, b, cudaMemcpyDeviceToDevice,
                              commStream()),
            "cudaMemcpy2DAsync");
  } else {
    for (int64_t j = 0; j < b; ++j)
      check(cudaMemcpy2DAsync(to + j * a * chunkBytes, chunkBytes,
                              from + j * chunkBytes, b * chunkBytes,
                              chunkBytes, a, cudaMemcpyDeviceToDevice,
                              commStream()),
            "cudaMemcpy2DAsync");
  }
}

void copyOnDevice(void *dst, const void *src, size_t bytes) {
  if (bytes && dst != src)
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream()),
          "cudaMemcpyAsync");
}

/// The mean after a sum: out *= 1/n (cuBLAS scal; integers on the host),
/// on the communication stream.
void divideOnDevice(void *data, int64_t count, int64_t dtype, int64_t n) {
  cudaStream_t comm = commStream();
  // cuBLAS works on the communication stream meanwhile.
  struct OnComm {
    explicit OnComm(cudaStream_t comm) {
      check(cublasSetStream(cublas(), comm), "cublasSetStream");
    }
    ~OnComm() { check(cublasSetStream(cublas(), stream()), "cublasSetStream"); }
  } onComm(comm);
  switch (dtype) {
  case SOAPRT_F32: {
    float alpha = 1.0f / static_cast<float>(n);
    check(cublasSscal_64(cublas(), count, &alpha, static_cast<float *>(data),
                         1),
          "cublasSscal_64");
    return;
  }
  case SOAPRT_F64: {
    double alpha = 1.0 / static_cast<double>(n);
    check(cublasDscal_64(cublas(), count, &alpha, static_cast<double *>(data),
                         1),
          "cublasDscal_64");
    return;
  }
  }
  // An integer mean (rare): divide on the host, truncating like the MPI
  // backend.
  size_t bytes = count * commElementBytes(dtype);
  std::vector<char> host(bytes);
  check(cudaMemcpyAsync(host.data(), data, bytes, cudaMemcpyDeviceToHost,
                        comm),
        "cudaMemcpyAsync");
  check(cudaStreamSynchronize(comm), "cudaStreamSynchronize");
  commDivideBy(host.data(), count, dtype, n);
  check(cudaMemcpyAsync(data, host.data(), bytes, cudaMemcpyHostToDevice,
                        comm),
        "cudaMemcpyAsync");
  check(cudaStreamSynchronize(comm), "cudaStreamSynchronize");
}

/// Issues the deferred sends, and `receives` after them, as one NCCL group
/// (inside an OnCommStream scope).
struct Receive {
  void *out;
  size_t count;
  int64_t dtype;
  int peer;
};

void exchange(const std::vector<Receive> &receives) {
  CommState &s = state();
  if (s.sends.empty() && receives.empty())
    return;
  ncclComm_t comm = pointToPointComm();
  check(ncclGroupStart(), "ncclGroupStart");
  for (const PendingSend &send : s.sends)
    check(ncclSend(send.data, send.count, ncclType(send.dtype), send.peer,
                   comm, commStream()),
          "ncclSend");
  for (const Receive &receive : receives)
    check(ncclRecv(receive.out, receive.count, ncclType(receive.dtype),
                   receive.peer, comm, commStream()),
          "ncclRecv");
  check(ncclGroupEnd(), "ncclGroupEnd");
  // Stream-ordered: the copies are freed after the sends read them.
  for (const PendingSend &send : s.sends)
    release(send.data, commStream());
  s.sends.clear();
}

/// Every NCCL call issues the sends deferred before it (in its scope).
void flushSends() {
  if (!state().sends.empty())
    exchange({});
}

/// Copies `inBytes` of `in` to pinned host memory, runs `call(hostIn,
/// hostOut)` (the MPI backend), and copies `outBytes` of the result to
/// `out` when `copyBack`.
template <typename Call>
void staged(const void *in, size_t inBytes, void *out, size_t outBytes,
            Call call, bool copyBack = true) {
  void *hostIn = pinnedScratch(kHostIn, inBytes);
  void *hostOut = pinnedScratch(kHostOut, outBytes);
  if (in && inBytes) {
    check(cudaMemcpyAsync(hostIn, in, inBytes, cudaMemcpyDefault, stream()),
          "cudaMemcpyAsync");
    synchronize();
  }
  call(hostIn, hostOut);
  if (copyBack && outBytes) {
    check(cudaMemcpyAsync(out, hostOut, outBytes, cudaMemcpyDefault,
                          stream()),
          "cudaMemcpyAsync");
    synchronize(); // before the pinned buffer is written again
  }
}

} // namespace

CommBackend commBackend() {
  CommState &s = state();
  if (!s.backendChosen) {
    const char *text = std::getenv("SOAP_GPU_COMM");
    std::string value = text ? text : "";
    if (value == "nccl")
      s.backend = CommBackend::Nccl;
    else if (value == "mpi")
      s.backend = CommBackend::StagedMpi;
    else if (value.empty())
      s.backend = localSize() <= deviceCount() ? CommBackend::Nccl
                                               : CommBackend::StagedMpi;
    else
      failWith("SOAP_GPU_COMM='" + value + "' is not nccl or mpi");
    s.backendChosen = true;
  }
  return s.backend;
}

void startComm() {
  if (commActive() && commWorldSize() > 1 && useNccl())
    pointToPointComm();
}

int64_t allReduceStart(const void *in, void *out, int64_t count,
                       int64_t dtype, int64_t op, const int64_t *group,
                       int64_t groupSize) {
  if (!commEnter("soap.all_reduce", group, groupSize))
    return 0;
  size_t bytes = count * commElementBytes(dtype);
  if (groupSize == 1) {
    copyOnDevice(out, in, bytes);
    return 0;
  }
  // NCCL has no exclusive or, which an i1 sum is: i1 reduces on the host.
  if (!useNccl() || dtype == SOAPRT_I1) {
    staged(in, bytes, out, bytes, [&](void *hostIn, void *hostOut) {
      soaprt_all_reduce(hostIn, hostOut, count, dtype, op, group, groupSize);
    });
    return 0;
  }
  ScopedEvent event("soap.all_reduce", "comm", bytes, groupSize);
  ncclComm_t comm = groupComm(group, groupSize);
  OnCommStream scope;
  flushSends();
  check(ncclAllReduce(in, out, count, ncclType(dtype), ncclOp(op), comm,
                      commStream()),
        "ncclAllReduce");
  if (op == SOAPRT_MEAN)
    divideOnDevice(out, count, dtype, groupSize);
  return scope.start();
}

void waitFor(int64_t handle) {
  CommState &s = state();
  auto it = s.started.find(handle);
  if (it == s.started.end())
    failWith("internal: a wait for GPU collective " + std::to_string(handle) +
             ", which was not started or was already waited for");
  check(cudaStreamWaitEvent(stream(), it->second, 0), "cudaStreamWaitEvent");
  s.freeEvents.push_back(it->second);
  s.started.erase(it);
}

void allReduce(const void *in, void *out, int64_t count, int64_t dtype,
               int64_t op, const int64_t *group, int64_t groupSize) {
  if (int64_t handle =
          allReduceStart(in, out, count, dtype, op, group, groupSize))
    waitFor(handle);
}

void allGather(const void *in, void *out, int64_t outer, int64_t chunk,
               int64_t dtype, const int64_t *group, int64_t groupSize) {
  if (!commEnter("soap.all_gather", group, groupSize))
    return;
  size_t chunkBytes = chunk * commElementBytes(dtype);
  size_t inBytes = outer * chunkBytes;
  if (groupSize == 1)
    return copyOnDevice(out, in, inBytes);
  if (!useNccl())
    return staged(in, inBytes, out, groupSize * inBytes,
                  [&](void *hostIn, void *hostOut) {
                    soaprt_all_gather(hostIn, hostOut, outer, chunk, dtype,
                                      group, groupSize);
                  });
  ScopedEvent event("soap.all_gather", "comm", groupSize * inBytes, groupSize);
  // NCCL concatenates whole buffers: [n][outer][chunk], then reorder.
  void *target = outer > 1 ? scratch(kCommOut, groupSize * inBytes) : out;
  ncclComm_t comm = groupComm(group, groupSize);
  OnCommStream scope;
  flushSends();
  check(ncclAllGather(in, target, outer * chunk, ncclType(dtype), comm,
                      commStream()),
        "ncclAllGather");
  if (outer > 1)
    swapLeadingOnDevice(target, out, groupSize, outer, chunkBytes);
}

void reduceScatter(const void *in, void *out, int64_t outer, int64_t chunk,
                   int64_t dtype, int64_t op, const int64_t *group,
                   int64_t groupSize) {
  if (!commEnter("soap.reduce_scatter", group, groupSize))
    return;
  size_t chunkBytes = chunk * commElementBytes(dtype);
  size_t outBytes = outer * chunkBytes;
  if (groupSize == 1)
    return copyOnDevice(out, in, outBytes);
  if (!useNccl() || dtype == SOAPRT_I1)
    return staged(in, groupSize * outBytes, out, outBytes,
                  [&](void *hostIn, void *hostOut) {
                    soaprt_reduce_scatter(hostIn, hostOut, outer, chunk, dtype,
                                          op, group, groupSize);
                  });
  ScopedEvent event("soap.reduce_scatter", "comm", groupSize * outBytes,
                    groupSize);
  void *packed = outer > 1 ? scratch(kCommIn, groupSize * outBytes) : nullptr;
  ncclComm_t comm = groupComm(group, groupSize);
  OnCommStream scope;
  flushSends();
  // NCCL scatters whole blocks: bring the input to [n][outer][chunk].
  const void *source = in;
  if (packed) {
    swapLeadingOnDevice(in, packed, outer, groupSize, chunkBytes);
    source = packed;
  }
  check(ncclReduceScatter(source, out, outer * chunk, ncclType(dtype),
                          ncclOp(op), comm, commStream()),
        "ncclReduceScatter");
  if (op == SOAPRT_MEAN)
    divideOnDevice(out, outer * chunk, dtype, groupSize);
}

void allToAll(const void *in, void *out, int64_t splitOuter,
              int64_t splitChunk, int64_t concatOuter, int64_t concatChunk,
              int64_t dtype, const int64_t *group, int64_t groupSize) {
  if (!commEnter("soap.all_to_all", group, groupSize))
    return;
  size_t elementBytes = commElementBytes(dtype);
  size_t blockCount = splitOuter * splitChunk;
  size_t total = groupSize * blockCount * elementBytes;
  if (groupSize == 1)
    return copyOnDevice(out, in, total);
  if (!useNccl())
    return staged(in, total, out, total, [&](void *hostIn, void *hostOut) {
      soaprt_all_to_all(hostIn, hostOut, splitOuter, splitChunk, concatOuter,
                        concatChunk, dtype, group, groupSize);
    });
  ScopedEvent event("soap.all_to_all", "comm", total, groupSize);
  char *packed =
      splitOuter > 1 ? static_cast<char *>(scratch(kCommIn, total)) : nullptr;
  char *receive = concatOuter > 1 ? static_cast<char *>(scratch(kCommOut, total))
                                  : static_cast<char *>(out);
  ncclComm_t comm = groupComm(group, groupSize);
  OnCommStream scope;
  flushSends();
  // Blocks [n][...]: block j goes to member j, block j comes from member j.
  const char *send = static_cast<const char *>(in);
  if (packed) {
    swapLeadingOnDevice(in, packed, splitOuter, groupSize,
                        splitChunk * elementBytes);
    send = packed;
  }
  ncclDataType_t type = ncclType(dtype);
  size_t blockBytes = blockCount * elementBytes;
  check(ncclGroupStart(), "ncclGroupStart");
  for (int64_t j = 0; j < groupSize; ++j) {
    check(ncclSend(send + j * blockBytes, blockCount, type,
                   static_cast<int>(j), comm, commStream()),
          "ncclSend");
    check(ncclRecv(receive + j * blockBytes, blockCount, type,
                   static_cast<int>(j), comm, commStream()),
          "ncclRecv");
  }
  check(ncclGroupEnd(), "ncclGroupEnd");
  if (concatOuter > 1)
    swapLeadingOnDevice(receive, out, groupSize, concatOuter,
                        concatChunk * elementBytes);
}

void broadcast(const void *in, void *out, int64_t count, int64_t dtype,
               int64_t root, const int64_t *group, int64_t groupSize) {
  if (!commEnter("soap.broadcast", group, groupSize))
    return;
  int64_t rootIndex = -1;
  for (int64_t i = 0; i < groupSize; ++i)
    if (group[i] == root)
      rootIndex = i;
  if (rootIndex < 0)
    failWith("soap.broadcast: the root " + std::to_string(root) +
             " is not in the group");
  size_t bytes = count * commElementBytes(dtype);
  if (groupSize == 1)
    return copyOnDevice(out, in, bytes);
  if (!useNccl()) {
    bool isRoot = root == commRank();
    return staged(isRoot ? in : nullptr, isRoot ? bytes : 0, out, bytes,
                  [&](void *hostIn, void *hostOut) {
                    soaprt_broadcast(hostIn, hostOut, count, dtype, root,
                                     group, groupSize);
                  });
  }
  ScopedEvent event("soap.broadcast", "comm", bytes, groupSize);
  ncclComm_t comm = groupComm(group, groupSize);
  OnCommStream scope;
  flushSends();
  check(ncclBroadcast(in, out, count, ncclType(dtype),
                      static_cast<int>(rootIndex), comm, commStream()),
        "ncclBroadcast");
}

void send(const void *in, int64_t count, int64_t dtype, const int64_t *from,
          const int64_t *to, int64_t pairs, int64_t tag) {
  commEnter("soap.send", from, pairs); // checks the ranks
  commEnter("soap.send", to, pairs);
  size_t bytes = count * commElementBytes(dtype);
  bool sends = false;
  for (int64_t i = 0; i < pairs; ++i)
    sends |= from[i] == commRank();
  if (!sends)
    return;
  if (commActive() && !useNccl())
    return staged(in, bytes, nullptr, 0,
                  [&](void *hostIn, void *) {
                    soaprt_send(hostIn, count, dtype, from, to, pairs, tag);
                  },
                  /*copyBack=*/false);
  ScopedEvent event("soap.send", "comm", bytes);
  // A copy, issued later (the caller may free `in` right after).
  for (int64_t i = 0; i < pairs; ++i) {
    if (from[i] != commRank())
      continue;
    void *copy = allocate(bytes);
    copyOnDevice(copy, in, bytes);
    state().sends.push_back({copy, static_cast<size_t>(count), dtype,
                             static_cast<int>(to[i]), tag});
  }
}

void recv(void *out, int64_t count, int64_t dtype, const int64_t *from,
          const int64_t *to, int64_t pairs, int64_t tag) {
  commEnter("soap.recv", from, pairs);
  commEnter("soap.recv", to, pairs);
  size_t bytes = count * commElementBytes(dtype);
  std::vector<Receive> receives;
  for (int64_t i = 0; i < pairs; ++i)
    if (to[i] == commRank())
      receives.push_back({out, static_cast<size_t>(count), dtype,
                          static_cast<int>(from[i])});
  if (!commActive()) {
    // One rank without MPI: messages to itself, matched by tag.
    CommState &s = state();
    for (size_t r = 0; r < receives.size(); ++r) {
      auto it = s.sends.begin();
      while (it != s.sends.end() &&
             !(it->tag == tag && it->count * commElementBytes(it->dtype) ==
                                     bytes))
        ++it;
      if (it == s.sends.end())
        failWith("soap.recv: no matching soap.send of " +
                 std::to_string(bytes) + " bytes with tag " +
                 std::to_string(tag));
      copyOnDevice(out, it->data, bytes);
      release(it->data);
      s.sends.erase(it);
    }
    return;
  }
  if (!useNccl()) {
    if (receives.empty())
      return;
    return staged(nullptr, 0, out, bytes, [&](void *, void *hostOut) {
      soaprt_recv(hostOut, count, dtype, from, to, pairs, tag);
    });
  }
  ScopedEvent event("soap.recv", "comm", bytes);
  pointToPointComm();
  OnCommStream scope;
  exchange(receives);
}

void completePendingSends() {
  if (started() && commActive() && !state().sends.empty()) {
    pointToPointComm();
    OnCommStream scope;
    flushSends();
  }
}

} // namespace gpu
} // namespace soaprt

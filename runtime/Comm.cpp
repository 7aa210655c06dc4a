//===- Comm.cpp - the MPI backend of libsoaprt ----------------------------===//
//
// The soaprt_* communication calls of Runtime.h on MPI, and the start-up and
// error handling the driver uses (Comm.h). A device group becomes a
// communicator once (MPI_Comm_create_group over the group's members, in group
// order) and is cached. Every MPI call is checked: communicators return
// errors (MPI_ERRORS_RETURN) and a failure prints
// `error: rank R: MPI_Xxx failed: <reason>` and calls MPI_Abort, so that the
// job ends instead of leaving the other ranks waiting.
//
// Without MPI (not launched by mpirun, one device) the rank is 0 of 1, no
// MPI function is called, and an op over the group [0] is a copy.
//
//===----------------------------------------------------------------------===//

#include "Comm.h"
#include "GpuHooks.h"
#include "Trace.h"

#include "soap/Runtime/Runtime.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#if SOAP_HAVE_MPI
// The C API only: the C++ bindings would need libmpi_cxx at link time.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace soaprt {
namespace {

struct State {
  bool active = false;
  int rank = 0, size = 1;
#if SOAP_HAVE_MPI
  MPI_Comm world = MPI_COMM_NULL;
  /// Communicators by group (world ranks, in group order).
  std::map<std::vector<int64_t>, MPI_Comm> groups;
  struct PendingSend {
    std::vector<char> data;
    MPI_Request request;
  };
  std::vector<PendingSend *> sends;
#endif
  /// Started collectives (soaprt_all_reduce_start) by handle, until
  /// soaprt_wait.
  struct PendingCollective {
    int64_t gpuHandle = 0; // the GPU runtime's handle, or 0
#if SOAP_HAVE_MPI
    MPI_Request request = MPI_REQUEST_NULL;
#endif
    void *out = nullptr; // for a mean: divided by `members` once complete
    int64_t count = 0, dtype = 0, members = 1;
  };
  std::map<int64_t, PendingCollective> collectives;
  int64_t nextHandle = 1;
  /// Without MPI: sends from rank 0 to itself, by tag, until received.
  std::multimap<int64_t, std::vector<char>> selfMessages;
  /// Staging buffers of the collectives that reorder blocks, kept across
  /// calls: a fresh buffer per call costs a zero fill and page faults.
  std::vector<char> stageIn, stageOut;
};

/// `buffer` with room for `bytes`, grown (never shrunk) as needed.
char *staging(std::vector<char> &buffer, size_t bytes) {
  if (buffer.size() < bytes)
    buffer.resize(bytes);
  return buffer.data();
}

State &state() {
  static State s;
  return s;
}

size_t elementBytes(int64_t dtype) {
  switch (dtype) {
  case SOAPRT_I8:
  case SOAPRT_I1:
    return 1;
  case SOAPRT_F32:
  case SOAPRT_I32:
    return 4;
  case SOAPRT_F64:
  case SOAPRT_I64:
    return 8;
  }
  commFail("internal: communication on unknown element type code " +
               std::to_string(dtype),
           4);
}

/// dst[j][i][:] = src[i][j][:] for src of shape [a][b][chunkBytes].
void swapLeading(const char *src, char *dst, int64_t a, int64_t b,
                 size_t chunkBytes) {
  for (int64_t i = 0; i < a; ++i)
    for (int64_t j = 0; j < b; ++j)
      std::memcpy(dst + (j * a + i) * chunkBytes,
                  src + (i * b + j) * chunkBytes, chunkBytes);
}

/// Divides each of `count` elements by `n` (the mean after a sum).
void divideBy(void *data, int64_t count, int64_t dtype, int64_t n) {
  for (int64_t i = 0; i < count; ++i)
    switch (dtype) {
    case SOAPRT_F32:
      static_cast<float *>(data)[i] /= static_cast<float>(n);
      break;
    case SOAPRT_F64:
      static_cast<double *>(data)[i] /= static_cast<double>(n);
      break;
    case SOAPRT_I32:
      static_cast<int32_t *>(data)[i] /= static_cast<int32_t>(n);
      break;
    case SOAPRT_I64:
      static_cast<int64_t *>(data)[i] /= n;
      break;
    case SOAPRT_I8:
      static_cast<int8_t *>(data)[i] /= static_cast<int8_t>(n);
      break;
    default:
      commFail("internal: a mean of element type code " + std::to_string(dtype),
               4);
    }
}

/// The position of this rank in `group`, or -1.
int64_t memberIndex(const int64_t *group, int64_t size) {
  for (int64_t i = 0; i < size; ++i)
    if (group[i] == state().rank)
      return i;
  return -1;
}

/// Every device of a group must be a rank of this job.
void checkDevices(const char *what, const int64_t *devices, int64_t count) {
  State &s = state();
  for (int64_t i = 0; i < count; ++i)
    if (devices[i] < 0 || devices[i] >= s.size)
      commFail(std::string(what) + " names device " +
                   std::to_string(devices[i]) + " but the job has " +
                   std::to_string(s.size) + " rank" + (s.size == 1 ? "" : "s") +
                   (s.active ? "" : " (run it under mpirun -np N)"),
               4);
}

int checkedCount(int64_t count) {
  if (count < 0 || count > INT_MAX)
    commFail("a message of " + std::to_string(count) +
                 " elements is beyond MPI's int counts",
             4);
  return static_cast<int>(count);
}

#if SOAP_HAVE_MPI

void check(int rc, const char *call) {
  if (rc == MPI_SUCCESS)
    return;
  char reason[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(rc, reason, &length) != MPI_SUCCESS)
    std::snprintf(reason, sizeof(reason), "MPI error code %d", rc);
  commFail(std::string(call) + " failed: " + reason, 4);
}

MPI_Datatype mpiType(int64_t dtype) {
  switch (dtype) {
  case SOAPRT_F32:
    return MPI_FLOAT;
  case SOAPRT_F64:
    return MPI_DOUBLE;
  case SOAPRT_I32:
    return MPI_INT32_T;
  case SOAPRT_I64:
    return MPI_INT64_T;
  case SOAPRT_I8:
    return MPI_INT8_T;
  case SOAPRT_I1:
    return MPI_UINT8_T;
  }
  elementBytes(dtype); // fails
  return MPI_DATATYPE_NULL;
}

/// The MPI reduction for `op` on `dtype`: i1's bytes of 0/1 reduce as
/// arith's signed i1 does (SOAPRT_I1 in Runtime.h).
MPI_Op mpiOp(int64_t op, int64_t dtype) {
  if (dtype == SOAPRT_I1)
    switch (op) {
    case SOAPRT_SUM:
      return MPI_BXOR;
    case SOAPRT_MAX:
      return MPI_BAND;
    case SOAPRT_MIN:
      return MPI_BOR;
    default:
      commFail("internal: a mean of i1 values", 4);
    }
  switch (op) {
  case SOAPRT_SUM:
  case SOAPRT_MEAN:
    return MPI_SUM;
  case SOAPRT_MAX:
    return MPI_MAX;
  case SOAPRT_MIN:
    return MPI_MIN;
  }
  commFail("internal: unknown reduction code " + std::to_string(op), 4);
}

/// The communicator of `group` (this rank is a member): created by the
/// members alone the first time, then reused.
MPI_Comm groupComm(const int64_t *group, int64_t size) {
  State &s = state();
  std::vector<int64_t> key(group, group + size);
  auto it = s.groups.find(key);
  if (it != s.groups.end())
    return it->second;
  MPI_Group world, subset;
  check(MPI_Comm_group(s.world, &world), "MPI_Comm_group");
  std::vector<int> ranks(key.begin(), key.end());
  check(MPI_Group_incl(world, static_cast<int>(size), ranks.data(), &subset),
        "MPI_Group_incl");
  MPI_Comm comm;
  check(MPI_Comm_create_group(s.world, subset, /*tag=*/0, &comm),
        "MPI_Comm_create_group");
  check(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN),
        "MPI_Comm_set_errhandler");
  MPI_Group_free(&subset);
  MPI_Group_free(&world);
  s.groups.emplace(std::move(key), comm);
  return comm;
}

#endif // SOAP_HAVE_MPI

/// Common entry of the collectives: false when this rank is not in the
/// group (the op is a no-op here).
bool enter(const char *what, const int64_t *group, int64_t size) {
  checkDevices(what, group, size);
  return memberIndex(group, size) >= 0;
}

} // namespace

bool launchedByMpi() {
  for (const char *variable :
       {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(variable))
      return true;
  return false;
}

#if SOAP_HAVE_MPI
/// Open MPI's shared-memory transport (vader, "sm" from Open MPI 5) sends a
/// message eagerly only up to 4 KB, header included; beyond, the receiver
/// fetches it from the sender's memory (a system call each, about 2 us
/// here) once the sender's rendezvous message arrived. A step sends many
/// such messages (a recurrent layer's state each time step, blocks of
/// 4-32 KB): eagerly, a receive whose data is there is a copy. Up to the
/// transport's largest fragment (32 KB), unless the user set the limit.
static void preferEagerSharedMemoryMessages() {
  for (const char *name :
       {"OMPI_MCA_btl_vader_eager_limit", "OMPI_MCA_btl_sm_eager_limit"})
    setenv(name, "32768", /*overwrite=*/0);
}
#endif

bool commInit(int *argc, char ***argv, std::string &error) {
#if SOAP_HAVE_MPI
  State &s = state();
  preferEagerSharedMemoryMessages();
  if (MPI_Init(argc, argv) != MPI_SUCCESS) {
    error = "MPI_Init failed";
    return false;
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  s.active = true;
  check(MPI_Comm_rank(MPI_COMM_WORLD, &s.rank), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &s.size), "MPI_Comm_size");
  check(MPI_Comm_dup(MPI_COMM_WORLD, &s.world), "MPI_Comm_dup");
  check(MPI_Comm_set_errhandler(s.world, MPI_ERRORS_RETURN),
        "MPI_Comm_set_errhandler");
  return true;
#else
  (void)argc;
  (void)argv;
  error = "this libsoaprt was built without MPI (install libopenmpi-dev and "
          "rebuild SOAP)";
  return false;
#endif
}

bool commActive() { return state().active; }
int commRank() { return state().rank; }
int commWorldSize() { return state().size; }

double commMaxOverRanks(double value) {
#if SOAP_HAVE_MPI
  State &s = state();
  if (s.active && s.size > 1) {
    double result = value;
    check(MPI_Allreduce(&value, &result, 1, MPI_DOUBLE, MPI_MAX, s.world),
          "MPI_Allreduce");
    return result;
  }
#endif
  return value;
}

void commGatherToRoot(const void *local, size_t bytes, void *all) {
#if SOAP_HAVE_MPI
  State &s = state();
  if (s.active && s.size > 1) {
    check(MPI_Gather(local, checkedCount(static_cast<int64_t>(bytes)),
                     MPI_BYTE, all,
                     checkedCount(static_cast<int64_t>(bytes)), MPI_BYTE, 0,
                     s.world),
          "MPI_Gather");
    return;
  }
#endif
  std::memcpy(all, local, bytes);
}

void commCompletePendingSends() {
  // The lowering waits for every collective it starts; a handle left over
  // would be a lowering bug, and completing it keeps the step's data whole.
  while (!state().collectives.empty())
    soaprt_wait(state().collectives.begin()->first);
  if (gpuHooks)
    gpuHooks->completePendingSends();
#if SOAP_HAVE_MPI
  State &s = state();
  for (State::PendingSend *send : s.sends) {
    check(MPI_Wait(&send->request, MPI_STATUS_IGNORE), "MPI_Wait");
    delete send;
  }
  s.sends.clear();
#endif
}

void commFinalize() {
#if SOAP_HAVE_MPI
  State &s = state();
  if (!s.active)
    return;
  commCompletePendingSends();
  for (auto &entry : s.groups)
    if (entry.second != MPI_COMM_NULL)
      MPI_Comm_free(&entry.second);
  s.groups.clear();
  MPI_Comm_free(&s.world);
  MPI_Finalize();
  s.active = false;
#endif
}

bool commEnter(const char *what, const int64_t *group, int64_t size) {
  return enter(what, group, size);
}

size_t commElementBytes(int64_t dtype) { return elementBytes(dtype); }

void commDivideBy(void *data, int64_t count, int64_t dtype, int64_t n) {
  divideBy(data, count, dtype, n);
}

void commFail(const std::string &message, int code) {
  State &s = state();
  std::fflush(stdout);
  if (s.active)
    std::fprintf(stderr, "error: rank %d: %s\n", s.rank, message.c_str());
  else
    std::fprintf(stderr, "error: %s\n", message.c_str());
  std::fflush(stderr);
#if SOAP_HAVE_MPI
  if (s.active)
    MPI_Abort(MPI_COMM_WORLD, code);
#endif
  std::exit(code);
}

} // namespace soaprt

using namespace soaprt;

extern "C" {

int64_t soaprt_rank(void) { return state().rank; }

void soaprt_all_reduce(const void *in, void *out, int64_t count, int64_t dtype,
                       int64_t op, const int64_t *group, int64_t groupSize) {
  if (onGpu(in) || onGpu(out)) // device buffers: GpuComm.cpp
    return gpuHooks->allReduce(in, out, count, dtype, op, group, groupSize);
  if (!enter("soap.all_reduce", group, groupSize))
    return;
  size_t bytes = count * elementBytes(dtype);
  ScopedEvent event("soap.all_reduce", "comm", bytes, groupSize);
#if SOAP_HAVE_MPI
  if (groupSize > 1) {
    // The lowering reduces a buffer that dies at the call in place (the
    // same pointer twice): MPI wants MPI_IN_PLACE for that.
    check(MPI_Allreduce(in == out ? MPI_IN_PLACE : in, out, checkedCount(count),
                        mpiType(dtype), mpiOp(op, dtype),
                        groupComm(group, groupSize)),
          "MPI_Allreduce");
    if (op == SOAPRT_MEAN)
      divideBy(out, count, dtype, groupSize);
    return;
  }
#endif
  if (in != out)
    std::memcpy(out, in, bytes); // a group of one
}

int64_t soaprt_all_reduce_start(const void *in, void *out, int64_t count,
                                int64_t dtype, int64_t op,
                                const int64_t *group, int64_t groupSize) {
  State &s = state();
  State::PendingCollective pending;
  if (onGpu(in) || onGpu(out)) {
    pending.gpuHandle = gpuHooks->allReduceStart(in, out, count, dtype, op,
                                                 group, groupSize);
    if (!pending.gpuHandle)
      return 0;
  } else {
#if SOAP_HAVE_MPI
    if (!enter("soap.all_reduce", group, groupSize))
      return 0;
    if (groupSize == 1) {
      if (in != out)
        std::memcpy(out, in, count * elementBytes(dtype));
      return 0;
    }
    // Only posts the all-reduce: soap.wait times the rest.
    ScopedEvent event("soap.all_reduce_start", "comm",
                      count * elementBytes(dtype), groupSize);
    check(MPI_Iallreduce(in == out ? MPI_IN_PLACE : in, out,
                         checkedCount(count), mpiType(dtype), mpiOp(op, dtype),
                         groupComm(group, groupSize), &pending.request),
          "MPI_Iallreduce");
    if (op == SOAPRT_MEAN) {
      pending.out = out;
      pending.count = count;
      pending.dtype = dtype;
      pending.members = groupSize;
    }
#else
    soaprt_all_reduce(in, out, count, dtype, op, group, groupSize);
    return 0;
#endif
  }
  int64_t handle = s.nextHandle++;
  s.collectives.emplace(handle, pending);
  return handle;
}

void soaprt_wait(int64_t handle) {
  if (handle == 0)
    return;
  State &s = state();
  auto it = s.collectives.find(handle);
  if (it == s.collectives.end())
    commFail("internal: soaprt_wait(" + std::to_string(handle) +
                 ") of a collective that was not started or was already "
                 "waited for",
             4);
  State::PendingCollective pending = it->second;
  s.collectives.erase(it);
  if (pending.gpuHandle)
    return gpuHooks->wait(pending.gpuHandle);
#if SOAP_HAVE_MPI
  ScopedEvent event("soap.wait", "comm", 0);
  check(MPI_Wait(&pending.request, MPI_STATUS_IGNORE), "MPI_Wait");
  if (pending.out)
    divideBy(pending.out, pending.count, pending.dtype, pending.members);
#endif
}

void soaprt_all_gather(const void *in, void *out, int64_t outer, int64_t chunk,
                       int64_t dtype, const int64_t *group, int64_t groupSize) {
  if (onGpu(in) || onGpu(out))
    return gpuHooks->allGather(in, out, outer, chunk, dtype, group, groupSize);
  if (!enter("soap.all_gather", group, groupSize))
    return;
  size_t chunkBytes = chunk * elementBytes(dtype);
  ScopedEvent event("soap.all_gather", "comm", groupSize * outer * chunkBytes,
                    groupSize);
#if SOAP_HAVE_MPI
  if (groupSize > 1) {
    // MPI concatenates whole buffers: [n][outer][chunk], then reorder.
    char *target = static_cast<char *>(out);
    if (outer > 1)
      target = staging(state().stageOut, groupSize * outer * chunkBytes);
    int count = checkedCount(outer * chunk);
    check(MPI_Allgather(in, count, mpiType(dtype), target, count,
                        mpiType(dtype), groupComm(group, groupSize)),
          "MPI_Allgather");
    if (outer > 1)
      swapLeading(target, static_cast<char *>(out), groupSize, outer,
                  chunkBytes);
    return;
  }
#endif
  std::memcpy(out, in, outer * chunkBytes);
}

void soaprt_reduce_scatter(const void *in, void *out, int64_t outer,
                           int64_t chunk, int64_t dtype, int64_t op,
                           const int64_t *group, int64_t groupSize) {
  if (onGpu(in) || onGpu(out))
    return gpuHooks->reduceScatter(in, out, outer, chunk, dtype, op, group,
                                   groupSize);
  if (!enter("soap.reduce_scatter", group, groupSize))
    return;
  size_t chunkBytes = chunk * elementBytes(dtype);
  ScopedEvent event("soap.reduce_scatter", "comm",
                    groupSize * outer * chunkBytes, groupSize);
#if SOAP_HAVE_MPI
  if (groupSize > 1) {
    // MPI scatters whole blocks: bring the input to [n][outer][chunk].
    const void *source = in;
    if (outer > 1) {
      char *packed = staging(state().stageIn, groupSize * outer * chunkBytes);
      swapLeading(static_cast<const char *>(in), packed, outer, groupSize,
                  chunkBytes);
      source = packed;
    }
    check(MPI_Reduce_scatter_block(source, out, checkedCount(outer * chunk),
                                   mpiType(dtype), mpiOp(op, dtype),
                                   groupComm(group, groupSize)),
          "MPI_Reduce_scatter_block");
    if (op == SOAPRT_MEAN)
      divideBy(out, outer * chunk, dtype, groupSize);
    return;
  }
#endif
  std::memcpy(out, in, outer * chunkBytes);
}

void soaprt_all_to_all(const void *in, void *out, int64_t splitOuter,
                       int64_t splitChunk, int64_t concatOuter,
                       int64_t concatChunk, int64_t dtype, const int64_t *group,
                       int64_t groupSize) {
  if (onGpu(in) || onGpu(out))
    return gpuHooks->allToAll(in, out, splitOuter, splitChunk, concatOuter,
                              concatChunk, dtype, group, groupSize);
  if (!enter("soap.all_to_all", group, groupSize))
    return;
  size_t bytes = elementBytes(dtype);
  ScopedEvent event("soap.all_to_all", "comm",
                    groupSize * splitOuter * splitChunk * bytes, groupSize);
#if SOAP_HAVE_MPI
  if (groupSize > 1) {
    size_t total = groupSize * splitOuter * splitChunk * bytes;
    char *send = staging(state().stageIn, total);
    char *recv = staging(state().stageOut, total);
    swapLeading(static_cast<const char *>(in), send, splitOuter, groupSize,
                splitChunk * bytes);
    int count = checkedCount(splitOuter * splitChunk);
    check(MPI_Alltoall(send, count, mpiType(dtype), recv, count, mpiType(dtype),
                       groupComm(group, groupSize)),
          "MPI_Alltoall");
    swapLeading(recv, static_cast<char *>(out), groupSize, concatOuter,
                concatChunk * bytes);
    return;
  }
#endif
  (void)concatOuter;
  (void)concatChunk;
  std::memcpy(out, in, splitOuter * splitChunk * bytes);
}

void soaprt_broadcast(const void *in, void *out, int64_t count, int64_t dtype,
                      int64_t root, const int64_t *group, int64_t groupSize) {
  if (onGpu(in) || onGpu(out))
    return gpuHooks->broadcast(in, out, count, dtype, root, group, groupSize);
  if (!enter("soap.broadcast", group, groupSize))
    return;
  int64_t rootIndex = -1;
  for (int64_t i = 0; i < groupSize; ++i)
    if (group[i] == root)
      rootIndex = i;
  if (rootIndex < 0)
    commFail("soap.broadcast: the root " + std::to_string(root) +
                 " is not in the group",
             4);
  size_t bytes = count * elementBytes(dtype);
  ScopedEvent event("soap.broadcast", "comm", bytes, groupSize);
  if (root == state().rank)
    std::memcpy(out, in, bytes);
#if SOAP_HAVE_MPI
  if (groupSize > 1)
    check(MPI_Bcast(out, checkedCount(count), mpiType(dtype),
                    static_cast<int>(rootIndex), groupComm(group, groupSize)),
          "MPI_Bcast");
#endif
}

#if SOAP_HAVE_MPI
/// Frees the copies of the sends that MPI has completed, so that a step
/// holds only the messages still in flight, not a copy of every message it
/// sent (a layer pipeline sends its activations and gradients; sendEarly
/// sends each as soon as it exists).
static void freeCompletedSends(State &s) {
  auto done = [](State::PendingSend *send) {
    int complete = 0;
    check(MPI_Test(&send->request, &complete, MPI_STATUS_IGNORE), "MPI_Test");
    if (complete)
      delete send;
    return complete != 0;
  };
  s.sends.erase(std::remove_if(s.sends.begin(), s.sends.end(), done),
                s.sends.end());
}
#endif

void soaprt_send(const void *in, int64_t count, int64_t dtype,
                 const int64_t *from, const int64_t *to, int64_t pairs,
                 int64_t tag) {
  if (onGpu(in))
    return gpuHooks->send(in, count, dtype, from, to, pairs, tag);
  checkDevices("soap.send", from, pairs);
  checkDevices("soap.send", to, pairs);
  State &s = state();
  size_t bytes = count * elementBytes(dtype);
  ScopedEvent event("soap.send", "comm", bytes);
  for (int64_t i = 0; i < pairs; ++i) {
    if (from[i] != s.rank)
      continue;
#if SOAP_HAVE_MPI
    if (s.active) {
      // A copy in flight, so that the caller may free its buffer and pairs
      // that exchange in both directions cannot deadlock.
      freeCompletedSends(s);
      auto *send = new State::PendingSend;
      send->data.assign(static_cast<const char *>(in),
                        static_cast<const char *>(in) + bytes);
      check(MPI_Isend(send->data.data(), checkedCount(count), mpiType(dtype),
                      static_cast<int>(to[i]), static_cast<int>(tag), s.world,
                      &send->request),
            "MPI_Isend");
      s.sends.push_back(send);
      continue;
    }
#endif
    const char *data = static_cast<const char *>(in);
    s.selfMessages.emplace(tag, std::vector<char>(data, data + bytes));
  }
}

void soaprt_recv(void *out, int64_t count, int64_t dtype, const int64_t *from,
                 const int64_t *to, int64_t pairs, int64_t tag) {
  if (onGpu(out))
    return gpuHooks->recv(out, count, dtype, from, to, pairs, tag);
  checkDevices("soap.recv", from, pairs);
  checkDevices("soap.recv", to, pairs);
  State &s = state();
  size_t bytes = count * elementBytes(dtype);
  ScopedEvent event("soap.recv", "comm", bytes);
  for (int64_t i = 0; i < pairs; ++i) {
    if (to[i] != s.rank)
      continue;
#if SOAP_HAVE_MPI
    if (s.active) {
      check(MPI_Recv(out, checkedCount(count), mpiType(dtype),
                     static_cast<int>(from[i]), static_cast<int>(tag), s.world,
                     MPI_STATUS_IGNORE),
            "MPI_Recv");
      continue;
    }
#endif
    auto it = s.selfMessages.find(tag);
    if (it == s.selfMessages.end() || it->second.size() != bytes)
      commFail("soap.recv: no matching soap.send of " + std::to_string(bytes) +
                   " bytes with tag " + std::to_string(tag),
               4);
    std::memcpy(out, it->second.data(), bytes);
    s.selfMessages.erase(it);
  }
}

} // extern "C"

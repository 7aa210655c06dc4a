//===- Comm.h - ranks, MPI start-up and fatal errors ----------*- C++ -*-===//
//
// The driver's side of the MPI backend (runtime/Comm.cpp): whether MPI runs,
// this process's rank and the world size, and how an error ends the job.
// Without MPI (a single-device executable started without mpirun) the rank
// is 0 of 1 and no MPI function is called.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_RUNTIME_COMM_H
#define SOAP_RUNTIME_COMM_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace soaprt {

/// Whether this process was started by an MPI launcher (mpirun, srun).
bool launchedByMpi();

/// Initialises MPI (errors are returned, not fatal, on every communicator
/// SOAP uses). Returns false with `error` when MPI cannot start or libsoaprt
/// was built without MPI.
bool commInit(int *argc, char ***argv, std::string &error);

/// Whether commInit succeeded (and commFinalize was not called yet).
bool commActive();
int commRank();
int commWorldSize();

/// The largest `value` over all ranks (the value itself without MPI).
double commMaxOverRanks(double value);

/// Completes the point-to-point sends still in flight (called after each
/// step).
void commCompletePendingSends();

/// Rank 0 receives `bytes` from every rank, in rank order, into `all`
/// (size x bytes; only rank 0's is written). One rank: a copy.
void commGatherToRoot(const void *local, size_t bytes, void *all);

/// For the GPU backend (GpuComm.cpp): checks that every rank of `group`
/// exists and returns whether this rank is a member (as the MPI
/// collectives do first), and the size of an element of `dtype`.
bool commEnter(const char *what, const int64_t *group, int64_t size);
size_t commElementBytes(int64_t dtype);
/// Divides each of `count` elements of `dtype` at `data` (host memory) by
/// `n`, integers truncating: the mean after a sum.
void commDivideBy(void *data, int64_t count, int64_t dtype, int64_t n);

/// Completes pending sends and shuts MPI down.
void commFinalize();

/// Prints `error: [rank R: ]message` to stderr and ends the job with
/// `code`: MPI_Abort on MPI_COMM_WORLD under MPI (so that no rank is left
/// waiting in a collective), exit() otherwise.
[[noreturn]] void commFail(const std::string &message, int code);

} // namespace soaprt

#endif // SOAP_RUNTIME_COMM_H

//===- Memory.h - the bytes a rank's tensors hold -------------*- C++ -*-===//
//
// Every buffer a CPU executable's step allocates goes through
// finalize-memref-to-llvm's generic allocation functions, which Memory.cpp
// defines (weakly: libsoaprt_gpu's device-memory versions replace them in
// GPU executables); the driver's state buffers count here too. The high
// water mark is the measured counterpart of the simulator's peak memory:
// tensors only, not the code, MPI's or the BLAS libraries' own buffers.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_RUNTIME_MEMORY_H
#define SOAP_RUNTIME_MEMORY_H

#include <cstdint>

namespace soaprt {

/// `bytes` more (or, negative, fewer) held in tensor buffers.
void noteTensorBytes(int64_t bytes);
/// The most bytes held at once since the program started.
int64_t peakTensorBytes();
/// Starts the high-water mark again from what is held now (after the
/// arguments' initialization, which holds a whole tensor while it draws a
/// shard of it).
void restartTensorPeak();
/// The bytes held now.
int64_t liveTensorBytes();
/// The usable size of a block from malloc or aligned_alloc (what it holds).
int64_t heapBlockBytes(void *p);

} // namespace soaprt

#endif // SOAP_RUNTIME_MEMORY_H

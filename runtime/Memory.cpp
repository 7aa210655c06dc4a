//===- Memory.cpp - the bytes a rank's tensors hold -----------------------===//

#include "Memory.h"
#include "Trace.h"

#include "soap/Runtime/Runtime.h"

#include <atomic>
#include <cstdlib>
#include <malloc.h>

namespace soaprt {
namespace {
std::atomic<int64_t> live{0}, peak{0};
} // namespace

void noteTensorBytes(int64_t bytes) {
  int64_t now = live.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  traceTensorMemory(now);
  int64_t high = peak.load(std::memory_order_relaxed);
  while (now > high &&
         !peak.compare_exchange_weak(high, now, std::memory_order_relaxed)) {
  }
}

int64_t peakTensorBytes() { return peak.load(std::memory_order_relaxed); }
void restartTensorPeak() { peak.store(live.load(std::memory_order_relaxed)); }
int64_t liveTensorBytes() { return live.load(std::memory_order_relaxed); }

int64_t heapBlockBytes(void *p) {
  return p ? static_cast<int64_t>(malloc_usable_size(p)) : 0;
}

} // namespace soaprt

extern "C" {
void *soaprt_host_alloc(uint64_t bytes) {
  void *p = std::malloc(bytes);
  soaprt::noteTensorBytes(soaprt::heapBlockBytes(p));
  return p;
}

void *soaprt_host_aligned_alloc(uint64_t alignment, uint64_t bytes) {
  // aligned_alloc wants a size that is a multiple of the alignment.
  uint64_t rounded = (bytes + alignment - 1) / alignment * alignment;
  void *p = std::aligned_alloc(alignment, rounded ? rounded : alignment);
  soaprt::noteTensorBytes(soaprt::heapBlockBytes(p));
  return p;
}

void soaprt_host_free(void *p) {
  soaprt::noteTensorBytes(-soaprt::heapBlockBytes(p));
  std::free(p);
}

// Weak: libsoaprt_gpu's definitions (device memory) win where both are
// linked.
__attribute__((weak)) void *_mlir_memref_to_llvm_alloc(uint64_t bytes) {
  return soaprt_host_alloc(bytes);
}
__attribute__((weak)) void *
_mlir_memref_to_llvm_aligned_alloc(uint64_t alignment, uint64_t bytes) {
  return soaprt_host_aligned_alloc(alignment, bytes);
}
__attribute__((weak)) void _mlir_memref_to_llvm_free(void *p) {
  soaprt_host_free(p);
}
}

//===- GpuMgpu.cpp - the mgpu* runtime ABI of MLIR's gpu-to-llvm
//-----------===//
//
// `--gpu-lower-to-nvvm-pipeline` (gpu-to-llvm and the gpu binary's
// translation, MLIR 22) turns gpu.launch_func, gpu.alloc, gpu.memcpy, ...
// into calls of the C functions below; libsoaprt_gpu defines them on the
// CUDA runtime API (not upstream's wrapper library):
//
//  - every stream is the runtime's single compute stream: mgpuStreamCreate
//    returns it, mgpuStreamDestroy of it does nothing, and
//    mgpuStreamSynchronize of it returns at once (see there);
//  - a module binary (cubin, fatbin, or PTX for mgpuModuleLoadJIT) is only
//    recorded when the global constructor loads it, and loaded with
//    cudaLibraryLoadData when its first kernel is looked up, so that an
//    executable starts, and reports a missing GPU clearly, before any CUDA
//    call; kernels are cudaKernel_t handles launched with cudaLaunchKernel
//    (CUDA >= 12), so nothing links libcuda;
//  - gpu.alloc is cudaMallocAsync on the stream (host_shared: managed
//    memory), gpu.memset of a 32- or 16-bit pattern whose bytes differ runs
//    a small fill kernel written in PTX below.
//
//===----------------------------------------------------------------------===//

#include "GpuRuntime.h"

#include <cstdint>
#include <cstring>
#include <set>
#include <unordered_map>
#include <vector>

using namespace soaprt::gpu;

namespace {

/// A gpu.binary's module, loaded on first use.
struct Module {
  /// A copy of the binary (8-byte aligned; NUL-terminated for PTX).
  std::vector<uint64_t> image;
  cudaLibrary_t library = nullptr;
  /// Kernels by the name pointer of the launch site (each site passes the
  /// same constant string every time).
  std::unordered_map<const char *, cudaKernel_t> kernels;
};

Module *record(const void *data, size_t bytes) {
  auto *module = new Module;
  module->image.assign(bytes / 8 + 1, 0); // the zero tail ends PTX text
  std::memcpy(module->image.data(), data, bytes);
  return module;
}

cudaKernel_t kernelOf(Module *module, const char *name) {
  auto it = module->kernels.find(name);
  if (it != module->kernels.end())
    return it->second;
  start();
  if (!module->library)
    check(cudaLibraryLoadData(&module->library, module->image.data(), nullptr,
                              nullptr, 0, nullptr, nullptr, 0),
          "cudaLibraryLoadData");
  cudaKernel_t kernel = nullptr;
  cudaError_t status = cudaLibraryGetKernel(&kernel, module->library, name);
  if (status != cudaSuccess)
    fail("cudaLibraryGetKernel",
         std::string(cudaGetErrorString(status)) + " (kernel '" + name + "')");
  module->kernels.emplace(name, kernel);
  return kernel;
}

/// Blocks of 256 threads, at most 65535 x 8 of them (the kernels loop).
void launchFill(cudaKernel_t kernel, void **params, size_t count,
                cudaStream_t stream) {
  size_t blocks = (count + 255) / 256;
  if (blocks > 65535 * 8)
    blocks = 65535 * 8;
  check(cudaLaunchKernel(reinterpret_cast<const void *>(kernel),
                         dim3(static_cast<unsigned>(blocks)), dim3(256), params,
                         0, stream),
        "cudaLaunchKernel");
}

/// fill32(u32 *dst, u32 value, u64 count) and fill16(u16 *dst, u16 value,
/// u64 count), grid-stride loops (checked with ptxas -arch=sm_90).
const char kFillPtx[] =
    ".version 7.0\n"
    ".target sm_75\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry soaprt_fill32(.param .u64 dst, .param .u32 value,\n"
    "                              .param .u64 count)\n"
    "{\n"
    "  .reg .pred %p;\n"
    "  .reg .b32 %r<6>;\n"
    "  .reg .b64 %rd<8>;\n"
    "  ld.param.u64 %rd1, [dst];\n"
    "  ld.param.u32 %r1, [value];\n"
    "  ld.param.u64 %rd2, [count];\n"
    "  cvta.to.global.u64 %rd1, %rd1;\n"
    "  mov.u32 %r2, %ctaid.x;\n"
    "  mov.u32 %r3, %ntid.x;\n"
    "  mov.u32 %r4, %tid.x;\n"
    "  mov.u32 %r5, %nctaid.x;\n"
    "  cvt.u64.u32 %rd3, %r4;\n"
    "  mad.wide.u32 %rd3, %r2, %r3, %rd3;\n"
    "  mul.wide.u32 %rd4, %r5, %r3;\n"
    "LOOP:\n"
    "  setp.ge.u64 %p, %rd3, %rd2;\n"
    "  @%p bra DONE;\n"
    "  shl.b64 %rd5, %rd3, 2;\n"
    "  add.s64 %rd6, %rd1, %rd5;\n"
    "  st.global.u32 [%rd6], %r1;\n"
    "  add.s64 %rd3, %rd3, %rd4;\n"
    "  bra LOOP;\n"
    "DONE:\n"
    "  ret;\n"
    "}\n"
    "\n"
    ".visible .entry soaprt_fill16(.param .u64 dst, .param .u16 value,\n"
    "                              .param .u64 count)\n"
    "{\n"
    "  .reg .pred %p;\n"
    "  .reg .b16 %h;\n"
    "  .reg .b32 %r<6>;\n"
    "  .reg .b64 %rd<8>;\n"
    "  ld.param.u64 %rd1, [dst];\n"
    "  ld.param.u16 %h, [value];\n"
    "  ld.param.u64 %rd2, [count];\n"
    "  cvta.to.global.u64 %rd1, %rd1;\n"
    "  mov.u32 %r2, %ctaid.x;\n"
    "  mov.u32 %r3, %ntid.x;\n"
    "  mov.u32 %r4, %tid.x;\n"
    "  mov.u32 %r5, %nctaid.x;\n"
    "  cvt.u64.u32 %rd3, %r4;\n"
    "  mad.wide.u32 %rd3, %r2, %r3, %rd3;\n"
    "  mul.wide.u32 %rd4, %r5, %r3;\n"
    "LOOP:\n"
    "  setp.ge.u64 %p, %rd3, %rd2;\n"
    "  @%p bra DONE;\n"
    "  shl.b64 %rd5, %rd3, 1;\n"
    "  add.s64 %rd6, %rd1, %rd5;\n"
    "  st.global.u16 [%rd6], %h;\n"
    "  add.s64 %rd3, %rd3, %rd4;\n"
    "  bra LOOP;\n"
    "DONE:\n"
    "  ret;\n"
    "}\n";

Module *fillModule() {
  static Module *module = record(kFillPtx, sizeof(kFillPtx));
  return module;
}

/// Managed allocations (gpu.alloc host_shared), freed with cudaFree.
std::set<void *> &managed() {
  static std::set<void *> pointers;
  return pointers;
}

} // namespace

/// The stream a mgpu* call names, or the compute stream for null.
static cudaStream_t streamOrCompute(void *stream) {
  return stream ? static_cast<cudaStream_t>(stream) : soaprt::gpu::stream();
}

extern "C" {

void *mgpuModuleLoad(void *data, int64_t size) {
  return record(data, static_cast<size_t>(size));
}

/// PTX (`format = isa`): NUL-terminated text; the driver compiles it.
void *mgpuModuleLoadJIT(void *data, int optLevel) {
  (void)optLevel;
  return record(data, std::strlen(static_cast<const char *>(data)) + 1);
}

void mgpuModuleUnload(void *module) {
  auto *m = static_cast<Module *>(module);
  // Called by a global destructor: the CUDA runtime may be shutting down
  // already, and the process ends anyway, so failures are not reported.
  if (m->library)
    (void)cudaLibraryUnload(m->library);
  delete m;
}

void *mgpuModuleGetFunction(void *module, const char *name) {
  return kernelOf(static_cast<Module *>(module), name);
}

void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, void *stream,
                      void **params, void **extra, size_t paramsCount) {
  (void)extra;
  (void)paramsCount;
  if (smem > 48 * 1024)
    // Above 48 KiB a kernel must opt in to its dynamic shared memory.
    check(cudaFuncSetAttribute(
              function, cudaFuncAttributeMaxDynamicSharedMemorySize, smem),
          "cudaFuncSetAttribute");
  check(cudaLaunchKernel(
            function,
            dim3(static_cast<unsigned>(gridX), static_cast<unsigned>(gridY),
                 static_cast<unsigned>(gridZ)),
            dim3(static_cast<unsigned>(blockX), static_cast<unsigned>(blockY),
                 static_cast<unsigned>(blockZ)),
            params, static_cast<size_t>(smem), streamOrCompute(stream)),
        "cudaLaunchKernel");
}

void *mgpuStreamCreate() { return soaprt::gpu::stream(); }

void mgpuStreamDestroy(void *stream) {
  if (stream != soaprt::gpu::stream())
    check(cudaStreamDestroy(static_cast<cudaStream_t>(stream)),
          "cudaStreamDestroy");
}

void mgpuStreamSynchronize(void *stream) {
  // gpu-to-llvm brackets every synchronous gpu.launch_func with stream
  // create, synchronize and destroy. Kernels, library calls, copies and
  // NCCL all run in order on the compute stream, and the host reads device
  // memory only through the runtime, which waits first (the driver, staged
  // communication, traces): waiting after every kernel would only stall
  // the host, so the compute stream is not waited for here.
  if (!stream || stream == soaprt::gpu::stream())
    return;
  check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)),
        "cudaStreamSynchronize");
}

// finalize-memref-to-llvm{use-generic-functions} allocation: every buffer
// of a module lowered by --soap-lower-gpu is device memory, ordered on the
// compute stream.
void *_mlir_memref_to_llvm_alloc(uint64_t bytes) {
  return bytes ? soaprt::gpu::allocate(bytes) : nullptr;
}

void *_mlir_memref_to_llvm_aligned_alloc(uint64_t alignment, uint64_t bytes) {
  // cudaMallocAsync returns 256-byte aligned memory.
  if (alignment > 256)
    soaprt::gpu::failWith("a buffer needs " + std::to_string(alignment) +
                          "-byte alignment; device memory gives 256");
  return _mlir_memref_to_llvm_alloc(bytes);
}

void _mlir_memref_to_llvm_free(void *ptr) {
  if (ptr)
    soaprt::gpu::release(ptr);
}

// Events: with one stream they only order what is ordered already, but
// gpu-to-llvm emits them where async tokens merge.
void *mgpuEventCreate() {
  cudaEvent_t event = nullptr;
  start();
  check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
        "cudaEventCreateWithFlags");
  return event;
}

void mgpuEventDestroy(void *event) {
  check(cudaEventDestroy(static_cast<cudaEvent_t>(event)), "cudaEventDestroy");
}

void mgpuEventSynchronize(void *event) {
  check(cudaEventSynchronize(static_cast<cudaEvent_t>(event)),
        "cudaEventSynchronize");
}

void mgpuEventRecord(void *event, void *stream) {
  check(cudaEventRecord(static_cast<cudaEvent_t>(event),
                        static_cast<cudaStream_t>(stream)),
        "cudaEventRecord");
}

void mgpuStreamWaitEvent(void *stream, void *event) {
  check(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream),
                            static_cast<cudaEvent_t>(event), 0),
        "cudaStreamWaitEvent");
}

void *mgpuMemAlloc(uint64_t bytes, void *stream, bool isHostShared) {
  if (bytes == 0)
    return nullptr;
  void *p = nullptr;
  if (isHostShared) {
    start();
    check(cudaMallocManaged(&p, bytes, cudaMemAttachGlobal),
          "cudaMallocManaged");
    managed().insert(p);
    return p;
  }
  check(cudaMallocAsync(&p, bytes, streamOrCompute(stream)), "cudaMallocAsync");
  return p;
}

void mgpuMemFree(void *ptr, void *stream) {
  if (!ptr)
    return;
  if (managed().erase(ptr)) {
    // cudaFree waits for the device: the memory may be in use.
    check(cudaFree(ptr), "cudaFree");
    return;
  }
  check(cudaFreeAsync(ptr, streamOrCompute(stream)), "cudaFreeAsync");
}

void mgpuMemcpy(void *dst, void *src, size_t bytes, void *stream) {
  if (bytes == 0)
    return;
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault,
                        streamOrCompute(stream)),
        "cudaMemcpyAsync");
}

void mgpuMemset32(void *dst, unsigned value, size_t count, void *stream) {
  if (count == 0)
    return;
  cudaStream_t s = streamOrCompute(stream);
  unsigned byte = value & 0xff;
  if (value == byte * 0x01010101u) {
    check(cudaMemsetAsync(dst, static_cast<int>(byte), count * 4, s),
          "cudaMemsetAsync");
    return;
  }
  uint64_t n = count;
  void *params[] = {&dst, &value, &n};
  launchFill(kernelOf(fillModule(), "soaprt_fill32"), params, count, s);
}

void mgpuMemset16(void *dst, unsigned short value, size_t count, void *stream) {
  if (count == 0)
    return;
  cudaStream_t s = streamOrCompute(stream);
  unsigned byte = value & 0xff;
  if (value == byte * 0x0101u) {
    check(cudaMemsetAsync(dst, static_cast<int>(byte), count * 2, s),
          "cudaMemsetAsync");
    return;
  }
  uint64_t n = count;
  void *params[] = {&dst, &value, &n};
  launchFill(kernelOf(fillModule(), "soaprt_fill16"), params, count, s);
}

} // extern "C"

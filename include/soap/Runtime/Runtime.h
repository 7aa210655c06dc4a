/*===- Runtime.h - the C ABI between generated code and libsoaprt -*- C -*-===*
 *
 * Code that `--soap-lower-cpu` emits calls the soaprt_* kernels below, and
 * defines the soap_* symbols at the end that the driver (runtime/Driver.cpp)
 * reads. Everything is plain C so that any code generator can target it.
 * The communication calls (MPI backend, runtime/Comm.cpp) are here too, and
 * what `--soap-lower-gpu` code calls: the soaprt_gpu_* kernels and MLIR's
 * mgpu* GPU runtime ABI (libsoaprt_gpu, runtime/Gpu*.cpp).
 *
 *===----------------------------------------------------------------------===*/

#ifndef SOAP_RUNTIME_RUNTIME_H
#define SOAP_RUNTIME_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*--- Kernels ---------------------------------------------------------------*
 * Matrices are given as a pointer to element (0, 0) and a stride (in
 * elements) per dimension, so that transposed operands and subviews need no
 * copy when BLAS can read them. Every kernel accumulates into its output
 * (C += A * B), as the linalg ops it replaces do; the convolutions can
 * overwrite it instead (their `accumulate` argument).                       */

/** C[m,n] += sum_k A[m,k] * B[k,n], or C[m,n] = sum_k ... when
 *  `accumulate` is 0 (C's old contents are not read: the lowering passes 0
 *  instead of filling C with zeros first). Matrix-vector products are the
 *  n = 1 case (a missing dimension has size 1 and stride 0). */
void soaprt_matmul_f32(int64_t m, int64_t n, int64_t k, const float *a,
                       int64_t am, int64_t ak, const float *b, int64_t bk,
                       int64_t bn, float *c, int64_t cm, int64_t cn,
                       int64_t accumulate);
void soaprt_matmul_f64(int64_t m, int64_t n, int64_t k, const double *a,
                       int64_t am, int64_t ak, const double *b, int64_t bk,
                       int64_t bn, double *c, int64_t cm, int64_t cn,
                       int64_t accumulate);

/** C[i,m,n] += sum_k A[i,m,k] * B[i,k,n] (= without `accumulate`); ab, bb,
 *  cb are batch strides. A batch stride of 0 broadcasts A or B; cb = 0 sums
 *  the products of all batches into the one C. */
void soaprt_batch_matmul_f32(int64_t batch, int64_t m, int64_t n, int64_t k,
                             const float *a, int64_t ab, int64_t am, int64_t ak,
                             const float *b, int64_t bb, int64_t bk, int64_t bn,
                             float *c, int64_t cb, int64_t cm, int64_t cn,
                             int64_t accumulate);
void soaprt_batch_matmul_f64(int64_t batch, int64_t m, int64_t n, int64_t k,
                             const double *a, int64_t ab, int64_t am,
                             int64_t ak, const double *b, int64_t bb,
                             int64_t bk, int64_t bn, double *c, int64_t cb,
                             int64_t cm, int64_t cn, int64_t accumulate);

/** out[n,f,y,x] += sum_{c,i,j} in[n,c,y*sh+i*dh,x*sw+j*dw] * filter[f,c,i,j]
 *  (linalg.conv_2d_nchw_fchw): f32 through oneDNN, f64 (and what oneDNN
 *  refuses, or all with SOAP_DNNL=0) by im2col and GEMM. Sizes: in N x C x H x
 * W, filter F x C x KH x KW, out N x F x OH x OW; s* are element strides. With
 * accumulate = 0 the sum replaces out instead (the lowering passes 0 where out
 * was just filled with zeros, and drops the fill); so do the grouped and spread
 * forms below. filterBlock (outBlock) > 0: the filter (the output, a weight
 * gradient) holds convolution weights [O][I][KH][KW], O and I multiples of
 * the block, stored in oneDNN's blocked layout OIhw<b>i<b>o with b the block
 * (runtime/BlockedLayout.h); its strides are then those of the plain layout,
 * its first two dimensions O and I in either order. The lowering keeps
 * weights, their gradients and optimizer state in that layout across steps
 * (--soap-lower-cpu's blocked-weights); 0: strided as given. */
void soaprt_conv2d_nchw_fchw_f32(int64_t n, int64_t c, int64_t h, int64_t w,
                                 int64_t f, int64_t kh, int64_t kw, int64_t oh,
                                 int64_t ow, int64_t sh, int64_t sw, int64_t dh,
                                 int64_t dw, const float *in, int64_t isn,
                                 int64_t isc, int64_t ish, int64_t isw,
                                 const float *filter, int64_t fsf, int64_t fsc,
                                 int64_t fsh, int64_t fsw, float *out,
                                 int64_t osn, int64_t osf, int64_t osh,
                                 int64_t osw, int64_t accumulate, int64_t filterBlock,
    int64_t outBlock);
void soaprt_conv2d_nchw_fchw_f64(int64_t n, int64_t c, int64_t h, int64_t w,
                                 int64_t f, int64_t kh, int64_t kw, int64_t oh,
                                 int64_t ow, int64_t sh, int64_t sw, int64_t dh,
                                 int64_t dw, const double *in, int64_t isn,
                                 int64_t isc, int64_t ish, int64_t isw,
                                 const double *filter, int64_t fsf, int64_t fsc,
                                 int64_t fsh, int64_t fsw, double *out,
                                 int64_t osn, int64_t osf, int64_t osh,
                                 int64_t osw, int64_t accumulate, int64_t filterBlock,
    int64_t outBlock);

/** Grouped and depthwise convolutions:
 *  out[n,g,f,y,x] += sum_{c,i,j} in[n,g,c,y*sh+i*dh,x*sw+j*dw]
 *                                * filter[g,f,c,i,j]
 *  with c < C and f < F channels per group (a depthwise convolution: C = 1,
 *  G the channels). Sizes: in N x G x C x H x W, filter G x F x C x KH x KW,
 *  out N x G x F x OH x OW; s* are element strides (0 for a dimension of
 *  size 1 is allowed). f32 through oneDNN's grouped convolutions, f64 (and
 *  what oneDNN refuses) one group at a time as soaprt_conv2d_nchw_fchw_*.
 *  With more than one group, filterBlock and outBlock must be 0 (blocked
 *  layouts hold ungrouped weights); a block stops the program with a
 *  message naming the convolution. */
void soaprt_conv2d_grouped_f32(
    int64_t g, int64_t n, int64_t c, int64_t h, int64_t w, int64_t f,
    int64_t kh, int64_t kw, int64_t oh, int64_t ow, int64_t sh, int64_t sw,
    int64_t dh, int64_t dw, const float *in, int64_t isn, int64_t isg,
    int64_t isc, int64_t ish, int64_t isw, const float *filter, int64_t fsg,
    int64_t fsf, int64_t fsc, int64_t fsh, int64_t fsw, float *out, int64_t osn,
    int64_t osg, int64_t osf, int64_t osh, int64_t osw, int64_t accumulate, int64_t filterBlock,
    int64_t outBlock);
void soaprt_conv2d_grouped_f64(int64_t g, int64_t n, int64_t c, int64_t h,
                               int64_t w, int64_t f, int64_t kh, int64_t kw,
                               int64_t oh, int64_t ow, int64_t sh, int64_t sw,
                               int64_t dh, int64_t dw, const double *in,
                               int64_t isn, int64_t isg, int64_t isc,
                               int64_t ish, int64_t isw, const double *filter,
                               int64_t fsg, int64_t fsf, int64_t fsc,
                               int64_t fsh, int64_t fsw, double *out,
                               int64_t osn, int64_t osg, int64_t osf,
                               int64_t osh, int64_t osw, int64_t accumulate, int64_t filterBlock,
    int64_t outBlock);

/** soaprt_conv2d_grouped_f32 on an image that is zero except at rows
 *  offsetH + spreadH * a (a < pointsH) and columns offsetW + spreadW * b
 *  (b < pointsW). Only the points are passed (`points`, strides psn..psw
 *  of its n, g, c, a, b), never the image. Points one apart are a padded
 *  image: oneDNN convolves them with that padding (any window strides).
 *  Points further apart are the autodiff's input gradient, the output's
 *  adjoint spread into zeros and read through the flipped filter (unit
 *  window strides): oneDNN runs it as the backward-data convolution of the
 *  points (no product with the zeros), reading a filter passed backwards
 *  (negative window strides, the pointer at its last element there)
 *  without a copy. What oneDNN refuses runs as the plain grouped
 *  convolution of the whole image. */
void soaprt_conv2d_spread_f32(
    int64_t g, int64_t n, int64_t c, int64_t h, int64_t w, int64_t f,
    int64_t kh, int64_t kw, int64_t oh, int64_t ow, int64_t sh, int64_t sw,
    int64_t dh, int64_t dw, int64_t offsetH, int64_t offsetW, int64_t spreadH,
    int64_t spreadW, int64_t pointsH, int64_t pointsW, const float *points,
    int64_t psn, int64_t psg, int64_t psc, int64_t psh, int64_t psw,
    const float *filter, int64_t fsg, int64_t fsf, int64_t fsc, int64_t fsh,
    int64_t fsw, float *out, int64_t osn, int64_t osg, int64_t osf, int64_t osh,
    int64_t osw, int64_t accumulate, int64_t filterBlock,
    int64_t outBlock);

/** Called first by the driver: when OpenBLAS fell back to its generic
 *  kernels on a CPU it does not recognise (virtual machines), sets
 *  OPENBLAS_CORETYPE from the CPU's features and re-executes the program
 *  with `argv`. Returns 0 when nothing needed doing. */
int soaprt_select_blas_core(char **argv);

/*--- Tracing ---------------------------------------------------------------*
 * Generated code brackets every kernel with these; they return at once
 * unless the driver enabled tracing. `id` indexes the "ops" list of
 * soap_model_info.                                                         */
void soaprt_op_begin(int64_t id);
void soaprt_op_end(int64_t id);

/*--- Communication ----------------------------------------------------------*
 * What soap.* communication ops lower to (docs/lowering.md). Buffers are
 * dense and row-major; `out` never aliases `in`. A group lists world ranks
 * (MPI_COMM_WORLD); a rank outside the group returns at once and leaves
 * `out` as it is. Sizes are in elements of `dtype`. Every MPI call is
 * checked: a failure prints the rank, the call and MPI's reason, and aborts
 * the whole job. Without MPI (one rank, no mpirun) a group of rank 0 alone
 * works by copying.
 *
 * Device buffers (libsoaprt_gpu linked and started, cudaPointerGetAttributes
 * says device or managed memory) go to the GPU backend instead: NCCL on the
 * compute stream (returning before the transfer ends, like a kernel), or
 * pinned host copies around the MPI calls above when ranks share a GPU
 * (SOAP_GPU_COMM=nccl|mpi; docs/runtime.md). A soaprt_send of device memory
 * under NCCL is issued at the next communication call or at the end of the
 * step, grouped with the receives there, so that exchanges in both
 * directions cannot deadlock.                                              */

/** Element types (`dtype`) and reductions (`op`, as soap::ReductionKind).
 * SOAPRT_I1 is MLIR's i1 as memory holds it, one byte of 0 or 1; its
 * reductions follow arith's signed i1 (true is -1): a sum is an exclusive
 * or, a max a logical and, a min a logical or. A mean of i1 is refused. */
enum {
  SOAPRT_F32 = 0,
  SOAPRT_F64 = 1,
  SOAPRT_I32 = 2,
  SOAPRT_I64 = 3,
  SOAPRT_I8 = 4,
  SOAPRT_I1 = 5
};
enum { SOAPRT_SUM = 0, SOAPRT_MAX = 1, SOAPRT_MIN = 2, SOAPRT_MEAN = 3 };

/** This process's rank in MPI_COMM_WORLD (0 without MPI). */
int64_t soaprt_rank(void);

/** out = the element-wise `op` of `in` over the group. */
void soaprt_all_reduce(const void *in, void *out, int64_t count,
                       int64_t dtype, int64_t op, const int64_t *group,
                       int64_t group_size);

/** soaprt_all_reduce, started but not waited for: returns once the call is
 *  under way, with a handle for soaprt_wait. Until that wait, `out` does not
 *  hold the result yet and `in` must be neither written nor freed. Returns
 *  0 when the call is already complete (a group of one, a rank outside the
 *  group, GPU buffers staged through the host). The GPU lowering (and the
 *  CPU lowering with overlap-comm) start gradient all-reduces as soon as the
 *  gradient exists and wait right before the first use, so that the
 *  reduction overlaps the rest of the backward pass. */
int64_t soaprt_all_reduce_start(const void *in, void *out, int64_t count,
                                int64_t dtype, int64_t op,
                                const int64_t *group, int64_t group_size);

/** Completes the call that returned `handle` (0: returns at once). On a GPU
 *  the compute stream waits for it; the host does not. Each handle is
 *  waited for once. */
void soaprt_wait(int64_t handle);

/** in is [outer][chunk]; out is [outer][group_size][chunk], block j from
 *  the j-th member (concatenation along the gathered dimension). */
void soaprt_all_gather(const void *in, void *out, int64_t outer,
                       int64_t chunk, int64_t dtype, const int64_t *group,
                       int64_t group_size);

/** in is [outer][group_size][chunk]; the j-th member gets the `op` over the
 *  group of block j, as [outer][chunk]. */
void soaprt_reduce_scatter(const void *in, void *out, int64_t outer,
                           int64_t chunk, int64_t dtype, int64_t op,
                           const int64_t *group, int64_t group_size);

/** in is [split_outer][group_size][split_chunk]: block j goes to member j;
 *  out is [concat_outer][group_size][concat_chunk], block j from member j.
 *  split_outer * split_chunk == concat_outer * concat_chunk. */
void soaprt_all_to_all(const void *in, void *out, int64_t split_outer,
                       int64_t split_chunk, int64_t concat_outer,
                       int64_t concat_chunk, int64_t dtype,
                       const int64_t *group, int64_t group_size);

/** out = `in` of world rank `root` (a member of the group). */
void soaprt_broadcast(const void *in, void *out, int64_t count,
                      int64_t dtype, int64_t root, const int64_t *group,
                      int64_t group_size);

/** For each i with from[i] == this rank: sends `in` to to[i] with `tag`
 *  (buffered: returns before the receiver receives). */
void soaprt_send(const void *in, int64_t count, int64_t dtype,
                 const int64_t *from, const int64_t *to, int64_t pairs,
                 int64_t tag);

/** For each i with to[i] == this rank: receives into `out` from from[i]. */
void soaprt_recv(void *out, int64_t count, int64_t dtype,
                 const int64_t *from, const int64_t *to, int64_t pairs,
                 int64_t tag);

/*--- GPU kernels (libsoaprt_gpu) ---------------------------------------------*
 * What `--soap-lower-gpu` emits for contractions, convolutions and poolings:
 * the kernels above on device pointers, with the same accumulating
 * semantics and (pointer to element 0, element stride per dimension)
 * operands, enqueued on the runtime's single compute stream (see
 * mgpuStreamCreate below) and returning before they finish. Defined only in
 * libsoaprt_gpu, which SOAP builds where the CUDA toolkit, cuDNN and NCCL
 * are found. Any failure, and any operand layout the library cannot read,
 * prints `error: [rank R: ]<call> failed: <reason>` (or names the operand)
 * and ends the job with exit status 5.
 *
 * Supported layouts: every matrix (each batch's, for batch_matmul) needs a
 * unit-stride dimension — row-major, column-major (a transposed operand) or
 * a subview of one — since cuBLAS reads nothing else; a matrix whose
 * strides are both above 1 is an error, so the compiler copies such an
 * operand first. Convolution and pooling tensors take any non-negative
 * strides (cuDNN tensor descriptors); a convolution filter that is not dense
 * F x C x KH x KW is copied to a dense scratch buffer first. Sizes and
 * strides must fit in an int. */

/** Math modes (`math`): exact FP32; TF32 tensor cores (inputs rounded to
 *  10 mantissa bits, f32 accumulation); BF16 (cuBLAS rounds the f32
 *  operands to bf16 and accumulates in f32; convolutions, which cuDNN
 *  cannot run with bf16 inputs and f32 outputs, run as TF32). Outputs are
 *  always f32. */
enum { SOAPRT_MATH_F32 = 0, SOAPRT_MATH_TF32 = 1, SOAPRT_MATH_BF16 = 2 };

/** C[m,n] += sum_k A[m,k] * B[k,n] on the GPU (cuBLASLt for products of
 *  at least 2^24 multiply-adds, cuBLAS otherwise; SOAP_GPU_MATMUL=
 *  cublas|cublaslt forces one). */
void soaprt_gpu_matmul_f32(int64_t math, int64_t m, int64_t n, int64_t k,
                           const float *a, int64_t am, int64_t ak,
                           const float *b, int64_t bk, int64_t bn, float *c,
                           int64_t cm, int64_t cn);

/** C[i,m,n] += sum_k A[i,m,k] * B[i,k,n] (cublasGemmStridedBatchedEx; a
 *  batch stride of 0 broadcasts A or B). */
void soaprt_gpu_batch_matmul_f32(int64_t math, int64_t batch, int64_t m,
                                 int64_t n, int64_t k, const float *a,
                                 int64_t ab, int64_t am, int64_t ak,
                                 const float *b, int64_t bb, int64_t bk,
                                 int64_t bn, float *c, int64_t cb, int64_t cm,
                                 int64_t cn);

/** out[n,f,y,x] += sum_{c,i,j} in[n,c,y*sh+i*dh,x*sw+j*dw] * filter[f,c,i,j]
 *  (cudnnConvolutionForward with beta = 1; no padding: pads are explicit in
 *  the IR). Input rows and columns beyond those the windows reach are
 *  ignored, as linalg does. */
void soaprt_gpu_conv2d_nchw_fchw_f32(
    int64_t math, int64_t n, int64_t c, int64_t h, int64_t w, int64_t f,
    int64_t kh, int64_t kw, int64_t oh, int64_t ow, int64_t sh, int64_t sw,
    int64_t dh, int64_t dw, const float *in, int64_t isn, int64_t isc,
    int64_t ish, int64_t isw, const float *filter, int64_t fsf, int64_t fsc,
    int64_t fsh, int64_t fsw, float *out, int64_t osn, int64_t osf,
    int64_t osh, int64_t osw);

/** Pooling kinds (`kind`). */
enum { SOAPRT_POOL_MAX = 0, SOAPRT_POOL_SUM = 1 };

/** linalg.pooling_nchw_max / _sum: out[n,c,y,x] = max(out[n,c,y,x], window
 *  max), or out += window sum, over the kh x kw window at (y*sh, x*sw).
 *  cuDNN pooling (max: into a runtime-owned scratch buffer, then
 *  cudnnOpTensor MAX into out, NaN propagating; sum: the window mean scaled
 *  by kh*kw and added, so it may differ from a sequential sum in the last
 *  bits). cuDNN has no dilated pooling: dh or dw other than 1 is an error. */
void soaprt_gpu_pool2d_nchw_f32(int64_t kind, int64_t n, int64_t c, int64_t h,
                                int64_t w, int64_t kh, int64_t kw, int64_t oh,
                                int64_t ow, int64_t sh, int64_t sw, int64_t dh,
                                int64_t dw, const float *in, int64_t isn,
                                int64_t isc, int64_t ish, int64_t isw,
                                float *out, int64_t osn, int64_t osc,
                                int64_t osh, int64_t osw);

/*--- MLIR's GPU runtime ABI (libsoaprt_gpu) -----------------------------------*
 * `gpu-to-llvm` and the translation of gpu.binary (MLIR 22) call these for
 * gpu.launch_func, gpu.alloc/dealloc/memcpy/memset, gpu.wait and async
 * tokens; libsoaprt_gpu defines them on the CUDA runtime API (no libcuda
 * link). There is one stream: mgpuStreamCreate returns the runtime's compute
 * stream (the one the soaprt_gpu_* kernels and NCCL use), mgpuStreamDestroy
 * of it does nothing, and neither does mgpuStreamSynchronize of it (work
 * on it runs in order; the runtime waits before the host reads device
 * memory). Modules (cubin,
 * fatbin, or PTX through mgpuModuleLoadJIT) are recorded by the global
 * constructor and loaded (cudaLibraryLoadData) at their first kernel
 * lookup. mgpuMemAlloc is cudaMallocAsync on the stream (host-shared:
 * cudaMallocManaged). Events (mgpuEvent*, mgpuStreamWaitEvent) work but are
 * redundant with one stream. */
void *mgpuModuleLoad(void *data, int64_t size);
void *mgpuModuleLoadJIT(void *data, int optLevel);
void mgpuModuleUnload(void *module);
void *mgpuModuleGetFunction(void *module, const char *name);
void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, void *stream,
                      void **params, void **extra, size_t paramsCount);
void *mgpuStreamCreate(void);
void mgpuStreamSynchronize(void *stream);
/** Allocation of every buffer of a module lowered by --soap-lower-gpu
 *  (finalize-memref-to-llvm{use-generic-functions}): device memory ordered
 *  on the compute stream. */
void *_mlir_memref_to_llvm_alloc(uint64_t bytes);
void *_mlir_memref_to_llvm_aligned_alloc(uint64_t alignment, uint64_t bytes);
void _mlir_memref_to_llvm_free(void *ptr);
void mgpuStreamDestroy(void *stream);
void *mgpuEventCreate(void);
void mgpuEventDestroy(void *event);
void mgpuEventSynchronize(void *event);
void mgpuEventRecord(void *event, void *stream);
void mgpuStreamWaitEvent(void *stream, void *event);
void *mgpuMemAlloc(uint64_t bytes, void *stream, bool isHostShared);
void mgpuMemFree(void *ptr, void *stream);
void mgpuMemcpy(void *dst, void *src, size_t bytes, void *stream);
void mgpuMemset32(void *dst, unsigned value, size_t count, void *stream);
void mgpuMemset16(void *dst, unsigned short value, size_t count,
                  void *stream);

/*--- Buffers ---------------------------------------------------------------*
 * `--soap-lower-cpu` allocates every buffer through finalize-memref-to-llvm's
 * generic functions (_mlir_memref_to_llvm_alloc, _aligned_alloc, _free),
 * which libsoaprt defines weakly as these host versions (libsoaprt_gpu's
 * device-memory versions win in GPU executables). They count the bytes the
 * step's tensors hold: the driver reports the high-water mark per rank.    */
void *soaprt_host_alloc(uint64_t bytes);
void *soaprt_host_aligned_alloc(uint64_t alignment, uint64_t bytes);
void soaprt_host_free(void *p);

/*--- What the generated module defines ---------------------------------------*/

/** Runs one training step. `buffers` holds one pointer per argument of the
 *  entry function, then one per result (static shapes, dense row-major);
 *  the step never writes its arguments. */
void soap_train_step_packed(void **buffers);

/** A NUL-terminated JSON object describing the entry's arguments and
 *  results, the traced ops and the device count (docs/lowering.md).
 *  `"target": "gpu"` (absent: "cpu") says that soap_train_step_packed takes
 *  device pointers: the driver then keeps device copies of the arguments
 *  and results (and needs libsoaprt_gpu). */
extern const char soap_model_info[];

/** One pointer per argument: its initial values (dense row-major), or null
 *  when the argument is initialised from the seed. */
extern const void *const soap_init_data[];

#ifdef __cplusplus
}
#endif

#endif /* SOAP_RUNTIME_RUNTIME_H */

/*===- Runtime.h - the C ABI between generated code and libsoaprt -*- C -*-===*
 *
 * Code that `--soap-lower-cpu` emits calls the soaprt_* kernels below, and
 * defines the soap_* symbols at the end that the driver (runtime/Driver.cpp)
 * reads. Everything is plain C so that any code generator can target it.
 * The communication calls (MPI backend, runtime/Comm.cpp) are here too.
 *
 *===----------------------------------------------------------------------===*/

#ifndef SOAP_RUNTIME_RUNTIME_H
#define SOAP_RUNTIME_RUNTIME_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*--- Kernels ---------------------------------------------------------------*
 * Matrices are given as a pointer to element (0, 0) and a stride (in
 * elements) per dimension, so that transposed operands and subviews need no
 * copy when BLAS can read them. Every kernel accumulates into its output
 * (C += A * B), as the linalg ops it replaces do.                          */

/** C[m,n] += sum_k A[m,k] * B[k,n]. Matrix-vector products are the
 *  n = 1 case (a missing dimension has size 1 and stride 0). */
void soaprt_matmul_f32(int64_t m, int64_t n, int64_t k, const float *a,
                       int64_t am, int64_t ak, const float *b, int64_t bk,
                       int64_t bn, float *c, int64_t cm, int64_t cn);
void soaprt_matmul_f64(int64_t m, int64_t n, int64_t k, const double *a,
                       int64_t am, int64_t ak, const double *b, int64_t bk,
                       int64_t bn, double *c, int64_t cm, int64_t cn);

/** C[i,m,n] += sum_k A[i,m,k] * B[i,k,n]; ab, bb, cb are batch strides. */
void soaprt_batch_matmul_f32(int64_t batch, int64_t m, int64_t n, int64_t k,
                             const float *a, int64_t ab, int64_t am,
                             int64_t ak, const float *b, int64_t bb,
                             int64_t bk, int64_t bn, float *c, int64_t cb,
                             int64_t cm, int64_t cn);
void soaprt_batch_matmul_f64(int64_t batch, int64_t m, int64_t n, int64_t k,
                             const double *a, int64_t ab, int64_t am,
                             int64_t ak, const double *b, int64_t bb,
                             int64_t bk, int64_t bn, double *c, int64_t cb,
                             int64_t cm, int64_t cn);

/** out[n,f,y,x] += sum_{c,i,j} in[n,c,y*sh+i*dh,x*sw+j*dw] * filter[f,c,i,j]
 *  (linalg.conv_2d_nchw_fchw), by im2col and GEMM. Sizes: in N x C x H x W,
 *  filter F x C x KH x KW, out N x F x OH x OW; s* are element strides. */
void soaprt_conv2d_nchw_fchw_f32(
    int64_t n, int64_t c, int64_t h, int64_t w, int64_t f, int64_t kh,
    int64_t kw, int64_t oh, int64_t ow, int64_t sh, int64_t sw, int64_t dh,
    int64_t dw, const float *in, int64_t isn, int64_t isc, int64_t ish,
    int64_t isw, const float *filter, int64_t fsf, int64_t fsc, int64_t fsh,
    int64_t fsw, float *out, int64_t osn, int64_t osf, int64_t osh,
    int64_t osw);
void soaprt_conv2d_nchw_fchw_f64(
    int64_t n, int64_t c, int64_t h, int64_t w, int64_t f, int64_t kh,
    int64_t kw, int64_t oh, int64_t ow, int64_t sh, int64_t sw, int64_t dh,
    int64_t dw, const double *in, int64_t isn, int64_t isc, int64_t ish,
    int64_t isw, const double *filter, int64_t fsf, int64_t fsc, int64_t fsh,
    int64_t fsw, double *out, int64_t osn, int64_t osf, int64_t osh,
    int64_t osw);

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
 * works by copying.                                                        */

/** Element types (`dtype`) and reductions (`op`, as soap::ReductionKind). */
enum {
  SOAPRT_F32 = 0,
  SOAPRT_F64 = 1,
  SOAPRT_I32 = 2,
  SOAPRT_I64 = 3
};
enum { SOAPRT_SUM = 0, SOAPRT_MAX = 1, SOAPRT_MIN = 2, SOAPRT_MEAN = 3 };

/** This process's rank in MPI_COMM_WORLD (0 without MPI). */
int64_t soaprt_rank(void);

/** out = the element-wise `op` of `in` over the group. */
void soaprt_all_reduce(const void *in, void *out, int64_t count,
                       int64_t dtype, int64_t op, const int64_t *group,
                       int64_t group_size);

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

/*--- What the generated module defines ---------------------------------------*/

/** Runs one training step. `buffers` holds one pointer per argument of the
 *  entry function, then one per result (static shapes, dense row-major);
 *  the step never writes its arguments. */
void soap_train_step_packed(void **buffers);

/** A NUL-terminated JSON object describing the entry's arguments and
 *  results, the traced ops and the device count (docs/lowering.md). */
extern const char soap_model_info[];

/** One pointer per argument: its initial values (dense row-major), or null
 *  when the argument is initialised from the seed. */
extern const void *const soap_init_data[];

#ifdef __cplusplus
}
#endif

#endif /* SOAP_RUNTIME_RUNTIME_H */

/*===- Runtime.h - the C ABI between generated code and libsoaprt -*- C -*-===*
 *
 * Code that `--soap-lower-cpu` emits calls the soaprt_* kernels below, and
 * defines the soap_* symbols at the end that the driver (runtime/Driver.cpp)
 * reads. Everything is plain C so that any code generator can target it.
 * Later backends (MPI, NCCL) add their soaprt_* communication calls here.
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

/*--- What the generated module defines ---------------------------------------*/

/** Runs one training step. `buffers` holds one pointer per argument of the
 *  entry function, then one per result (static shapes, dense row-major);
 *  the step never writes its arguments. */
void soap_train_step_packed(void **buffers);

/** A NUL-terminated JSON object describing the entry's arguments and
 *  results and the traced ops (docs/lowering.md). */
extern const char soap_model_info[];

/** One pointer per argument: its initial values (dense row-major), or null
 *  when the argument is initialised from the seed. */
extern const void *const soap_init_data[];

#ifdef __cplusplus
}
#endif

#endif /* SOAP_RUNTIME_RUNTIME_H */

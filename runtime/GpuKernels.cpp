//===- GpuKernels.cpp - cuBLAS and cuDNN kernels on device buffers --------===//
//
// The soaprt_gpu_* kernels of Runtime.h: the CPU kernels' accumulating
// semantics and (pointer, element stride per dimension) operands, on device
// memory, enqueued on the compute stream.
//
// GEMM: a row-major view X[r][c] at r * rs + c * cs is a column-major matrix
// (op N, ld = cs) when rs == 1, or the transpose of one (op T, ld = rs) when
// cs == 1; the output must be the former, else the whole product is
// transposed (C^T = B^T A^T). Plain products of at least 2^24 multiply-adds
// go through cuBLASLt (heuristic algorithm, cached per shape and layout),
// others and batched ones through cublasGemm(StridedBatched)Ex.
//
// Math modes: SOAPRT_MATH_F32 is exact FP32 (CUBLAS_COMPUTE_32F, cuDNN FMA
// math), SOAPRT_MATH_TF32 lets tensor cores round inputs to TF32
// (CUBLAS_COMPUTE_32F_FAST_TF32, CUDNN_TENSOR_OP_MATH), SOAPRT_MATH_BF16
// lets cuBLAS round the f32 operands to bf16 and accumulate in f32
// (CUBLAS_COMPUTE_32F_FAST_16BF); the output stays f32. cuDNN's convolution
// has no bf16-input/f32-output configuration, so a BF16 convolution runs as
// TF32 (inputs rounded to 10 mantissa bits instead of 7).
//
// The cuDNN calls are its legacy API (deprecated in cuDNN 9, still
// supported throughout 9.x).
//
//===----------------------------------------------------------------------===//

#include "GpuRuntime.h"

#include "soap/Runtime/Runtime.h"

#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <tuple>
#include <vector>

namespace soaprt {
namespace gpu {
namespace {

int checkedInt(int64_t value, const char *what) {
  if (value < 0 || value > INT_MAX)
    failWith(std::string(what) + ": a size or stride of " +
             std::to_string(value) + " is beyond the GPU libraries' int");
  return static_cast<int>(value);
}

void checkMath(int64_t math, const char *what) {
  if (math != SOAPRT_MATH_F32 && math != SOAPRT_MATH_TF32 &&
      math != SOAPRT_MATH_BF16)
    failWith(std::string(what) + ": unknown math mode " +
             std::to_string(math));
}

cublasComputeType_t computeType(int64_t math) {
  switch (math) {
  case SOAPRT_MATH_TF32:
    return CUBLAS_COMPUTE_32F_FAST_TF32;
  case SOAPRT_MATH_BF16:
    return CUBLAS_COMPUTE_32F_FAST_16BF;
  default:
    return CUBLAS_COMPUTE_32F;
  }
}

/// A row-major matrix view: element (r, c) at r * rowStride + c * colStride.
struct View {
  int64_t rows, cols, rowStride, colStride;
  View transposed() const { return {cols, rows, colStride, rowStride}; }
};

/// How cuBLAS reads a view: op(stored matrix) with its leading dimension.
struct Operand {
  cublasOperation_t op;
  int64_t ld;
};

/// Column-major as it is (rows unit-stride).
bool asPlain(const View &v, Operand &result) {
  if (v.rows > 1 && v.rowStride != 1)
    return false;
  int64_t ld = v.cols > 1 ? v.colStride : std::max<int64_t>(v.rows, 1);
  if (ld < std::max<int64_t>(v.rows, 1))
    return false;
  result = {CUBLAS_OP_N, ld};
  return true;
}

/// Column-major when transposed (columns unit-stride).
bool asTransposed(const View &v, Operand &result) {
  if (v.cols > 1 && v.colStride != 1)
    return false;
  int64_t ld = v.rows > 1 ? v.rowStride : std::max<int64_t>(v.cols, 1);
  if (ld < std::max<int64_t>(v.cols, 1))
    return false;
  result = {CUBLAS_OP_T, ld};
  return true;
}

Operand operandOf(const View &v, const char *what, const char *name) {
  Operand o;
  if (asPlain(v, o) || asTransposed(v, o))
    return o;
  failWith(std::string(what) + ": operand " + name + " (" +
           std::to_string(v.rows) + "x" + std::to_string(v.cols) +
           ", element strides " + std::to_string(v.rowStride) + " and " +
           std::to_string(v.colStride) +
           ") has no unit-stride dimension, which cuBLAS needs");
}

/// C (m x n) += A (m x k) * B (k x n) as cuBLAS sees it: column-major C.
struct Gemm {
  int64_t m, n, k;
  Operand a, b, c;
  const float *aData, *bData;
  float *cData;
  int64_t aBatch, bBatch, cBatch;
};

Gemm planGemm(const char *what, int64_t m, int64_t n, int64_t k,
              const float *a, View av, int64_t ab, const float *b, View bv,
              int64_t bb, float *c, View cv, int64_t cb) {
  // Named as the caller knows them (the product may be transposed below;
  // a view has a unit-stride dimension iff its transpose has one).
  operandOf(av, what, "A");
  operandOf(bv, what, "B");
  operandOf(cv, what, "C");
  Operand co;
  if (!asPlain(cv, co)) {
    // C^T (n x m) = B^T A^T: column-major C^T is C as it is stored.
    std::swap(m, n);
    std::swap(a, b);
    std::swap(ab, bb);
    View at = bv.transposed(), bt = av.transposed();
    av = at;
    bv = bt;
    cv = cv.transposed();
    asPlain(cv, co);
  }
  Gemm g{m, n, k, operandOf(av, what, "A"), operandOf(bv, what, "B"), co,
         a, b, c, ab, bb, cb};
  return g;
}

/// cuBLASLt state of one product shape and layout.
struct LtPlan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo;
  size_t workspace = 0;
  bool usable = false;
};

/// The largest power of two (up to 256) dividing the address.
uint32_t alignmentOf(const void *p) {
  uintptr_t address = reinterpret_cast<uintptr_t>(p);
  uint32_t alignment = 256;
  while (alignment > 4 && address % alignment)
    alignment /= 2;
  return alignment;
}

constexpr size_t kLtWorkspace = 32u << 20;

LtPlan &ltPlan(const Gemm &g, int64_t math) {
  using Key = std::tuple<int64_t, int64_t, int64_t, int, int, int64_t, int64_t,
                         int64_t, int64_t, uint32_t, uint32_t, uint32_t>;
  static std::map<Key, LtPlan> plans;
  Key key{g.m, g.n, g.k, g.a.op, g.b.op, g.a.ld, g.b.ld, g.c.ld, math,
          alignmentOf(g.aData), alignmentOf(g.bData), alignmentOf(g.cData)};
  auto it = plans.find(key);
  if (it != plans.end())
    return it->second;
  LtPlan &plan = plans[key];
  check(cublasLtMatmulDescCreate(&plan.desc, computeType(math), CUDA_R_32F),
        "cublasLtMatmulDescCreate");
  cublasOperation_t opA = g.a.op, opB = g.b.op;
  check(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                       &opA, sizeof(opA)),
        "cublasLtMatmulDescSetAttribute");
  check(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSB,
                                       &opB, sizeof(opB)),
        "cublasLtMatmulDescSetAttribute");
  // Stored shapes: op N keeps (rows, cols), op T stores the transpose.
  auto layout = [&](cublasLtMatrixLayout_t *l, cublasOperation_t op,
                    int64_t rows, int64_t cols, int64_t ld) {
    if (op == CUBLAS_OP_T)
      std::swap(rows, cols);
    check(cublasLtMatrixLayoutCreate(l, CUDA_R_32F, rows, cols, ld),
          "cublasLtMatrixLayoutCreate");
  };
  layout(&plan.a, g.a.op, g.m, g.k, g.a.ld);
  layout(&plan.b, g.b.op, g.k, g.n, g.b.ld);
  layout(&plan.c, CUBLAS_OP_N, g.m, g.n, g.c.ld);
  cublasLtMatmulPreference_t preference;
  check(cublasLtMatmulPreferenceCreate(&preference),
        "cublasLtMatmulPreferenceCreate");
  size_t workspace = kLtWorkspace;
  check(cublasLtMatmulPreferenceSetAttribute(
            preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
            sizeof(workspace)),
        "cublasLtMatmulPreferenceSetAttribute");
  uint32_t alignments[] = {std::get<9>(key), std::get<10>(key),
                           std::get<11>(key), std::get<11>(key)};
  cublasLtMatmulPreferenceAttributes_t which[] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4; ++i)
    check(cublasLtMatmulPreferenceSetAttribute(preference, which[i],
                                               &alignments[i],
                                               sizeof(uint32_t)),
          "cublasLtMatmulPreferenceSetAttribute");
  cublasLtMatmulHeuristicResult_t result;
  int found = 0;
  cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
      cublasLt(), plan.desc, plan.a, plan.b, plan.c, plan.c, preference, 1,
      &result, &found);
  cublasLtMatmulPreferenceDestroy(preference);
  // No algorithm for this combination (a layout or compute type cuBLASLt
  // does not take): cublasGemmEx runs it, and reports what is wrong.
  if (status == CUBLAS_STATUS_SUCCESS && found > 0) {
    plan.algo = result.algo;
    plan.workspace = result.workspaceSize;
    plan.usable = true;
  }
  return plan;
}

/// Which library runs plain products (SOAP_GPU_MATMUL=auto|cublas|cublaslt).
enum class MatmulLibrary { Auto, Cublas, CublasLt };

MatmulLibrary matmulLibrary() {
  static MatmulLibrary library = [] {
    const char *text = std::getenv("SOAP_GPU_MATMUL");
    std::string value = text ? text : "auto";
    if (value == "auto")
      return MatmulLibrary::Auto;
    if (value == "cublas")
      return MatmulLibrary::Cublas;
    if (value == "cublaslt")
      return MatmulLibrary::CublasLt;
    failWith("SOAP_GPU_MATMUL='" + value +
             "' is not one of auto, cublas, cublaslt");
  }();
  return library;
}

/// Products this large (multiply-adds) go through cuBLASLt under "auto".
constexpr double kLtMinimumWork = 1 << 24;

void runGemm(const char *what, const Gemm &g, int64_t math, int64_t batch) {
  const float one = 1.0f;
  int m = checkedInt(g.m, what), n = checkedInt(g.n, what),
      k = checkedInt(g.k, what);
  int lda = checkedInt(g.a.ld, what), ldb = checkedInt(g.b.ld, what),
      ldc = checkedInt(g.c.ld, what);
  if (batch == 1) {
    MatmulLibrary library = matmulLibrary();
    bool lt = library == MatmulLibrary::CublasLt ||
              (library == MatmulLibrary::Auto &&
               static_cast<double>(g.m) * g.n * g.k >= kLtMinimumWork);
    if (lt) {
      LtPlan &plan = ltPlan(g, math);
      if (plan.usable) {
        void *workspace = plan.workspace ? scratch(kWorkspace, plan.workspace)
                                         : nullptr;
        check(cublasLtMatmul(cublasLt(), plan.desc, &one, g.aData, plan.a,
                             g.bData, plan.b, &one, g.cData, plan.c, g.cData,
                             plan.c, &plan.algo, workspace, plan.workspace,
                             stream()),
              "cublasLtMatmul");
        return;
      }
    }
    check(cublasGemmEx(cublas(), g.a.op, g.b.op, m, n, k, &one, g.aData,
                       CUDA_R_32F, lda, g.bData, CUDA_R_32F, ldb, &one,
                       g.cData, CUDA_R_32F, ldc, computeType(math),
                       CUBLAS_GEMM_DEFAULT),
          "cublasGemmEx");
    return;
  }
  check(cublasGemmStridedBatchedEx(
            cublas(), g.a.op, g.b.op, m, n, k, &one, g.aData, CUDA_R_32F, lda,
            g.aBatch, g.bData, CUDA_R_32F, ldb, g.bBatch, &one, g.cData,
            CUDA_R_32F, ldc, g.cBatch, checkedInt(batch, what),
            computeType(math), CUBLAS_GEMM_DEFAULT),
        "cublasGemmStridedBatchedEx");
}

// cuDNN descriptors, destroyed at the end of the call that made them.

struct TensorDesc {
  cudnnTensorDescriptor_t d = nullptr;
  TensorDesc(const char *what, int64_t n, int64_t c, int64_t h, int64_t w,
             int64_t sn, int64_t sc, int64_t sh, int64_t sw) {
    check(cudnnCreateTensorDescriptor(&d), "cudnnCreateTensorDescriptor");
    check(cudnnSetTensor4dDescriptorEx(
              d, CUDNN_DATA_FLOAT, checkedInt(n, what), checkedInt(c, what),
              checkedInt(h, what), checkedInt(w, what), checkedInt(sn, what),
              checkedInt(sc, what), checkedInt(sh, what),
              checkedInt(sw, what)),
          "cudnnSetTensor4dDescriptorEx");
  }
  ~TensorDesc() { cudnnDestroyTensorDescriptor(d); }
};

struct FilterDesc {
  cudnnFilterDescriptor_t d = nullptr;
  FilterDesc(const char *what, int64_t f, int64_t c, int64_t h, int64_t w) {
    check(cudnnCreateFilterDescriptor(&d), "cudnnCreateFilterDescriptor");
    check(cudnnSetFilter4dDescriptor(d, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
                                     checkedInt(f, what), checkedInt(c, what),
                                     checkedInt(h, what), checkedInt(w, what)),
          "cudnnSetFilter4dDescriptor");
  }
  ~FilterDesc() { cudnnDestroyFilterDescriptor(d); }
};

struct ConvDesc {
  cudnnConvolutionDescriptor_t d = nullptr;
  ConvDesc(const char *what, int64_t sh, int64_t sw, int64_t dh, int64_t dw,
           int64_t math) {
    check(cudnnCreateConvolutionDescriptor(&d),
          "cudnnCreateConvolutionDescriptor");
    check(cudnnSetConvolution2dDescriptor(
              d, 0, 0, checkedInt(sh, what), checkedInt(sw, what),
              checkedInt(dh, what), checkedInt(dw, what),
              CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
          "cudnnSetConvolution2dDescriptor");
    check(cudnnSetConvolutionMathType(d, math == SOAPRT_MATH_F32
                                             ? CUDNN_FMA_MATH
                                             : CUDNN_TENSOR_OP_MATH),
          "cudnnSetConvolutionMathType");
  }
  ~ConvDesc() { cudnnDestroyConvolutionDescriptor(d); }
};

/// The rows of the input a window reads: (out - 1) * stride + extent.
int64_t inputExtent(const char *what, const char *dim, int64_t out,
                    int64_t stride, int64_t window, int64_t dilation,
                    int64_t in) {
  int64_t used = (out - 1) * stride + (window - 1) * dilation + 1;
  if (used > in)
    failWith(std::string(what) + ": " + std::to_string(out) + " outputs along " +
             dim + " read " + std::to_string(used) +
             " inputs but the input has " + std::to_string(in));
  return used;
}

void checkStrides(const char *what, std::initializer_list<int64_t> strides) {
  for (int64_t s : strides)
    if (s < 0)
      failWith(std::string(what) + ": negative element strides are not "
                                   "supported on the GPU");
}

struct ConvAlgorithm {
  cudnnConvolutionFwdAlgo_t algo;
  size_t workspace;
};

} // namespace
} // namespace gpu
} // namespace soaprt

using namespace soaprt::gpu;

extern "C" {

void soaprt_gpu_matmul_f32(int64_t math, int64_t m, int64_t n, int64_t k,
                           const float *a, int64_t am, int64_t ak,
                           const float *b, int64_t bk, int64_t bn, float *c,
                           int64_t cm, int64_t cn) {
  const char *what = "soaprt_gpu_matmul_f32";
  checkMath(math, what);
  if (m == 0 || n == 0 || k == 0)
    return;
  Gemm g = planGemm(what, m, n, k, a, {m, k, am, ak}, 0, b, {k, n, bk, bn}, 0,
                    c, {m, n, cm, cn}, 0);
  runGemm(what, g, math, 1);
}

void soaprt_gpu_batch_matmul_f32(int64_t math, int64_t batch, int64_t m,
                                 int64_t n, int64_t k, const float *a,
                                 int64_t ab, int64_t am, int64_t ak,
                                 const float *b, int64_t bb, int64_t bk,
                                 int64_t bn, float *c, int64_t cb, int64_t cm,
                                 int64_t cn) {
  const char *what = "soaprt_gpu_batch_matmul_f32";
  checkMath(math, what);
  if (batch == 0 || m == 0 || n == 0 || k == 0)
    return;
  Gemm g = planGemm(what, m, n, k, a, {m, k, am, ak}, ab, b, {k, n, bk, bn},
                    bb, c, {m, n, cm, cn}, cb);
  runGemm(what, g, math, batch);
}

void soaprt_gpu_conv2d_nchw_fchw_f32(
    int64_t math, int64_t n, int64_t c, int64_t h, int64_t w, int64_t f,
    int64_t kh, int64_t kw, int64_t oh, int64_t ow, int64_t sh, int64_t sw,
    int64_t dh, int64_t dw, const float *in, int64_t isn, int64_t isc,
    int64_t ish, int64_t isw, const float *filter, int64_t fsf, int64_t fsc,
    int64_t fsh, int64_t fsw, float *out, int64_t osn, int64_t osf,
    int64_t osh, int64_t osw) {
  const char *what = "soaprt_gpu_conv2d_nchw_fchw_f32";
  checkMath(math, what);
  if (n == 0 || f == 0 || oh == 0 || ow == 0 || c == 0 || kh == 0 || kw == 0)
    return;
  checkStrides(what, {isn, isc, ish, isw, fsf, fsc, fsh, fsw, osn, osf, osh,
                      osw});
  // The input rows and columns the windows reach (linalg allows more).
  int64_t hUsed = inputExtent(what, "height", oh, sh, kh, dh, h);
  int64_t wUsed = inputExtent(what, "width", ow, sw, kw, dw, w);
  cudnnHandle_t handle = cudnn();
  TensorDesc x(what, n, c, hUsed, wUsed, isn, isc, ish, isw);
  TensorDesc y(what, n, f, oh, ow, osn, osf, osh, osw);
  FilterDesc wDesc(what, f, c, kh, kw);
  ConvDesc conv(what, sh, sw, dh, dw, math);
  const float one = 1.0f, zero = 0.0f;

  // cuDNN filters are dense F x C x KH x KW: copy a strided one.
  auto packed = [](int64_t size, int64_t stride, int64_t expected) {
    return size == 1 || stride == expected;
  };
  const float *weights = filter;
  if (!(packed(kw, fsw, 1) && packed(kh, fsh, kw) && packed(c, fsc, kh * kw) &&
        packed(f, fsf, c * kh * kw))) {
    TensorDesc from(what, f, c, kh, kw, fsf, fsc, fsh, fsw);
    TensorDesc to(what, f, c, kh, kw, c * kh * kw, kh * kw, kw, 1);
    float *copy = static_cast<float *>(
        scratch(kFilterCopy, sizeof(float) * f * c * kh * kw));
    check(cudnnTransformTensor(handle, &one, from.d, filter, &zero, to.d, copy),
          "cudnnTransformTensor");
    weights = copy;
  }

  // The algorithm cuDNN's heuristics rank first for this problem (exact
  // FP32 ones only for SOAPRT_MATH_F32), cached per shape and layout.
  using Key = std::vector<int64_t>;
  static std::map<Key, ConvAlgorithm> algorithms;
  Key key{math, n, c, hUsed, wUsed, f, kh, kw, oh, ow, sh, sw, dh, dw, isn,
          isc, ish, isw, osn, osf, osh, osw};
  auto it = algorithms.find(key);
  if (it == algorithms.end()) {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int returned = 0;
    check(cudnnGetConvolutionForwardAlgorithm_v7(
              handle, x.d, wDesc.d, conv.d, y.d,
              CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf),
          "cudnnGetConvolutionForwardAlgorithm_v7");
    int chosen = -1;
    for (int i = 0; i < returned && chosen < 0; ++i)
      if (perf[i].status == CUDNN_STATUS_SUCCESS &&
          (math != SOAPRT_MATH_F32 ||
           (perf[i].mathType != CUDNN_TENSOR_OP_MATH &&
            perf[i].mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)))
        chosen = i;
    if (chosen < 0)
      failWith(std::string(what) +
               ": cuDNN has no forward convolution algorithm for this shape "
               "and layout");
    size_t workspace = 0;
    check(cudnnGetConvolutionForwardWorkspaceSize(handle, x.d, wDesc.d, conv.d,
                                                  y.d, perf[chosen].algo,
                                                  &workspace),
          "cudnnGetConvolutionForwardWorkspaceSize");
    it = algorithms.emplace(key, ConvAlgorithm{perf[chosen].algo, workspace})
             .first;
  }
  void *workspace =
      it->second.workspace ? scratch(kWorkspace, it->second.workspace) : nullptr;
  // out = 1 * conv + 1 * out.
  check(cudnnConvolutionForward(handle, &one, x.d, in, wDesc.d, weights,
                                conv.d, it->second.algo, workspace,
                                it->second.workspace, &one, y.d, out),
        "cudnnConvolutionForward");
}

void soaprt_gpu_pool2d_nchw_f32(int64_t kind, int64_t n, int64_t c, int64_t h,
                                int64_t w, int64_t kh, int64_t kw, int64_t oh,
                                int64_t ow, int64_t sh, int64_t sw, int64_t dh,
                                int64_t dw, const float *in, int64_t isn,
                                int64_t isc, int64_t ish, int64_t isw,
                                float *out, int64_t osn, int64_t osc,
                                int64_t osh, int64_t osw) {
  const char *what = "soaprt_gpu_pool2d_nchw_f32";
  if (kind != SOAPRT_POOL_MAX && kind != SOAPRT_POOL_SUM)
    failWith(std::string(what) + ": unknown pooling kind " +
             std::to_string(kind));
  if (dh != 1 || dw != 1)
    failWith(std::string(what) + ": cuDNN pooling has no dilation (got " +
             std::to_string(dh) + "x" + std::to_string(dw) + ")");
  if (n == 0 || c == 0 || oh == 0 || ow == 0)
    return;
  checkStrides(what, {isn, isc, ish, isw, osn, osc, osh, osw});
  int64_t hUsed = inputExtent(what, "height", oh, sh, kh, 1, h);
  int64_t wUsed = inputExtent(what, "width", ow, sw, kw, 1, w);
  cudnnHandle_t handle = cudnn();
  TensorDesc x(what, n, c, hUsed, wUsed, isn, isc, ish, isw);
  TensorDesc y(what, n, c, oh, ow, osn, osc, osh, osw);
  cudnnPoolingDescriptor_t pool;
  check(cudnnCreatePoolingDescriptor(&pool), "cudnnCreatePoolingDescriptor");
  check(cudnnSetPooling2dDescriptor(
            pool,
            kind == SOAPRT_POOL_MAX ? CUDNN_POOLING_MAX
                                    : CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING,
            CUDNN_PROPAGATE_NAN, checkedInt(kh, what), checkedInt(kw, what), 0,
            0, checkedInt(sh, what), checkedInt(sw, what)),
        "cudnnSetPooling2dDescriptor");
  const float one = 1.0f, zero = 0.0f;
  if (kind == SOAPRT_POOL_SUM) {
    // out += kh * kw * (window mean), without padding the window sum.
    const float area = static_cast<float>(kh * kw);
    check(cudnnPoolingForward(handle, pool, &area, x.d, in, &one, y.d, out),
          "cudnnPoolingForward");
  } else {
    // The window maxima into scratch, then out = max(out, maxima).
    float *maxima = static_cast<float *>(
        scratch(kPoolResult, sizeof(float) * n * c * oh * ow));
    TensorDesc t(what, n, c, oh, ow, c * oh * ow, oh * ow, ow, 1);
    check(cudnnPoolingForward(handle, pool, &one, x.d, in, &zero, t.d, maxima),
          "cudnnPoolingForward");
    cudnnOpTensorDescriptor_t op;
    check(cudnnCreateOpTensorDescriptor(&op), "cudnnCreateOpTensorDescriptor");
    check(cudnnSetOpTensorDescriptor(op, CUDNN_OP_TENSOR_MAX, CUDNN_DATA_FLOAT,
                                     CUDNN_PROPAGATE_NAN),
          "cudnnSetOpTensorDescriptor");
    check(cudnnOpTensor(handle, op, &one, y.d, out, &one, t.d, maxima, &zero,
                        y.d, out),
          "cudnnOpTensor");
    cudnnDestroyOpTensorDescriptor(op);
  }
  cudnnDestroyPoolingDescriptor(pool);
}

} // extern "C"

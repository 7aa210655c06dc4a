//===- GpuRuntimeTest.cpp - libsoaprt_gpu on a real device ----------------===//
//
// The GPU kernels against CPU references (exact FP32 within rounding,
// TF32/BF16 within their precision), strided and transposed operands,
// batched products, convolutions with strides, dilations and accumulation,
// both poolings, the mgpu* ABI with a hand-written PTX kernel, and
// device-buffer collectives on one rank. Where no CUDA device is usable
// these tests report SKIPPED. The error tests (layouts cuBLAS cannot read,
// dilated pooling, no device) run everywhere: they fail before any CUDA
// call, or precisely because there is none.
//
//===----------------------------------------------------------------------===//

#include "soap/Runtime/Runtime.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

bool deviceUsable(std::string *reason = nullptr) {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (reason)
    *reason = status != cudaSuccess ? cudaGetErrorString(status)
                                    : "no CUDA device";
  return status == cudaSuccess && count > 0;
}

class Gpu : public ::testing::Test {
protected:
  void SetUp() override {
    std::string reason;
    if (!deviceUsable(&reason))
      GTEST_SKIP() << "no CUDA device is usable: " << reason;
  }
};

/// A device copy of a host vector.
struct DeviceArray {
  float *data = nullptr;
  size_t size = 0;
  explicit DeviceArray(const std::vector<float> &host) : size(host.size()) {
    EXPECT_EQ(cudaMalloc(reinterpret_cast<void **>(&data), size * sizeof(float)),
              cudaSuccess);
    EXPECT_EQ(cudaMemcpy(data, host.data(), size * sizeof(float),
                         cudaMemcpyHostToDevice),
              cudaSuccess);
  }
  ~DeviceArray() { cudaFree(data); }
  std::vector<float> read() const {
    std::vector<float> host(size);
    // The kernels run on the runtime's stream: wait for the device.
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(host.data(), data, size * sizeof(float),
                         cudaMemcpyDeviceToHost),
              cudaSuccess);
    return host;
  }
};

std::vector<float> randomVector(size_t n, unsigned seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = uniform(generator);
  return v;
}

/// C[m,n] += A[m,k] B[k,n] in double, strided like the ABI; also returns
/// sum |a||b| per element (the scale of rounding errors).
void referenceMatmul(int64_t m, int64_t n, int64_t k, const float *a,
                     int64_t am, int64_t ak, const float *b, int64_t bk,
                     int64_t bn, std::vector<float> &c, int64_t cOffset,
                     int64_t cm, int64_t cn, std::vector<double> &scale) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = c[cOffset + i * cm + j * cn], magnitude = 0;
      for (int64_t l = 0; l < k; ++l) {
        double p = double(a[i * am + l * ak]) * b[l * bk + j * bn];
        sum += p;
        magnitude += std::fabs(p);
      }
      c[cOffset + i * cm + j * cn] = static_cast<float>(sum);
      scale[cOffset + i * cm + j * cn] = magnitude + 1e-30;
    }
}

void expectClose(const std::vector<float> &actual,
                 const std::vector<float> &expected,
                 const std::vector<double> &scale, double tolerance,
                 const char *what) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i)
    ASSERT_LE(std::fabs(double(actual[i]) - expected[i]),
              tolerance * (scale[i] + std::fabs(expected[i])))
        << what << " element " << i << ": " << actual[i] << " vs "
        << expected[i];
}

struct MatmulCase {
  const char *name;
  int64_t m, n, k;
  bool aTransposed, bTransposed, cColumnMajor;
  int64_t padding; // extra elements per leading dimension (a subview)
};

/// One product through soaprt_gpu_matmul_f32 against the reference.
void checkMatmul(const MatmulCase &t, int64_t math, double tolerance) {
  int64_t m = t.m, n = t.n, k = t.k, p = t.padding;
  // A is m x k: row-major with ld k+p, or its transpose stored k x (m+p).
  int64_t am = t.aTransposed ? 1 : k + p, ak = t.aTransposed ? m + p : 1;
  int64_t bk = t.bTransposed ? 1 : n + p, bn = t.bTransposed ? k + p : 1;
  int64_t cm = t.cColumnMajor ? 1 : n + p, cn = t.cColumnMajor ? m + p : 1;
  size_t aSize = t.aTransposed ? k * (m + p) : m * (k + p);
  size_t bSize = t.bTransposed ? n * (k + p) : k * (n + p);
  size_t cSize = t.cColumnMajor ? n * (m + p) : m * (n + p);
  std::vector<float> a = randomVector(aSize, 1), b = randomVector(bSize, 2),
                     c = randomVector(cSize, 3);
  DeviceArray da(a), db(b), dc(c);
  soaprt_gpu_matmul_f32(math, m, n, k, da.data, am, ak, db.data, bk, bn,
                        dc.data, cm, cn);
  std::vector<double> scale(cSize, 1.0);
  std::vector<float> expected = c;
  referenceMatmul(m, n, k, a.data(), am, ak, b.data(), bk, bn, expected, 0, cm,
                  cn, scale);
  expectClose(dc.read(), expected, scale, tolerance, t.name);
}

const MatmulCase kMatmulCases[] = {
    {"row-major", 37, 29, 53, false, false, false, 0},
    {"A transposed", 37, 29, 53, true, false, false, 0},
    {"B transposed", 37, 29, 53, false, true, false, 0},
    {"C column-major", 37, 29, 53, false, false, true, 0},
    {"all transposed, subviews", 33, 17, 65, true, true, true, 3},
    {"matrix-vector", 40, 1, 31, false, false, false, 0},
    // 2^24 multiply-adds: cuBLASLt under SOAP_GPU_MATMUL=auto.
    {"large (cuBLASLt)", 256, 256, 256, false, false, false, 0},
    {"large transposed (cuBLASLt)", 256, 320, 200, true, true, false, 1},
};

TEST_F(Gpu, MatmulExactF32) {
  for (const MatmulCase &t : kMatmulCases)
    checkMatmul(t, SOAPRT_MATH_F32, 1e-6);
}

TEST_F(Gpu, MatmulTf32) {
  // TF32 keeps 10 mantissa bits: relative errors about 2^-11 per product.
  for (const MatmulCase &t : kMatmulCases)
    checkMatmul(t, SOAPRT_MATH_TF32, 2e-3);
}

TEST_F(Gpu, MatmulBf16) {
  // bf16 keeps 7 mantissa bits: about 2^-8 per operand.
  for (const MatmulCase &t : kMatmulCases)
    checkMatmul(t, SOAPRT_MATH_BF16, 1.6e-2);
}

TEST_F(Gpu, BatchMatmulBroadcastsAndTransposes) {
  int64_t batch = 5, m = 12, n = 9, k = 14;
  std::vector<float> a = randomVector(batch * m * k, 4),
                     b = randomVector(k * n, 5), // one B for every batch
      c = randomVector(batch * m * n, 6);
  DeviceArray da(a), db(b), dc(c);
  // A stored [batch][k][m] (transposed), B broadcast (batch stride 0).
  soaprt_gpu_batch_matmul_f32(SOAPRT_MATH_F32, batch, m, n, k, da.data, m * k,
                              1, m, db.data, 0, n, 1, dc.data, m * n, n, 1);
  std::vector<float> expected = c;
  std::vector<double> scale(c.size(), 1.0);
  for (int64_t i = 0; i < batch; ++i) {
    std::vector<float> slice(expected.begin() + i * m * n,
                             expected.begin() + (i + 1) * m * n);
    std::vector<double> sliceScale(m * n);
    referenceMatmul(m, n, k, a.data() + i * m * k, 1, m, b.data(), n, 1, slice,
                    0, n, 1, sliceScale);
    std::copy(slice.begin(), slice.end(), expected.begin() + i * m * n);
    std::copy(sliceScale.begin(), sliceScale.end(), scale.begin() + i * m * n);
  }
  expectClose(dc.read(), expected, scale, 1e-6, "batch_matmul");
}

/// out[n,f,y,x] += sum in[n,c,y*sh+i*dh,x*sw+j*dw] * filter[f,c,i,j].
/// soaprt_gpu_conv2d_nchw_fchw_f32 on a strided input (every row padded by
/// 5 elements) and a filter stored [c][kw][kh][f] (no dimension dense where
/// cuDNN wants), accumulating into `out`, against a double-precision loop.
void checkConvolution(int64_t n, int64_t c, int64_t h, int64_t w, int64_t f,
                      int64_t kh, int64_t kw, int64_t sh, int64_t sw,
                      int64_t dh, int64_t dw) {
  int64_t oh = (h - dh * (kh - 1) - 1) / sh + 1,
          ow = (w - dw * (kw - 1) - 1) / sw + 1;
  int64_t isw = 1, ish = w + 5, isc = h * ish, isn = c * isc;
  int64_t fsf = 1, fsh = f, fsw = f * kh, fsc = f * kh * kw;
  int64_t osw = 1, osh = ow, osf = oh * ow, osn = f * osf;
  std::vector<float> in = randomVector(n * isn, 7),
                     filter = randomVector(c * fsc, 8),
                     out = randomVector(n * osn, 9);
  for (int64_t math : {SOAPRT_MATH_F32, SOAPRT_MATH_TF32}) {
    DeviceArray din(in), dfilter(filter), dout(out);
    soaprt_gpu_conv2d_nchw_fchw_f32(math, n, c, h, w, f, kh, kw, oh, ow, sh,
                                    sw, dh, dw, din.data, isn, isc, ish, isw,
                                    dfilter.data, fsf, fsc, fsh, fsw,
                                    dout.data, osn, osf, osh, osw);
    std::vector<float> expected = out;
    std::vector<double> scale(out.size());
    for (int64_t b = 0; b < n; ++b)
      for (int64_t o = 0; o < f; ++o)
        for (int64_t y = 0; y < oh; ++y)
          for (int64_t x = 0; x < ow; ++x) {
            double sum = out[b * osn + o * osf + y * osh + x], magnitude = 0;
            for (int64_t ci = 0; ci < c; ++ci)
              for (int64_t i = 0; i < kh; ++i)
                for (int64_t j = 0; j < kw; ++j) {
                  double p = double(in[b * isn + ci * isc +
                                       (y * sh + i * dh) * ish +
                                       (x * sw + j * dw) * isw]) *
                             filter[o * fsf + ci * fsc + i * fsh + j * fsw];
                  sum += p;
                  magnitude += std::fabs(p);
                }
            expected[b * osn + o * osf + y * osh + x] = float(sum);
            scale[b * osn + o * osf + y * osh + x] = magnitude;
          }
    expectClose(dout.read(), expected, scale,
                math == SOAPRT_MATH_F32 ? 1e-6 : 2e-3, "conv2d");
  }
}

TEST_F(Gpu, ConvolutionStridedDilatedAccumulating) {
  checkConvolution(2, 3, 11, 12, 4, 3, 2, 2, 1, 1, 2);
}

// A filter gradient as the autodiff writes it, conv(x^T, dy^T): a window
// (8x8, the forward output) larger than the output (3x3, the forward
// filter); along the width, stride and dilation 2 (the forward filter's
// dilation and stride).
TEST_F(Gpu, ConvolutionAsWeightGradient) {
  checkConvolution(3, 4, 10, 20, 5, 8, 8, 1, 2, 1, 2);
}

TEST_F(Gpu, Pooling) {
  int64_t n = 2, c = 3, h = 9, w = 8, kh = 3, kw = 2, sh = 2, sw = 3;
  int64_t oh = (h - kh) / sh + 1, ow = (w - kw) / sw + 1;
  // Input [n][c][h][w] dense; output as [n][oh][ow][c] (NHWC strides).
  int64_t isn = c * h * w, isc = h * w, ish = w, isw = 1;
  int64_t osc = 1, osw = c, osh = ow * c, osn = oh * ow * c;
  std::vector<float> in = randomVector(n * isn, 10),
                     out = randomVector(n * osn, 11);
  for (int64_t kind : {SOAPRT_POOL_MAX, SOAPRT_POOL_SUM}) {
    DeviceArray din(in), dout(out);
    soaprt_gpu_pool2d_nchw_f32(kind, n, c, h, w, kh, kw, oh, ow, sh, sw, 1, 1,
                               din.data, isn, isc, ish, isw, dout.data, osn,
                               osc, osh, osw);
    std::vector<float> expected = out;
    std::vector<double> scale(out.size(), 0.0);
    for (int64_t b = 0; b < n; ++b)
      for (int64_t ci = 0; ci < c; ++ci)
        for (int64_t y = 0; y < oh; ++y)
          for (int64_t x = 0; x < ow; ++x) {
            float &e = expected[b * osn + ci * osc + y * osh + x * osw];
            double sum = e;
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                float v = in[b * isn + ci * isc + (y * sh + i) * ish +
                             (x * sw + j) * isw];
                sum += v;
                if (kind == SOAPRT_POOL_MAX)
                  e = std::max(e, v);
              }
            if (kind == SOAPRT_POOL_SUM)
              e = float(sum);
            scale[b * osn + ci * osc + y * osh + x * osw] = kh * kw;
          }
    expectClose(dout.read(), expected, scale,
                kind == SOAPRT_POOL_MAX ? 0.0 : 1e-6,
                kind == SOAPRT_POOL_MAX ? "max pool" : "sum pool");
  }
}

/// y[i] = a * x[i] + y[i], written by hand (checked with ptxas
/// -arch=sm_90).
const char kAxpyPtx[] =
    ".version 7.0\n"
    ".target sm_75\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry axpy(.param .f32 a, .param .u64 x, .param .u64 y,\n"
    "                     .param .u32 n)\n"
    "{\n"
    "  .reg .pred %p;\n"
    "  .reg .f32 %f<4>;\n"
    "  .reg .b32 %r<5>;\n"
    "  .reg .b64 %rd<6>;\n"
    "  ld.param.f32 %f1, [a];\n"
    "  ld.param.u64 %rd1, [x];\n"
    "  ld.param.u64 %rd2, [y];\n"
    "  ld.param.u32 %r1, [n];\n"
    "  mov.u32 %r2, %ctaid.x;\n"
    "  mov.u32 %r3, %ntid.x;\n"
    "  mov.u32 %r4, %tid.x;\n"
    "  mad.lo.u32 %r4, %r2, %r3, %r4;\n"
    "  setp.ge.u32 %p, %r4, %r1;\n"
    "  @%p bra DONE;\n"
    "  cvta.to.global.u64 %rd1, %rd1;\n"
    "  cvta.to.global.u64 %rd2, %rd2;\n"
    "  mul.wide.u32 %rd3, %r4, 4;\n"
    "  add.s64 %rd4, %rd1, %rd3;\n"
    "  add.s64 %rd5, %rd2, %rd3;\n"
    "  ld.global.f32 %f2, [%rd4];\n"
    "  ld.global.f32 %f3, [%rd5];\n"
    "  fma.rn.f32 %f3, %f1, %f2, %f3;\n"
    "  st.global.f32 [%rd5], %f3;\n"
    "DONE:\n"
    "  ret;\n"
    "}\n";

TEST_F(Gpu, MgpuModuleLaunchMemcpyMemset) {
  void *stream = mgpuStreamCreate();
  const uint32_t n = 1000;
  auto *x = static_cast<float *>(mgpuMemAlloc(n * 4, stream, false));
  auto *y = static_cast<float *>(mgpuMemAlloc(n * 4, stream, false));
  auto *halves = static_cast<uint16_t *>(mgpuMemAlloc(n * 2, stream, false));
  std::vector<float> hostX = randomVector(n, 12);
  mgpuMemcpy(x, hostX.data(), n * 4, stream);
  // 1.0f: bytes that differ, so the fill kernel runs (not cudaMemset).
  mgpuMemset32(y, 0x3f800000u, n, stream);
  mgpuMemset16(halves, 0x3c01, n, stream);
  // Both ways of loading: a sized binary and NUL-terminated PTX (JIT).
  void *modules[] = {mgpuModuleLoad(const_cast<char *>(kAxpyPtx),
                                    sizeof(kAxpyPtx)),
                     mgpuModuleLoadJIT(const_cast<char *>(kAxpyPtx), 2)};
  float a = 2.5f;
  for (void *module : modules) {
    void *function = mgpuModuleGetFunction(module, "axpy");
    ASSERT_NE(function, nullptr);
    uint32_t count = n;
    void *params[] = {&a, &x, &y, &count};
    mgpuLaunchKernel(function, (n + 127) / 128, 1, 1, 128, 1, 1, 0, stream,
                     params, nullptr, 4);
  }
  std::vector<float> hostY(n);
  std::vector<uint16_t> hostHalves(n);
  mgpuMemcpy(hostY.data(), y, n * 4, stream);
  mgpuMemcpy(hostHalves.data(), halves, n * 2, stream);
  mgpuStreamSynchronize(stream);
  for (uint32_t i = 0; i < n; ++i) {
    ASSERT_EQ(hostY[i], std::fma(a, hostX[i], std::fma(a, hostX[i], 1.0f)))
        << i;
    ASSERT_EQ(hostHalves[i], 0x3c01) << i;
  }
  for (void *module : modules)
    mgpuModuleUnload(module);
  mgpuMemFree(x, stream);
  mgpuMemFree(y, stream);
  mgpuMemFree(halves, stream);
  mgpuStreamDestroy(stream); // the runtime's stream: stays usable
  mgpuStreamSynchronize(mgpuStreamCreate());
}

TEST_F(Gpu, CollectivesOnDeviceBuffersOneRank) {
  mgpuStreamCreate(); // starts the GPU runtime: device buffers are recognised
  const int64_t group[] = {0};
  std::vector<float> values = randomVector(24, 13);
  DeviceArray in(values), out(std::vector<float>(24, 0.0f));
  soaprt_all_reduce(in.data, out.data, 24, SOAPRT_F32, SOAPRT_MEAN, group, 1);
  EXPECT_EQ(out.read(), values);
  DeviceArray gathered(std::vector<float>(24, 0.0f));
  soaprt_all_gather(in.data, gathered.data, 4, 6, SOAPRT_F32, group, 1);
  EXPECT_EQ(gathered.read(), values);
  DeviceArray scattered(std::vector<float>(24, 0.0f));
  soaprt_reduce_scatter(in.data, scattered.data, 3, 8, SOAPRT_F32, SOAPRT_SUM,
                        group, 1);
  EXPECT_EQ(scattered.read(), values);
  DeviceArray exchanged(std::vector<float>(24, 0.0f));
  soaprt_all_to_all(in.data, exchanged.data, 2, 12, 4, 6, SOAPRT_F32, group,
                    1);
  EXPECT_EQ(exchanged.read(), values);
  DeviceArray broadcasted(std::vector<float>(24, 0.0f));
  soaprt_broadcast(in.data, broadcasted.data, 24, SOAPRT_F32, 0, group, 1);
  EXPECT_EQ(broadcasted.read(), values);
  // A message to itself: sent (copied), the source overwritten, received.
  DeviceArray source(values), received(std::vector<float>(24, 0.0f));
  const int64_t from[] = {0}, to[] = {0};
  soaprt_send(source.data, 24, SOAPRT_F32, from, to, 1, 7);
  cudaMemset(source.data, 0, 24 * sizeof(float));
  soaprt_recv(received.data, 24, SOAPRT_F32, from, to, 1, 7);
  EXPECT_EQ(received.read(), values);
  // A started all-reduce over a group of one is complete at once (handle 0).
  DeviceArray started(std::vector<float>(24, 0.0f));
  int64_t handle = soaprt_all_reduce_start(in.data, started.data, 24,
                                           SOAPRT_F32, SOAPRT_SUM, group, 1);
  EXPECT_EQ(handle, 0);
  soaprt_wait(handle);
  EXPECT_EQ(started.read(), values);
}

// Errors the runtime reports before any CUDA call: they need no GPU. The
// death tests re-execute the program (a forked child of a process that
// used CUDA cannot use it).
class GpuErrors : public ::testing::Test {
protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

TEST_F(GpuErrors, MatrixWithoutUnitStride) {
  EXPECT_EXIT(soaprt_gpu_matmul_f32(SOAPRT_MATH_F32, 4, 4, 4, nullptr, 8, 2,
                                    nullptr, 4, 1, nullptr, 4, 1),
              ::testing::ExitedWithCode(5),
              "error: soaprt_gpu_matmul_f32: operand A \\(4x4, element "
              "strides 8 and 2\\) has no unit-stride dimension");
}

TEST_F(GpuErrors, OutputWithoutUnitStride) {
  EXPECT_EXIT(soaprt_gpu_batch_matmul_f32(SOAPRT_MATH_TF32, 2, 4, 4, 4,
                                          nullptr, 16, 4, 1, nullptr, 16, 4,
                                          1, nullptr, 64, 8, 2),
              ::testing::ExitedWithCode(5),
              "operand C \\(4x4, element strides 8 and 2\\)");
}

TEST_F(GpuErrors, UnknownMathMode) {
  EXPECT_EXIT(soaprt_gpu_matmul_f32(7, 4, 4, 4, nullptr, 4, 1, nullptr, 4, 1,
                                    nullptr, 4, 1),
              ::testing::ExitedWithCode(5), "unknown math mode 7");
}

TEST_F(GpuErrors, DilatedPooling) {
  EXPECT_EXIT(soaprt_gpu_pool2d_nchw_f32(SOAPRT_POOL_MAX, 1, 1, 5, 5, 2, 2, 3,
                                         3, 1, 1, 2, 1, nullptr, 25, 25, 5, 1,
                                         nullptr, 9, 9, 3, 1),
              ::testing::ExitedWithCode(5),
              "cuDNN pooling has no dilation \\(got 2x1\\)");
}

TEST_F(GpuErrors, ModulesLoadLazily) {
  // Recording a module (what a global constructor does) needs no device.
  void *module = mgpuModuleLoad(const_cast<char *>(kAxpyPtx), sizeof(kAxpyPtx));
  ASSERT_NE(module, nullptr);
  mgpuModuleUnload(module);
}

TEST_F(GpuErrors, WaitForUnknownCollective) {
  EXPECT_EXIT(soaprt_wait(12345), ::testing::ExitedWithCode(4),
              "error: internal: soaprt_wait\\(12345\\) of a collective that "
              "was not started or was already waited for");
}

TEST_F(GpuErrors, NoDevice) {
  std::string reason;
  if (deviceUsable(&reason))
    GTEST_SKIP() << "a CUDA device is usable here";
  EXPECT_EXIT(soaprt_gpu_matmul_f32(SOAPRT_MATH_F32, 4, 4, 4, nullptr, 4, 1,
                                    nullptr, 4, 1, nullptr, 4, 1),
              ::testing::ExitedWithCode(5),
              "error: this executable was compiled for a GPU but no CUDA "
              "device is usable: " +
                  reason);
}

} // namespace

//===- CpuKernelsTest.cpp - libsoaprt's CPU convolutions ------------------===//
//
// soaprt_conv2d_nchw_fchw_* against a direct loop nest: strides, dilations,
// an input larger than the windows reach, operands in other layouts and
// with gaps (strides of views), a window larger than the output (the
// weight-gradient convolutions the autodiff emits, in both of oneDNN's
// views), and accumulation into an output that is not zero. f32 runs
// through oneDNN, f64 through im2col.
//
//===----------------------------------------------------------------------===//

#include "soap/Runtime/Runtime.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace {

struct Case {
  int64_t n, c, h, w, f, kh, kw, sh, sw, dh, dw;
  int64_t extraH = 0; // rows of the input no window reaches
  bool channelsLast = false; // NHWC input and output, HWCF filter
  int64_t gap = 1;           // every stride of every operand times gap
};

template <typename T> struct Tensor4 {
  std::vector<T> data;
  std::array<int64_t, 4> strides; // of logical N(F), C, H, W
};

/// A tensor of logical sizes `d` in NCHW order, stored in `order` (a
/// permutation of 0..3, outermost first) with each stride times `gap`.
template <typename T>
Tensor4<T> make(std::array<int64_t, 4> d, std::array<int, 4> order,
                int64_t gap, std::mt19937 &rng) {
  Tensor4<T> t;
  int64_t stride = gap;
  for (int i = 3; i >= 0; --i) {
    t.strides[order[i]] = stride;
    stride *= d[order[i]];
  }
  t.data.resize(static_cast<size_t>(stride));
  std::uniform_real_distribution<double> u(-1, 1);
  for (T &v : t.data)
    v = static_cast<T>(u(rng));
  return t;
}

template <typename T>
void check(const Case &k,
           void (*kernel)(int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                          int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                          int64_t, const T *, int64_t, int64_t, int64_t,
                          int64_t, const T *, int64_t, int64_t, int64_t,
                          int64_t, T *, int64_t, int64_t, int64_t, int64_t)) {
  std::mt19937 rng(7);
  int64_t oh = (k.h - k.dh * (k.kh - 1) - 1) / k.sh + 1;
  int64_t ow = (k.w - k.dw * (k.kw - 1) - 1) / k.sw + 1;
  int64_t h = k.h + k.extraH;
  std::array<int, 4> nchw = {0, 1, 2, 3}, nhwc = {0, 2, 3, 1},
                     hwcf = {2, 3, 1, 0};
  auto in = make<T>({k.n, k.c, h, k.w}, k.channelsLast ? nhwc : nchw, k.gap,
                    rng);
  auto filter = make<T>({k.f, k.c, k.kh, k.kw}, k.channelsLast ? hwcf : nchw,
                        k.gap, rng);
  auto out = make<T>({k.n, k.f, oh, ow}, k.channelsLast ? nhwc : nchw, k.gap,
                     rng);
  auto at = [](auto &t, int64_t a, int64_t b, int64_t c, int64_t d) -> auto & {
    return t.data[a * t.strides[0] + b * t.strides[1] + c * t.strides[2] +
                  d * t.strides[3]];
  };
  // The reference, from the output's initial values.
  std::vector<double> expected;
  for (int64_t a = 0; a < k.n; ++a)
    for (int64_t f = 0; f < k.f; ++f)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x) {
          double sum = at(out, a, f, y, x);
          for (int64_t c = 0; c < k.c; ++c)
            for (int64_t i = 0; i < k.kh; ++i)
              for (int64_t j = 0; j < k.kw; ++j)
                sum += double(at(in, a, c, y * k.sh + i * k.dh,
                                 x * k.sw + j * k.dw)) *
                       double(at(filter, f, c, i, j));
          expected.push_back(sum);
        }
  std::vector<T> gapsBefore = out.data;
  kernel(k.n, k.c, h, k.w, k.f, k.kh, k.kw, oh, ow, k.sh, k.sw, k.dh, k.dw,
         in.data.data(), in.strides[0], in.strides[1], in.strides[2],
         in.strides[3], filter.data.data(), filter.strides[0],
         filter.strides[1], filter.strides[2], filter.strides[3],
         out.data.data(), out.strides[0], out.strides[1], out.strides[2],
         out.strides[3]);
  double tolerance = sizeof(T) == 4 ? 1e-4 : 1e-10;
  size_t e = 0;
  std::vector<bool> written(out.data.size());
  for (int64_t a = 0; a < k.n; ++a)
    for (int64_t f = 0; f < k.f; ++f)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x, ++e) {
          double got = at(out, a, f, y, x);
          ASSERT_NEAR(got, expected[e],
                      tolerance * (1 + std::fabs(expected[e])))
              << "at " << a << "," << f << "," << y << "," << x;
          written[&at(out, a, f, y, x) - out.data.data()] = true;
        }
  // The gaps between a view's elements are left alone.
  for (size_t i = 0; i < out.data.size(); ++i)
    if (!written[i])
      ASSERT_EQ(out.data[i], gapsBefore[i]) << "gap element " << i;
}

const Case cases[] = {
    {2, 3, 11, 10, 4, 3, 2, 2, 1, 1, 2},             // strides, dilations
    {2, 3, 9, 9, 5, 3, 3, 1, 1, 1, 1, /*extraH=*/3}, // unused rows
    {2, 5, 8, 8, 4, 1, 1, 1, 1, 1, 1, 0, /*channelsLast=*/true},
    {1, 4, 7, 6, 3, 3, 3, 2, 2, 1, 1, 0, true, /*gap=*/2},
    {3, 2, 6, 6, 2, 1, 1, 2, 2, 1, 1, 0, false, 2}, // strided 1x1
    // A window larger than the output: weight gradients, as conv(x^T, dy^T).
    {4, 8, 12, 12, 6, 10, 10, 1, 1, 1, 1},
    // Fewer channels than images and a filter-sized output: oneDNN runs
    // these as backward-weights convolutions (DnnlKernels.cpp), here with
    // the dilation of a stride-2 layer's gradient, other layouts and gaps.
    {8, 2, 12, 12, 6, 9, 9, 1, 1, 1, 1},
    {6, 3, 13, 13, 5, 5, 5, 1, 1, 2, 2, /*extraH=*/2},
    {5, 2, 10, 9, 3, 4, 4, 1, 1, 2, 2, 0, /*channelsLast=*/true, /*gap=*/2},
};

} // namespace

TEST(CpuKernels, Conv2dF32MatchesLoops) {
  for (const Case &k : cases) {
    SCOPED_TRACE(testing::Message() << "case n=" << k.n << " c=" << k.c
                                    << " k=" << k.kh << "x" << k.kw);
    check<float>(k, soaprt_conv2d_nchw_fchw_f32);
  }
}

TEST(CpuKernels, Conv2dF64MatchesLoops) {
  for (const Case &k : cases) {
    SCOPED_TRACE(testing::Message() << "case n=" << k.n << " c=" << k.c
                                    << " k=" << k.kh << "x" << k.kw);
    check<double>(k, soaprt_conv2d_nchw_fchw_f64);
  }
}

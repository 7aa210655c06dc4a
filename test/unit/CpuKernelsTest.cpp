//===- CpuKernelsTest.cpp - libsoaprt's CPU convolutions ------------------===//
//
// soaprt_conv2d_nchw_fchw_* against a direct loop nest: strides, dilations,
// an input larger than the windows reach, operands in other layouts and
// with gaps (strides of views), a window larger than the output (the
// weight-gradient convolutions the autodiff emits, in both of oneDNN's
// views), and accumulation into an output that is not zero; and
// soaprt_conv2d_grouped_* on grouped and depthwise convolutions and a
// depthwise filter's gradient; soaprt_conv2d_spread_f32 on the input
// gradients the autodiff writes (an adjoint spread into zeros). f32 runs
// through oneDNN, f64 through im2col. The matrix products are in
// CpuMatmulTest.cpp.
//
//===----------------------------------------------------------------------===//

#include "soap/Runtime/Runtime.h"

#include "BlockedLayout.h"
#include "DnnlKernels.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

/// How a case stores its operands, outermost dimension first (logical
/// dimensions: in {n, g, c, h, w}, filter {g, f, c, kh, kw}, out {n, g, f,
/// oh, ow}).
enum class Layout {
  Nchw,         // NCHW, FCHW, NCHW (groups outside their channels)
  ChannelsLast, // NHWC, HWCF, NHWC
  // A depthwise filter gradient as the autodiff emits it: no batch, the
  // forward batch as channels, the forward image [N][C][H][W] (C the
  // groups), the output gradient [N][C][OH][OW] as the filter, the
  // filter's gradient [C][KH][KW] as the output.
  DepthwiseWeightGradient,
  // NCHW images, the filter [C][F][KH][KW] (a flipped filter: the forward
  // filter with its channels swapped), the output NCHW.
  SwappedFilter,
  // A filter's gradient as the autodiff emits it, conv(x^T, dy^T): the
  // output [F][N][OH][OW] (the forward filter's [O][I][KH][KW]).
  WeightGradient,
};

struct Case {
  int64_t n, c, h, w, f, kh, kw, sh, sw, dh, dw;
  int64_t extraH = 0; // rows of the input no window reaches
  Layout layout = Layout::Nchw;
  int64_t gap = 1; // every stride of every operand times gap
  int64_t g = 1;   // groups (c and f are per group)
};

template <typename T> struct Tensor5 {
  std::vector<T> data;
  std::array<int64_t, 5> strides; // of the logical dimensions
};

/// A tensor of logical sizes `d` stored in `order` (a permutation of
/// 0..4, outermost first) with each stride times `gap`. A dimension of
/// size 1 gets stride 0, as generated code passes it for a role an operand
/// lacks.
template <typename T>
Tensor5<T> make(std::array<int64_t, 5> d, std::array<int, 5> order, int64_t gap,
                std::mt19937 &rng) {
  Tensor5<T> t;
  int64_t stride = gap;
  for (int i = 4; i >= 0; --i) {
    t.strides[order[i]] = d[order[i]] == 1 ? 0 : stride;
    stride *= d[order[i]];
  }
  t.data.resize(static_cast<size_t>(stride));
  std::uniform_real_distribution<double> u(-1, 1);
  for (T &v : t.data)
    v = static_cast<T>(u(rng));
  return t;
}

template <typename T>
using PlainKernel = void (*)(int64_t, int64_t, int64_t, int64_t, int64_t,
                             int64_t, int64_t, int64_t, int64_t, int64_t,
                             int64_t, int64_t, int64_t, const T *, int64_t,
                             int64_t, int64_t, int64_t, const T *, int64_t,
                             int64_t, int64_t, int64_t, T *, int64_t, int64_t,
                             int64_t, int64_t, int64_t, int64_t, int64_t);
template <typename T>
using GroupedKernel = void (*)(int64_t, int64_t, int64_t, int64_t, int64_t,
                               int64_t, int64_t, int64_t, int64_t, int64_t,
                               int64_t, int64_t, int64_t, int64_t, const T *,
                               int64_t, int64_t, int64_t, int64_t, int64_t,
                               const T *, int64_t, int64_t, int64_t, int64_t,
                               int64_t, T *, int64_t, int64_t, int64_t, int64_t,
                               int64_t, int64_t, int64_t, int64_t);

/// Where a spread case's image is nonzero: rows offsets[0] + strides[0] * a
/// for a < sizes[0], columns likewise.
struct Spread {
  std::array<int64_t, 2> offsets, strides, sizes;
};

/// Which operands hold blocked weights (BlockedLayout.h), by their block;
/// 0: none.
struct Blocks {
  int64_t filter = 0, out = 0;
};

/// An operand's buffer of dense weights `dims` (in memory order) to its
/// blocked layout, or back.
template <typename T>
void convertInPlace(std::vector<T> &data, std::array<int64_t, 4> dims,
                    int64_t block, bool toBlocked) {
  std::vector<T> converted(data.size());
  soaprt::convertBlocked(dims, block, data.data(), converted.data(), toBlocked);
  data = std::move(converted);
}

/// Runs case `k` through `plain` (g = 1) or `grouped`, or with `spread`
/// through soaprt_conv2d_spread_f32 on the points of an image zero outside
/// them (with `backwards`, the filter passed as a reversed copy read from
/// its last window element with negated strides, as the lowering passes a
/// flipped filter), and compares with a direct loop nest. With `blocks`,
/// the filter or the output (dense, g = 1) is passed in blocked layout.
template <typename T>
void check(const Case &k, PlainKernel<T> plain, GroupedKernel<T> grouped,
           const Spread *spread = nullptr, bool backwards = false,
           bool accumulate = true, Blocks blocks = {}) {
  std::mt19937 rng(7);
  int64_t oh = (k.h - k.dh * (k.kh - 1) - 1) / k.sh + 1;
  int64_t ow = (k.w - k.dw * (k.kw - 1) - 1) / k.sw + 1;
  int64_t h = k.h + k.extraH;
  std::array<int, 5> inOrder = {0, 1, 2, 3, 4}, filterOrder = {0, 1, 2, 3, 4},
                     outOrder = {0, 1, 2, 3, 4};
  if (k.layout == Layout::ChannelsLast) {
    inOrder = {0, 3, 4, 1, 2};
    filterOrder = {3, 4, 0, 2, 1};
    outOrder = {0, 3, 4, 1, 2};
  } else if (k.layout == Layout::DepthwiseWeightGradient) {
    inOrder = {2, 1, 0, 3, 4};
    filterOrder = {2, 0, 1, 3, 4};
  } else if (k.layout == Layout::SwappedFilter) {
    filterOrder = {0, 2, 1, 3, 4};
  } else if (k.layout == Layout::WeightGradient) {
    outOrder = {2, 0, 1, 3, 4};
  }
  auto in = make<T>({k.n, k.g, k.c, h, k.w}, inOrder, k.gap, rng);
  auto filter = make<T>({k.g, k.f, k.c, k.kh, k.kw}, filterOrder, k.gap, rng);
  auto out = make<T>({k.n, k.g, k.f, oh, ow}, outOrder, k.gap, rng);
  auto at = [](auto &t, int64_t a, int64_t b, int64_t c, int64_t d,
               int64_t e) -> auto & {
    return t.data[a * t.strides[0] + b * t.strides[1] + c * t.strides[2] +
                  d * t.strides[3] + e * t.strides[4]];
  };
  auto isPoint = [&](int64_t y, int64_t x) {
    int64_t position[2] = {y, x};
    for (int d = 0; d < 2; ++d) {
      int64_t from = position[d] - spread->offsets[d];
      if (from < 0 || from % spread->strides[d] != 0 ||
          from / spread->strides[d] >= spread->sizes[d])
        return false;
    }
    return true;
  };
  if (spread)
    for (int64_t a = 0; a < k.n; ++a)
      for (int64_t g = 0; g < k.g; ++g)
        for (int64_t c = 0; c < k.c; ++c)
          for (int64_t y = 0; y < h; ++y)
            for (int64_t x = 0; x < k.w; ++x)
              if (!isPoint(y, x))
                at(in, a, g, c, y, x) = 0;
  // The reference, from the output's initial values.
  std::vector<double> expected;
  for (int64_t a = 0; a < k.n; ++a)
    for (int64_t g = 0; g < k.g; ++g)
      for (int64_t f = 0; f < k.f; ++f)
        for (int64_t y = 0; y < oh; ++y)
          for (int64_t x = 0; x < ow; ++x) {
            double sum = accumulate ? at(out, a, g, f, y, x) : 0.0;
            for (int64_t c = 0; c < k.c; ++c)
              for (int64_t i = 0; i < k.kh; ++i)
                for (int64_t j = 0; j < k.kw; ++j)
                  sum += double(at(in, a, g, c, y * k.sh + i * k.dh,
                                   x * k.sw + j * k.dw)) *
                         double(at(filter, g, f, c, i, j));
            expected.push_back(sum);
          }
  // Blocked operands' dense weights, in memory order.
  std::array<int64_t, 4> filterWeights =
      k.layout == Layout::SwappedFilter
          ? std::array<int64_t, 4>{k.c, k.f, k.kh, k.kw}
          : std::array<int64_t, 4>{k.f, k.c, k.kh, k.kw};
  std::array<int64_t, 4> outWeights = {k.f, k.n, oh, ow};
  if (blocks.out)
    convertInPlace(out.data, outWeights, blocks.out, true);
  std::vector<T> gapsBefore = out.data;
  const auto &is = in.strides, &fs = filter.strides, &os = out.strides;
  if (spread) {
    // The filter, or its reversed copy read backwards.
    std::vector<T> reversed = filter.data;
    const T *filterAt = filter.data.data();
    int64_t fsh = fs[3], fsw = fs[4];
    if (backwards) {
      for (int64_t g = 0; g < k.g; ++g)
        for (int64_t f = 0; f < k.f; ++f)
          for (int64_t c = 0; c < k.c; ++c)
            for (int64_t i = 0; i < k.kh; ++i)
              for (int64_t j = 0; j < k.kw; ++j)
                reversed[&at(filter, g, f, c, k.kh - 1 - i, k.kw - 1 - j) -
                         filter.data.data()] = at(filter, g, f, c, i, j);
      filterAt = reversed.data() + (k.kh - 1) * fs[3] + (k.kw - 1) * fs[4];
      fsh = -fs[3];
      fsw = -fs[4];
    }
    if (blocks.filter) {
      int64_t offset =
          filterAt - (backwards ? reversed.data() : filter.data.data());
      convertInPlace(reversed, filterWeights, blocks.filter, true);
      filterAt = reversed.data() + offset;
    }
    const T *points = &at(in, 0, 0, 0, spread->offsets[0], spread->offsets[1]);
    if constexpr (std::is_same_v<T, float>)
      soaprt_conv2d_spread_f32(
          k.g, k.n, k.c, h, k.w, k.f, k.kh, k.kw, oh, ow, k.sh, k.sw, k.dh,
          k.dw, spread->offsets[0], spread->offsets[1], spread->strides[0],
          spread->strides[1], spread->sizes[0], spread->sizes[1], points, is[0],
          is[1], is[2], is[3] * spread->strides[0], is[4] * spread->strides[1],
          filterAt, fs[0], fs[1], fs[2], fsh, fsw, out.data.data(), os[0],
          os[1], os[2], os[3], os[4], accumulate, blocks.filter, blocks.out);
  } else {
    std::vector<T> filterData = filter.data;
    if (blocks.filter)
      convertInPlace(filterData, filterWeights, blocks.filter, true);
    if (k.g == 1)
      plain(k.n, k.c, h, k.w, k.f, k.kh, k.kw, oh, ow, k.sh, k.sw, k.dh, k.dw,
            in.data.data(), is[0], is[2], is[3], is[4], filterData.data(),
            fs[1], fs[2], fs[3], fs[4], out.data.data(), os[0], os[2], os[3],
            os[4], accumulate, blocks.filter, blocks.out);
    else
      grouped(k.g, k.n, k.c, h, k.w, k.f, k.kh, k.kw, oh, ow, k.sh, k.sw, k.dh,
              k.dw, in.data.data(), is[0], is[1], is[2], is[3], is[4],
              filterData.data(), fs[0], fs[1], fs[2], fs[3], fs[4],
              out.data.data(), os[0], os[1], os[2], os[3], os[4], accumulate,
              blocks.filter, blocks.out);
  }
  if (blocks.out) {
    convertInPlace(out.data, outWeights, blocks.out, false);
    convertInPlace(gapsBefore, outWeights, blocks.out, false);
  }
  double tolerance = sizeof(T) == 4 ? 1e-4 : 1e-10;
  size_t e = 0;
  std::vector<bool> written(out.data.size());
  for (int64_t a = 0; a < k.n; ++a)
    for (int64_t g = 0; g < k.g; ++g)
      for (int64_t f = 0; f < k.f; ++f)
        for (int64_t y = 0; y < oh; ++y)
          for (int64_t x = 0; x < ow; ++x, ++e) {
            double got = at(out, a, g, f, y, x);
            ASSERT_NEAR(got, expected[e],
                        tolerance * (1 + std::fabs(expected[e])))
                << "at " << a << "," << g << "," << f << "," << y << "," << x;
            written[&at(out, a, g, f, y, x) - out.data.data()] = true;
          }
  // The gaps between a view's elements are left alone.
  for (size_t i = 0; i < out.data.size(); ++i) {
    if (!written[i]) {
      ASSERT_EQ(out.data[i], gapsBefore[i]) << "gap element " << i;
    }
  }
}

constexpr Layout nchw = Layout::Nchw, channelsLast = Layout::ChannelsLast,
                 depthwiseGradient = Layout::DepthwiseWeightGradient;

const Case cases[] = {
    {2, 3, 11, 10, 4, 3, 2, 2, 1, 1, 2},             // strides, dilations
    {2, 3, 9, 9, 5, 3, 3, 1, 1, 1, 1, /*extraH=*/3}, // unused rows
    {2, 5, 8, 8, 4, 1, 1, 1, 1, 1, 1, 0, channelsLast},
    {1, 4, 7, 6, 3, 3, 3, 2, 2, 1, 1, 0, channelsLast, /*gap=*/2},
    {3, 2, 6, 6, 2, 1, 1, 2, 2, 1, 1, 0, nchw, 2}, // strided 1x1
    // A window larger than the output: weight gradients, as conv(x^T, dy^T).
    {4, 8, 12, 12, 6, 10, 10, 1, 1, 1, 1},
    // Fewer channels than images and a filter-sized output: oneDNN runs
    // these as backward-weights convolutions (DnnlKernels.cpp), here with
    // the dilation of a stride-2 layer's gradient, other layouts and gaps.
    {8, 2, 12, 12, 6, 9, 9, 1, 1, 1, 1},
    {6, 3, 13, 13, 5, 5, 5, 1, 1, 2, 2, /*extraH=*/2},
    {5, 2, 10, 9, 3, 4, 4, 1, 1, 2, 2, 0, channelsLast, /*gap=*/2},
    // Groups: a grouped convolution in both layouts, depthwise
    // convolutions (one channel per group; strided, padded rows, channels
    // last with a channel multiplier of 2), and a depthwise filter's
    // gradient as the autodiff emits it (the forward's stride 2 as a
    // dilation), which oneDNN runs in its backward-weights view.
    {2, 3, 9, 8, 2, 3, 3, 1, 1, 1, 1, 0, nchw, 1, /*g=*/4},
    {2, 2, 7, 7, 3, 3, 3, 2, 2, 1, 1, 0, channelsLast, 2, /*g=*/3},
    {3, 1, 11, 11, 1, 3, 3, 2, 2, 1, 1, /*extraH=*/1, nchw, 1, /*g=*/6},
    {2, 1, 9, 9, 2, 5, 5, 1, 1, 1, 1, 0, channelsLast, 1, /*g=*/5},
    {1, 4, 11, 11, 1, 5, 5, 1, 1, 2, 2, 0, depthwiseGradient, 1, /*g=*/6},
    {1, 3, 7, 7, 1, 5, 5, 1, 1, 1, 1, /*extraH=*/1, depthwiseGradient, 2,
     /*g=*/4},
    // Depthwise 5x5 filter gradients of MobileNetV3's shapes (smaller):
    // oneDNN would run them in its generic im2col kernel, so the direct
    // loops of Kernels.cpp do (a window wider than a vector of 16, and a
    // stride-2 layer's gradient).
    {1, 4, 18, 18, 1, 14, 14, 1, 1, 1, 1, 0, depthwiseGradient, 1, /*g=*/20},
    {1, 3, 15, 15, 1, 6, 6, 1, 1, 2, 2, 0, depthwiseGradient, 1, /*g=*/17},
};

/// Input gradients as the autodiff writes them: a unit-stride convolution
/// of the adjoint spread into zeros (by the forward stride, padded by the
/// window's reach minus the forward padding) through the flipped filter.
/// The forward layers: 3x3 stride 2 pad 1; 3x3 stride 1 pad 1 (dilated 2);
/// a depthwise 3x3 stride 2 with a padding row the gradient drops; a
/// 1x1 stride 2 whose last input row no window reads; a whole-image
/// window (a 1x1 adjoint in the middle of a 2K-1 image); channels last
/// with gaps.
const std::pair<Case, Spread> spreadCases[] = {
    {{2, 5, 11, 11, 3, 3, 3, 1, 1, 1, 1}, {{1, 1}, {2, 2}, {5, 5}}},
    {{2, 4, 12, 12, 6, 3, 3, 1, 1, 2, 2}, {{2, 2}, {1, 1}, {8, 8}}},
    {{2, 1, 10, 10, 1, 3, 3, 1, 1, 1, 1, 0, nchw, 1, /*g=*/6},
     {{2, 2}, {2, 2}, {4, 4}}},
    {{3, 4, 9, 9, 2, 1, 1, 1, 1, 1, 1}, {{0, 0}, {2, 2}, {4, 4}}},
    {{2, 1, 9, 9, 1, 5, 5, 1, 1, 1, 1}, {{4, 4}, {1, 1}, {1, 1}}},
    {{2, 3, 9, 8, 4, 3, 3, 1, 1, 1, 1, 0, channelsLast, 2},
     {{2, 2}, {2, 2}, {3, 3}}},
    // Padded images (points one apart), which oneDNN convolves with its
    // padding: a padded 3x3 stride-2 convolution, one whose last row of
    // points no window reads, an uneven padding, and a weight gradient's
    // shape (oneDNN's backward-weights view).
    {{2, 3, 11, 11, 4, 3, 3, 2, 2, 1, 1}, {{1, 1}, {1, 1}, {9, 9}}},
    {{2, 3, 11, 11, 4, 3, 3, 2, 2, 1, 1, /*extraH=*/2},
     {{1, 1}, {1, 1}, {11, 9}}},
    {{2, 3, 11, 11, 4, 3, 3, 1, 1, 1, 1}, {{2, 1}, {1, 1}, {9, 8}}},
    {{8, 2, 10, 10, 4, 7, 7, 1, 1, 1, 1}, {{1, 1}, {1, 1}, {8, 8}}},
};

std::string describe(const Case &k) {
  std::ostringstream os;
  os << "case g=" << k.g << " n=" << k.n << " c=" << k.c << " f=" << k.f
     << " k=" << k.kh << "x" << k.kw;
  return os.str();
}

} // namespace

TEST(CpuKernels, Conv2dF32MatchesLoops) {
  for (const Case &k : cases) {
    SCOPED_TRACE(describe(k));
    check<float>(k, soaprt_conv2d_nchw_fchw_f32, soaprt_conv2d_grouped_f32);
  }
}

TEST(CpuKernels, Conv2dF64MatchesLoops) {
  for (const Case &k : cases) {
    SCOPED_TRACE(describe(k));
    check<double>(k, soaprt_conv2d_nchw_fchw_f64, soaprt_conv2d_grouped_f64);
  }
}

TEST(CpuKernels, Conv2dSpreadMatchesLoops) {
  for (const auto &[k, spread] : spreadCases) {
    SCOPED_TRACE(describe(k));
    check<float>(k, soaprt_conv2d_nchw_fchw_f32, soaprt_conv2d_grouped_f32,
                 &spread);
  }
}

// accumulate = 0: the sum replaces the output (the lowering drops the
// zero fill before such a convolution), gaps left alone.
TEST(CpuKernels, Conv2dOverwrites) {
  for (const Case &k : cases) {
    SCOPED_TRACE(describe(k));
    check<float>(k, soaprt_conv2d_nchw_fchw_f32, soaprt_conv2d_grouped_f32,
                 nullptr, false, /*accumulate=*/false);
    check<double>(k, soaprt_conv2d_nchw_fchw_f64, soaprt_conv2d_grouped_f64,
                  nullptr, false, /*accumulate=*/false);
  }
  for (const auto &[k, spread] : spreadCases)
    for (bool backwards : {false, true}) {
      SCOPED_TRACE(describe(k));
      check<float>(k, soaprt_conv2d_nchw_fchw_f32, soaprt_conv2d_grouped_f32,
                   &spread, backwards, /*accumulate=*/false);
    }
}

// Weights kept in oneDNN's blocked layout (BlockedLayout.h) across steps:
// a filter read in place by the forward convolution (blocks of 16 and 8,
// strided, in the forward view and in the backward-weights view), a
// weight gradient written in place (in both views), a flipped filter read
// backwards by the spread kernel (3x3, and 1x1 stride 2), all accumulating
// and overwriting; f64 (never oneDNN) through plain copies.
TEST(CpuKernels, Conv2dBlockedWeights) {
  const Layout swapped = Layout::SwappedFilter,
               gradient = Layout::WeightGradient;
  const std::pair<Case, Blocks> blockedCases[] = {
      {{2, 16, 8, 8, 32, 3, 3, 1, 1, 1, 1}, {16, 0}},
      {{2, 16, 8, 8, 32, 3, 3, 1, 1, 1, 1}, {8, 0}},
      {{2, 32, 9, 9, 16, 3, 3, 2, 2, 1, 1, 0, swapped}, {16, 0}},
      {{2, 16, 5, 5, 32, 1, 1, 1, 1, 1, 1}, {16, 0}},
      // A forward convolution the weights view runs (its filter as diff_dst).
      {{32, 16, 6, 6, 16, 3, 3, 1, 1, 1, 1}, {16, 0}},
      // Weight gradients: the weights view (fewer channels than images),
      // and the forward view.
      {{16, 4, 10, 10, 32, 8, 8, 1, 1, 1, 1, 0, gradient}, {0, 16}},
      {{32, 4, 13, 13, 16, 5, 5, 1, 1, 2, 2, 0, gradient}, {0, 8}},
      {{16, 32, 10, 10, 32, 8, 8, 1, 1, 1, 1, 0, gradient}, {0, 16}},
      // Winograd's kernels where the CPU has them (Conv2dWinograd), on
      // blocked weights.
      {{2, 32, 10, 10, 32, 3, 3, 1, 1, 1, 1}, {16, 0}},
  };
  for (const auto &[k, blocks] : blockedCases)
    for (bool accumulate : {true, false}) {
      SCOPED_TRACE(describe(k) + " blocks " + std::to_string(blocks.filter) +
                   "," + std::to_string(blocks.out));
      check<float>(k, soaprt_conv2d_nchw_fchw_f32, soaprt_conv2d_grouped_f32,
                   nullptr, false, accumulate, blocks);
      check<double>(k, soaprt_conv2d_nchw_fchw_f64, soaprt_conv2d_grouped_f64,
                    nullptr, false, accumulate, blocks);
    }
  const std::pair<Case, Spread> blockedSpreads[] = {
      {{2, 16, 11, 11, 32, 3, 3, 1, 1, 1, 1, 0, swapped},
       {{1, 1}, {2, 2}, {5, 5}}},
      {{2, 32, 11, 11, 16, 3, 3, 1, 1, 1, 1}, {{2, 2}, {1, 1}, {7, 7}}},
      {{3, 16, 9, 9, 16, 1, 1, 1, 1, 1, 1, 0, swapped},
       {{0, 0}, {2, 2}, {4, 4}}},
  };
  for (const auto &[k, spread] : blockedSpreads)
    for (bool accumulate : {true, false}) {
      SCOPED_TRACE(describe(k) + " spread");
      check<float>(k, soaprt_conv2d_nchw_fchw_f32, soaprt_conv2d_grouped_f32,
                   &spread, /*backwards=*/k.kh > 1, accumulate, {16, 0});
    }
}

// Winograd's algorithm (oneDNN's jit_wino_4x3, on CPUs with AVX-512) for
// 3x3 unit-stride convolutions with outputs of at least 8x8 and at least
// 32 channels in and out: a forward convolution, a filter gradient as the
// autodiff writes it (the weights view) and a data gradient (the spread
// view, its filter read backwards), accumulating and overwriting, give the
// loops' sums to the tolerance. With fewer channels the direct kernels run.
TEST(CpuKernels, Conv2dWinograd) {
  bool avx512 =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  auto ranWinograd = [&] {
    if (avx512 && soaprt::dnnlEnabled()) {
      EXPECT_NE(soaprt::dnnlLastConvImplementation().find("wino"),
                std::string::npos)
          << soaprt::dnnlLastConvImplementation();
    }
  };
  const Case forward = {2, 32, 12, 12, 32, 3, 3, 1, 1, 1, 1};
  const Case filterGradient = {32, 4, 12, 12, 32, 10, 10, 1, 1, 1, 1};
  const Case dataGradient = {2, 32, 12, 12, 32, 3, 3, 1, 1, 1, 1};
  const Spread adjoint = {{1, 1}, {1, 1}, {10, 10}};
  for (bool accumulate : {true, false}) {
    SCOPED_TRACE(accumulate ? "accumulating" : "overwriting");
    check<float>(forward, soaprt_conv2d_nchw_fchw_f32,
                 soaprt_conv2d_grouped_f32, nullptr, false, accumulate);
    ranWinograd();
    check<float>(filterGradient, soaprt_conv2d_nchw_fchw_f32,
                 soaprt_conv2d_grouped_f32, nullptr, false, accumulate);
    ranWinograd();
    check<float>(dataGradient, soaprt_conv2d_nchw_fchw_f32,
                 soaprt_conv2d_grouped_f32, &adjoint, /*backwards=*/true,
                 accumulate);
    ranWinograd();
    // 4 input channels: the direct kernels.
    check<float>({2, 4, 12, 12, 8, 3, 3, 1, 1, 1, 1},
                 soaprt_conv2d_nchw_fchw_f32, soaprt_conv2d_grouped_f32,
                 nullptr, false, accumulate);
    if (soaprt::dnnlEnabled()) {
      EXPECT_EQ(soaprt::dnnlLastConvImplementation().find("wino"),
                std::string::npos)
          << soaprt::dnnlLastConvImplementation();
    }
  }
}

TEST(CpuKernels, Conv2dSpreadReadsBackwardFilters) {
  for (const auto &[k, spread] : spreadCases) {
    SCOPED_TRACE(describe(k));
    check<float>(k, soaprt_conv2d_nchw_fchw_f32, soaprt_conv2d_grouped_f32,
                 &spread, /*backwards=*/true);
  }
}

// Blocked layouts hold ungrouped weights: a grouped convolution given a
// block is stopped with a message naming the problem, in the plain and
// the spread (strided backward-data) entry points alike.
TEST(CpuKernelsDeathTest, GroupedConvolutionRefusesBlockedWeights) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // 2 groups of 16 -> 16 channels, 3x3, on a 4x4 image.
  std::vector<float> in(2 * 16 * 4 * 4, 1.0f), filter(2 * 16 * 16 * 9, 1.0f),
      out(2 * 16 * 2 * 2, 0.0f);
  EXPECT_DEATH(soaprt_conv2d_grouped_f32(
                   2, 1, 16, 4, 4, 16, 3, 3, 2, 2, 1, 1, 1, 1, in.data(),
                   2 * 16 * 16, 16 * 16, 16, 4, 1, filter.data(), 16 * 16 * 9,
                   16 * 9, 9, 3, 1, out.data(), 2 * 16 * 4, 16 * 4, 4, 2, 1,
                   /*accumulate=*/1, /*filterBlock=*/16, /*outBlock=*/0),
               "a grouped convolution \\(2 groups\\) was given blocked "
               "weights \\(filterBlock 16, outBlock 0\\)");
  EXPECT_DEATH(soaprt_conv2d_spread_f32(
                   2, 1, 16, 4, 4, 16, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0, 1, 1, 4, 4,
                   in.data(), 2 * 16 * 16, 16 * 16, 16, 4, 1, filter.data(),
                   16 * 16 * 9, 16 * 9, 9, 3, 1, out.data(), 2 * 16 * 4, 16 * 4,
                   4, 2, 1, /*accumulate=*/1, /*filterBlock=*/0,
                   /*outBlock=*/16),
               "soaprt_conv2d_spread_f32: a grouped convolution");
}

// memrefCopy (runtime/MemrefCopy.cpp) on MLIR's descriptors: into a window
// of stride 2 (a max-pool gradient's window, single elements), out of a
// transposed view, and rows of a padded image (whole-row runs); every
// element lands where the strides say and nothing else is written.
extern "C" void memrefCopy(int64_t elemSize, void *src, void *dst);

namespace {
template <int Rank> struct Descriptor {
  float *allocated, *aligned;
  int64_t offset, sizes[Rank], strides[Rank];
};
struct Unranked {
  int64_t rank;
  void *descriptor;
};

template <int Rank>
void copyAndCheck(const std::array<int64_t, Rank> &sizes,
                  const std::array<int64_t, Rank> &fromStrides,
                  int64_t fromOffset,
                  const std::array<int64_t, Rank> &toStrides,
                  int64_t toOffset) {
  int64_t span = 1, fromSpan = fromOffset + 1, toSpan = toOffset + 1;
  for (int d = 0; d < Rank; ++d) {
    span *= sizes[d];
    fromSpan += (sizes[d] - 1) * fromStrides[d];
    toSpan += (sizes[d] - 1) * toStrides[d];
  }
  std::vector<float> from(fromSpan), to(toSpan, -1.0f), expected(toSpan, -1.0f);
  for (size_t i = 0; i < from.size(); ++i)
    from[i] = static_cast<float>(i) + 0.5f;
  std::array<int64_t, Rank> index{};
  for (int64_t i = 0; i < span; ++i) {
    int64_t f = fromOffset, t = toOffset;
    for (int d = 0; d < Rank; ++d) {
      f += index[d] * fromStrides[d];
      t += index[d] * toStrides[d];
    }
    expected[t] = from[f];
    for (int d = Rank - 1; d >= 0 && ++index[d] == sizes[d]; --d)
      index[d] = 0;
  }
  Descriptor<Rank> source{from.data(), from.data(), fromOffset, {}, {}},
      target{to.data(), to.data(), toOffset, {}, {}};
  for (int d = 0; d < Rank; ++d) {
    source.sizes[d] = target.sizes[d] = sizes[d];
    source.strides[d] = fromStrides[d];
    target.strides[d] = toStrides[d];
  }
  Unranked src{Rank, &source}, dst{Rank, &target};
  memrefCopy(sizeof(float), &src, &dst);
  EXPECT_EQ(to, expected);
}
} // namespace

TEST(CpuKernels, MemrefCopyFollowsStrides) {
  // 2x3x4x4 into every other row and column of a 2x3x9x9 buffer, at (1, 0).
  copyAndCheck<4>({2, 3, 4, 4}, {48, 16, 4, 1}, 0, {243, 81, 18, 2}, 9);
  // Out of a transposed 5x7 view into a dense 7x5.
  copyAndCheck<2>({7, 5}, {1, 7}, 0, {5, 1}, 0);
  // Rows of 6 out of a padded 4x8 image (offset 9) into a dense 4x6.
  copyAndCheck<2>({4, 6}, {8, 1}, 9, {6, 1}, 0);
}

//===- Kernels.cpp - BLAS-backed kernels that generated code calls --------===//
//
// Matmul, batch matmul (matrix-vector products included) and NCHW
// convolution on strided operands, through OpenBLAS, or oneDNN's sgemm on the
// f32 shapes where it is faster (DnnlKernels.cpp). An operand BLAS can read
// in place (one unit stride and a leading dimension no smaller than the
// other size) is passed as is, transposed when its unit stride is the row's;
// any other is packed into a dense scratch copy first. f32 convolutions run
// through oneDNN (DnnlKernels.cpp); the others, and any oneDNN refuses, are
// im2col followed by one GEMM per image, except grouped convolutions with
// few output channels per group (depthwise ones and their filter
// gradients), which run in direct loops (narrowGroupsConv2d).
//
//===----------------------------------------------------------------------===//

#include "soap/Runtime/Runtime.h"

#include "BlockedLayout.h"
#include "DnnlKernels.h"

#include <cblas.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <strings.h>
#include <type_traits>
#include <unistd.h>
#include <vector>

namespace {

/// A strided rows x cols matrix.
template <typename T> struct Matrix {
  T *data;
  int64_t rows, cols, rowStride, colStride;
};

/// C = op(A) op(B) + C, or C = op(A) op(B) without `accumulate` (C's old
/// contents are then never read).
inline void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m, int64_t n,
                 int64_t k, const float *a, int64_t lda, const float *b,
                 int64_t ldb, float *c, int64_t ldc, bool accumulate) {
  if (soaprt::dnnlSgemm(ta == CblasTrans, tb == CblasTrans, m, n, k, a, lda, b,
                        ldb, c, ldc, accumulate))
    return;
  cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, 1.0f, a, lda, b, ldb,
              accumulate ? 1.0f : 0.0f, c, ldc);
}
inline void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m, int64_t n,
                 int64_t k, const double *a, int64_t lda, const double *b,
                 int64_t ldb, double *c, int64_t ldc, bool accumulate) {
  cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, 1.0, a, lda, b, ldb,
              accumulate ? 1.0 : 0.0, c, ldc);
}

/// How BLAS reads `matrix` (row-major): as is, transposed, or not at all.
template <typename T>
bool blasLayout(const Matrix<T> &matrix, CBLAS_TRANSPOSE &trans, int64_t &ld) {
  if (matrix.colStride == 1 &&
      matrix.rowStride >= std::max<int64_t>(1, matrix.cols)) {
    trans = CblasNoTrans;
    ld = matrix.rowStride;
    return true;
  }
  if (matrix.rowStride == 1 &&
      matrix.colStride >= std::max<int64_t>(1, matrix.rows)) {
    trans = CblasTrans;
    ld = matrix.colStride;
    return true;
  }
  // Degenerate shapes: a single row or column has any stride.
  if (matrix.rows == 1 && matrix.colStride == 1) {
    trans = CblasNoTrans;
    ld = std::max<int64_t>(1, matrix.cols);
    return true;
  }
  if (matrix.cols == 1 && matrix.rowStride == 1) {
    trans = CblasTrans;
    ld = std::max<int64_t>(1, matrix.rows);
    return true;
  }
  return false;
}

template <typename T>
void pack(const Matrix<const T> &matrix, std::vector<T> &dense) {
  dense.resize(static_cast<size_t>(matrix.rows * matrix.cols));
  for (int64_t i = 0; i < matrix.rows; ++i)
    for (int64_t j = 0; j < matrix.cols; ++j)
      dense[i * matrix.cols + j] =
          matrix.data[i * matrix.rowStride + j * matrix.colStride];
}

/// The other of BLAS's two readings of an operand.
inline CBLAS_TRANSPOSE flipped(CBLAS_TRANSPOSE t) {
  return t == CblasNoTrans ? CblasTrans : CblasNoTrans;
}

/// The scratch of matmul's transposed products, kept between calls.
template <typename T> std::vector<T> &transposedScratch() {
  thread_local std::vector<T> scratch;
  return scratch;
}

/// C += A * B for strided matrices, or C = A * B without `accumulate` (an
/// output the lowering would otherwise fill with zeros first).
template <typename T>
void matmul(const Matrix<const T> &a, const Matrix<const T> &b,
            const Matrix<T> &c, bool accumulate) {
  int64_t m = c.rows, n = c.cols, k = a.cols;
  if (m == 0 || n == 0)
    return;
  if (k == 0) {
    // An empty sum: an overwritten output is zero.
    if (!accumulate)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j)
          c.data[i * c.rowStride + j * c.colStride] = T(0);
    return;
  }
  CBLAS_TRANSPOSE ta, tb, tc;
  int64_t lda, ldb, ldc;
  std::vector<T> packedA, packedB, packedC;
  const T *pa = a.data, *pb = b.data;
  if (!blasLayout(a, ta, lda)) {
    pack(a, packedA);
    pa = packedA.data(), ta = CblasNoTrans, lda = k;
  }
  if (!blasLayout(b, tb, ldb)) {
    pack(b, packedB);
    pb = packedB.data(), tb = CblasNoTrans, ldb = n;
  }
  if (blasLayout(Matrix<const T>{c.data, m, n, c.rowStride, c.colStride}, tc,
                 ldc)) {
    if (tc == CblasNoTrans) {
      if (tb == CblasTrans && m > 8 && m <= 64 && n >= 4 * m) {
        // A few rows times a transposed B (an LSTM step's or a small
        // batch's input gradient, dy W^T): OpenBLAS and oneDNN run the
        // product 1.2-2.2x faster with the long side as the rows, C^T =
        // B^T A^T (soap-gemm-bench), so it goes to scratch and is added
        // (or written) back transposed. Up to 8 rows, oneDNN's direct
        // product is faster still (dnnlGemmPreferred).
        std::vector<T> &scratch = transposedScratch<T>();
        scratch.resize(static_cast<size_t>(m * n));
        gemm(flipped(tb), flipped(ta), n, m, k, pb, ldb, pa, lda,
             scratch.data(), m, /*accumulate=*/false);
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j)
            c.data[i * ldc + j] =
                (accumulate ? c.data[i * ldc + j] : T(0)) + scratch[j * m + i];
        return;
      }
      gemm(ta, tb, m, n, k, pa, lda, pb, ldb, c.data, ldc, accumulate);
      return;
    }
    // C is column-major: C^T = B^T A^T, row-major.
    gemm(flipped(tb), flipped(ta), n, m, k, pb, ldb, pa, lda, c.data, ldc,
         accumulate);
    return;
  }
  if (accumulate)
    pack(Matrix<const T>{c.data, m, n, c.rowStride, c.colStride}, packedC);
  else
    packedC.resize(static_cast<size_t>(m * n));
  gemm(ta, tb, m, n, k, pa, lda, pb, ldb, packedC.data(), n, accumulate);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      c.data[i * c.rowStride + j * c.colStride] = packedC[i * n + j];
}

/// out += conv(in, filter) for one image: im2col into `columns`
/// ((C*KH*KW) x (OH*OW)), then one GEMM with the filter as an
/// F x (C*KH*KW) matrix.
template <typename T>
void conv2d(int64_t n, int64_t c, int64_t h, int64_t w, int64_t f, int64_t kh,
            int64_t kw, int64_t oh, int64_t ow, int64_t sh, int64_t sw,
            int64_t dh, int64_t dw, const T *in, int64_t isn, int64_t isc,
            int64_t ish, int64_t isw, const T *filter, int64_t fsf, int64_t fsc,
            int64_t fsh, int64_t fsw, T *out, int64_t osn, int64_t osf,
            int64_t osh, int64_t osw) {
  int64_t patch = c * kh * kw, pixels = oh * ow;
  if (n == 0 || f == 0 || pixels == 0 || patch == 0)
    return;
  // The filter as a matrix: dense when its C, KH, KW strides nest.
  std::vector<T> packedFilter;
  Matrix<const T> filterMatrix{filter, f, patch, fsf, fsw};
  if (!(fsw == 1 && fsh == kw && fsc == kh * kw)) {
    packedFilter.resize(static_cast<size_t>(f * patch));
    for (int64_t o = 0; o < f; ++o)
      for (int64_t ci = 0; ci < c; ++ci)
        for (int64_t i = 0; i < kh; ++i)
          for (int64_t j = 0; j < kw; ++j)
            packedFilter[((o * c + ci) * kh + i) * kw + j] =
                filter[o * fsf + ci * fsc + i * fsh + j * fsw];
    filterMatrix = {packedFilter.data(), f, patch, patch, 1};
  }
  // A 1x1 unit-stride convolution over a dense image needs no im2col.
  bool direct = kh == 1 && kw == 1 && sh == 1 && sw == 1 && isw == 1 &&
                ish == w && oh == h && ow == w;
  std::vector<T> columns;
  if (!direct)
    columns.resize(static_cast<size_t>(patch * pixels));
  bool denseOut = osw == 1 && osh == ow;
  for (int64_t b = 0; b < n; ++b) {
    const T *image = in + b * isn;
    Matrix<const T> colMatrix{image, patch, pixels, isc, 1};
    if (!direct) {
      T *col = columns.data();
      for (int64_t ci = 0; ci < c; ++ci)
        for (int64_t i = 0; i < kh; ++i)
          for (int64_t j = 0; j < kw; ++j) {
            const T *channel = image + ci * isc + i * dh * ish + j * dw * isw;
            for (int64_t y = 0; y < oh; ++y) {
              const T *row = channel + y * sh * ish;
              if (sw == 1 && isw == 1)
                std::copy(row, row + ow, col);
              else
                for (int64_t x = 0; x < ow; ++x)
                  col[x] = row[x * sw * isw];
              col += ow;
            }
          }
      colMatrix = {columns.data(), patch, pixels, pixels, 1};
    }
    T *image_out = out + b * osn;
    if (denseOut) {
      matmul<T>(filterMatrix, colMatrix,
                Matrix<T>{image_out, f, pixels, osf, 1}, /*accumulate=*/true);
      continue;
    }
    std::vector<T> result(static_cast<size_t>(f * pixels));
    for (int64_t o = 0; o < f; ++o)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x)
          result[(o * oh + y) * ow + x] =
              image_out[o * osf + y * osh + x * osw];
    matmul<T>(filterMatrix, colMatrix,
              Matrix<T>{result.data(), f, pixels, pixels, 1},
              /*accumulate=*/true);
    for (int64_t o = 0; o < f; ++o)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x)
          image_out[o * osf + y * osh + x * osw] =
              result[(o * oh + y) * ow + x];
  }
}

/// One row of a narrow-groups convolution (narrowGroupsConv2d):
/// acc[x] += sum over (c, i, j) of in(c, i, x * step + j * reach) *
/// filter(c, i, j), with `in` the row's first input row (channel strides
/// `isc`, rows `ish`) and `filter` its taps (`fsc`, `fsh`, `fsw`). The
/// innermost loop runs along the longer of the output row and the window
/// row and keeps a partial sum per lane, so that it vectorizes without
/// reassociating a sum.
template <typename T, int64_t Step, int64_t Reach>
inline __attribute__((always_inline)) void
narrowRow(T *acc, int64_t ow, const T *in, int64_t isc, int64_t ish,
          int64_t step, int64_t reach, const T *filter, int64_t fsc,
          int64_t fsh, int64_t fsw, int64_t c, int64_t kh, int64_t kw,
          int64_t dh, T *part) {
  if constexpr (Step > 0)
    step = Step;
  if constexpr (Reach > 0)
    reach = Reach;
  if (ow >= kw) {
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t i = 0; i < kh; ++i)
        for (int64_t j = 0; j < kw; ++j) {
          T tap = filter[ci * fsc + i * fsh + j * fsw];
          const T *row = in + ci * isc + i * dh * ish + j * reach;
          for (int64_t x = 0; x < ow; ++x)
            acc[x] += tap * row[x * step];
        }
    return;
  }
  for (int64_t x = 0; x < ow; ++x) {
    std::fill(part, part + kw, T(0));
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t i = 0; i < kh; ++i) {
        const T *row = in + ci * isc + i * dh * ish + x * step;
        const T *taps = filter + ci * fsc + i * fsh;
        for (int64_t j = 0; j < kw; ++j)
          part[j] += row[j * reach] * taps[j * fsw];
      }
    T sum = 0;
    for (int64_t j = 0; j < kw; ++j)
      sum += part[j];
    acc[x] += sum;
  }
}

/// narrowGroupsLoops where the window is larger than the output (a
/// depthwise filter's gradient: the window is the forward output, the
/// output the filter) and there are many groups: the image and the filter
/// are copied with the groups innermost, so that every multiply-add runs
/// along the groups (a vector of them) instead of along a window row of a
/// few elements (14 for MobileNetV3's, shorter than one AVX-512 vector).
template <typename T>
inline __attribute__((always_inline)) void
groupsInnermost(const soaprt::Conv2dShape &s, const soaprt::Conv2dStrides &st,
                const T *in, const T *filter, T *out) {
  auto [h, w] = soaprt::usedImage(s);
  int64_t g = s.g, window = s.c * s.kh * s.kw * g;
  std::vector<T> image(static_cast<size_t>(s.c * h * w * g)),
      taps(static_cast<size_t>(s.f * window)),
      sums(static_cast<size_t>(s.oh * s.ow * g));
  // taps[f][c][i][j][g], once for every image.
  for (int64_t f = 0; f < s.f; ++f)
    for (int64_t c = 0; c < s.c; ++c)
      for (int64_t i = 0; i < s.kh; ++i)
        for (int64_t j = 0; j < s.kw; ++j) {
          const T *from = filter + f * st.filter[1] + c * st.filter[2] +
                          i * st.filter[3] + j * st.filter[4];
          T *to = taps.data() + f * window + ((c * s.kh + i) * s.kw + j) * g;
          for (int64_t k = 0; k < g; ++k)
            to[k] = from[k * st.filter[0]];
        }
  for (int64_t b = 0; b < s.n; ++b) {
    // image[c][y][x][g].
    for (int64_t c = 0; c < s.c; ++c)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x) {
          const T *from =
              in + b * st.in[0] + c * st.in[2] + y * st.in[3] + x * st.in[4];
          T *to = image.data() + ((c * h + y) * w + x) * g;
          for (int64_t k = 0; k < g; ++k)
            to[k] = from[k * st.in[1]];
        }
    for (int64_t f = 0; f < s.f; ++f) {
      std::fill(sums.begin(), sums.end(), T(0));
      for (int64_t c = 0; c < s.c; ++c)
        for (int64_t i = 0; i < s.kh; ++i)
          for (int64_t j = 0; j < s.kw; ++j) {
            const T *tap =
                taps.data() + f * window + ((c * s.kh + i) * s.kw + j) * g;
            for (int64_t y = 0; y < s.oh; ++y)
              for (int64_t x = 0; x < s.ow; ++x) {
                const T *pixel =
                    image.data() +
                    ((c * h + y * s.sh + i * s.dh) * w + x * s.sw + j * s.dw) *
                        g;
                T *sum = sums.data() + (y * s.ow + x) * g;
                for (int64_t k = 0; k < g; ++k)
                  sum[k] += pixel[k] * tap[k];
              }
          }
      for (int64_t k = 0; k < g; ++k)
        for (int64_t y = 0; y < s.oh; ++y)
          for (int64_t x = 0; x < s.ow; ++x)
            out[b * st.out[0] + k * st.out[1] + f * st.out[2] + y * st.out[3] +
                x * st.out[4]] += sums[(y * s.ow + x) * g + k];
    }
  }
}

/// A grouped convolution with few output channels per group (a depthwise
/// convolution, and its filter's gradient as the autodiff writes it: the
/// forward batch as channels, the output gradient as a window larger than
/// the output), computed directly: im2col would copy every window to feed
/// a product of a single row per group, and oneDNN runs the 5x5 filter
/// gradients of MobileNetV3 in its generic im2col kernel 2-3x slower than
/// this (DnnlKernels.cpp declines them). The output accumulates.
template <typename T>
inline __attribute__((always_inline)) void
narrowGroupsLoops(const soaprt::Conv2dShape &s, const soaprt::Conv2dStrides &st,
                  const T *in, const T *filter, T *out) {
  if (s.kw > s.ow && s.g >= 16) {
    groupsInnermost(s, st, in, filter, out);
    return;
  }
  std::vector<T> acc(static_cast<size_t>(s.ow)),
      part(static_cast<size_t>(s.kw));
  int64_t step = s.sw * st.in[4], reach = s.dw * st.in[4];
  for (int64_t b = 0; b < s.n; ++b)
    for (int64_t g = 0; g < s.g; ++g)
      for (int64_t f = 0; f < s.f; ++f)
        for (int64_t y = 0; y < s.oh; ++y) {
          T *o = out + b * st.out[0] + g * st.out[1] + f * st.out[2] +
                 y * st.out[3];
          for (int64_t x = 0; x < s.ow; ++x)
            acc[x] = o[x * st.out[4]];
          const T *rows =
              in + b * st.in[0] + g * st.in[1] + y * s.sh * st.in[3];
          const T *taps = filter + g * st.filter[0] + f * st.filter[1];
          auto run = [&](auto stepConstant, auto reachConstant) {
            narrowRow<T, decltype(stepConstant)::value,
                      decltype(reachConstant)::value>(
                acc.data(), s.ow, rows, st.in[2], st.in[3], step, reach, taps,
                st.filter[2], st.filter[3], st.filter[4], s.c, s.kh, s.kw, s.dh,
                part.data());
          };
          using One = std::integral_constant<int64_t, 1>;
          using Any = std::integral_constant<int64_t, 0>;
          // Unit steps as constants, so that the inner loops read
          // consecutive elements.
          if (step == 1 && reach == 1)
            run(One{}, One{});
          else if (step == 1)
            run(One{}, Any{});
          else if (reach == 1)
            run(Any{}, One{});
          else
            run(Any{}, Any{});
          for (int64_t x = 0; x < s.ow; ++x)
            o[x * st.out[4]] = acc[x];
        }
}

// The narrow-groups loops compiled for AVX-512 and AVX2 besides the
// baseline the library is built for, the one the CPU runs picked when the
// program loads (GCC's function multiversioning).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SOAPRT_VECTOR_CLONES                                                   \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define SOAPRT_VECTOR_CLONES
#endif
SOAPRT_VECTOR_CLONES void narrowGroupsConv2d(const soaprt::Conv2dShape &s,
                                             const soaprt::Conv2dStrides &st,
                                             const float *in,
                                             const float *filter, float *out) {
  narrowGroupsLoops(s, st, in, filter, out);
}
SOAPRT_VECTOR_CLONES void narrowGroupsConv2d(const soaprt::Conv2dShape &s,
                                             const soaprt::Conv2dStrides &st,
                                             const double *in,
                                             const double *filter,
                                             double *out) {
  narrowGroupsLoops(s, st, in, filter, out);
}

/// A plain copy of a convolution operand of `sizes` and plain `strides`
/// that holds blocked weights (`block`, BlockedLayout.h) at `pointer`;
/// `operand` says which weights it is.
template <typename T>
std::vector<T> plainCopy(const std::array<int64_t, 4> &sizes,
                         const std::array<int64_t, 4> &strides, int64_t block,
                         const T *pointer, soaprt::BlockedOperand &operand) {
  if (!soaprt::blockedOperand(sizes, strides, operand) ||
      !soaprt::blockable(operand.weights, block)) {
    std::fprintf(stderr,
                 "soaprt: a convolution operand of blocked weights (blocks "
                 "of %lld) has sizes and strides that are not dense "
                 "weights' or not multiples of the block\n",
                 static_cast<long long>(block));
    std::abort();
  }
  const std::array<int64_t, 4> &d = operand.weights;
  std::vector<T> plain(static_cast<size_t>(d[0] * d[1] * d[2] * d[3]));
  soaprt::convertBlocked(d, block, pointer - operand.offset, plain.data(),
                         /*toBlocked=*/false);
  return plain;
}

/// Blocked weights are ungrouped [O][I][KH][KW] tensors (BlockedLayout.h);
/// the lowering never blocks a grouped convolution's weights, and a caller
/// that does is stopped here rather than reading one group's layout for all.
void refuseGroupedBlocks(const soaprt::Conv2dShape &shape,
                         const soaprt::Conv2dStrides &st, const char *what) {
  if (shape.g == 1 || (!st.filterBlock && !st.outBlock))
    return;
  std::fprintf(stderr,
               "soaprt: %s: a grouped convolution (%lld groups) was given "
               "blocked weights (filterBlock %lld, outBlock %lld): blocked "
               "layouts hold ungrouped [O][I][KH][KW] weights only\n",
               what, static_cast<long long>(shape.g),
               static_cast<long long>(st.filterBlock),
               static_cast<long long>(st.outBlock));
  std::abort();
}

/// The convolution through oneDNN where it takes it (f32), else im2col,
/// one group at a time. Blocked weights that oneDNN does not take run as
/// plain copies (an output's copy converted back).
template <typename T>
void conv2dKernel(const soaprt::Conv2dShape &shape,
                  const soaprt::Conv2dStrides &st, const T *in, const T *filter,
                  T *out) {
  refuseGroupedBlocks(shape, st, "soaprt_conv2d");
  if constexpr (std::is_same_v<T, float>)
    if (soaprt::dnnlConv2d(shape, st, in, filter, out))
      return;
  if (st.filterBlock || st.outBlock) {
    soaprt::Conv2dStrides plain = st;
    plain.filterBlock = plain.outBlock = 0;
    soaprt::BlockedOperand filterOperand, outOperand;
    std::vector<T> filterCopy, outCopy;
    const T *plainFilter = filter;
    T *plainOut = out;
    const soaprt::Conv2dShape &s = shape;
    if (st.filterBlock) {
      filterCopy =
          plainCopy<T>({s.f, s.c, s.kh, s.kw},
                       {st.filter[1], st.filter[2], st.filter[3], st.filter[4]},
                       st.filterBlock, filter, filterOperand);
      plainFilter = filterCopy.data() + filterOperand.offset;
    }
    if (st.outBlock) {
      outCopy = plainCopy<T>({s.n, s.f, s.oh, s.ow},
                             {st.out[0], st.out[2], st.out[3], st.out[4]},
                             st.outBlock, out, outOperand);
      plainOut = outCopy.data() + outOperand.offset;
    }
    conv2dKernel<T>(shape, plain, in, plainFilter, plainOut);
    if (st.outBlock)
      soaprt::convertBlocked(outOperand.weights, st.outBlock, outCopy.data(),
                             out - outOperand.offset, /*toBlocked=*/true);
    return;
  }
  // The kernels below add to the output: an overwritten one starts at zero.
  soaprt::Conv2dShape s = shape;
  if (!s.accumulate) {
    soaprt::zeroOutput(s, st.out, out);
    s.accumulate = true;
  }
  if (soaprt::narrowGroups(s)) {
    narrowGroupsConv2d(s, st, in, filter, out);
    return;
  }
  if (s.g > 1) {
    soaprt::Conv2dShape one = s;
    one.g = 1;
    for (int64_t group = 0; group < s.g; ++group)
      conv2dKernel<T>(one, st, in + group * st.in[1],
                      filter + group * st.filter[0], out + group * st.out[1]);
    return;
  }
  conv2d<T>(s.n, s.c, s.h, s.w, s.f, s.kh, s.kw, s.oh, s.ow, s.sh, s.sw, s.dh,
            s.dw, in, st.in[0], st.in[2], st.in[3], st.in[4], filter,
            st.filter[1], st.filter[2], st.filter[3], st.filter[4], out,
            st.out[0], st.out[2], st.out[3], st.out[4]);
}

/// C[i] += A[i] B[i] for i < batch, the matrices `ab`, `bb`, `cb` elements
/// apart (C = ... without `accumulate`). A batch loop that the product sums
/// over (cb == 0: every batch adds into the one C, the lowering's pseudo
/// batch of a product summed over a second reduction loop) accumulates
/// after the first. A batch that one operand does not depend on (stride 0)
/// while the other two hold it right after their rows (or columns, or the
/// k dimension) is one product with batch times as many rows (columns, k):
/// a weight broadcast over the batch times activations, or a weight's
/// gradient summed over the batch, runs as one GEMM.
template <typename T>
void batchMatmul(int64_t batch, const Matrix<const T> &a, int64_t ab,
                 const Matrix<const T> &b, int64_t bb, const Matrix<T> &c,
                 int64_t cb, bool accumulate) {
  int64_t m = c.rows, n = c.cols, k = a.cols;
  if (batch > 1) {
    if (bb == 0 && ab != 0 && cb != 0 && ab == m * a.rowStride &&
        cb == m * c.rowStride)
      return matmul<T>({a.data, batch * m, k, a.rowStride, a.colStride}, b,
                       {c.data, batch * m, n, c.rowStride, c.colStride},
                       accumulate);
    if (ab == 0 && bb != 0 && cb != 0 && bb == n * b.colStride &&
        cb == n * c.colStride)
      return matmul<T>(a, {b.data, k, batch * n, b.rowStride, b.colStride},
                       {c.data, m, batch * n, c.rowStride, c.colStride},
                       accumulate);
    if (cb == 0 && ab != 0 && bb != 0 && ab == k * a.colStride &&
        bb == k * b.rowStride)
      return matmul<T>({a.data, m, batch * k, a.rowStride, a.colStride},
                       {b.data, batch * k, n, b.rowStride, b.colStride}, c,
                       accumulate);
  }
  for (int64_t i = 0; i < batch; ++i)
    matmul<T>({a.data + i * ab, m, k, a.rowStride, a.colStride},
              {b.data + i * bb, k, n, b.rowStride, b.colStride},
              {c.data + i * cb, m, n, c.rowStride, c.colStride},
              accumulate || (cb == 0 && i > 0));
}

} // namespace

extern "C" int soaprt_select_blas_core(char **argv) {
  // OpenBLAS picks its kernels from the CPU model at load time; on virtual
  // machines that hide the model it falls back to SSE3 kernels
  // ("Prescott"), 4-5x slower than the CPU's AVX2/AVX-512 ones. Name the
  // core from the CPU's features and start again, once.
  if (std::getenv("OPENBLAS_CORETYPE") || std::getenv("SOAP_KEEP_BLAS_CORE"))
    return 0;
  const char *detected = openblas_get_corename();
  if (!detected || strcasecmp(detected, "prescott") != 0)
    return 0;
  const char *core = nullptr;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f"))
    core = "SkylakeX";
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    core = "Haswell";
  if (!core)
    return 0;
  setenv("OPENBLAS_CORETYPE", core, 1);
  execv("/proc/self/exe", argv);
  return -1; // exec failed: carry on with the generic kernels
}

#define SOAPRT_DEFINE_KERNELS(SUFFIX, T)                                       \
  void soaprt_matmul_##SUFFIX(int64_t m, int64_t n, int64_t k, const T *a,     \
                              int64_t am, int64_t ak, const T *b, int64_t bk,  \
                              int64_t bn, T *c, int64_t cm, int64_t cn,        \
                              int64_t accumulate) {                            \
    matmul<T>({a, m, k, am, ak}, {b, k, n, bk, bn}, {c, m, n, cm, cn},         \
              accumulate != 0);                                                \
  }                                                                            \
  void soaprt_batch_matmul_##SUFFIX(                                           \
      int64_t batch, int64_t m, int64_t n, int64_t k, const T *a, int64_t ab,  \
      int64_t am, int64_t ak, const T *b, int64_t bb, int64_t bk, int64_t bn,  \
      T *c, int64_t cb, int64_t cm, int64_t cn, int64_t accumulate) {          \
    batchMatmul<T>(batch, {a, m, k, am, ak}, ab, {b, k, n, bk, bn}, bb,        \
                   {c, m, n, cm, cn}, cb, accumulate != 0);                    \
  }                                                                            \
  void soaprt_conv2d_nchw_fchw_##SUFFIX(                                       \
      int64_t n, int64_t c, int64_t h, int64_t w, int64_t f, int64_t kh,       \
      int64_t kw, int64_t oh, int64_t ow, int64_t sh, int64_t sw, int64_t dh,  \
      int64_t dw, const T *in, int64_t isn, int64_t isc, int64_t ish,          \
      int64_t isw, const T *filter, int64_t fsf, int64_t fsc, int64_t fsh,     \
      int64_t fsw, T *out, int64_t osn, int64_t osf, int64_t osh, int64_t osw, \
      int64_t accumulate, int64_t filterBlock, int64_t outBlock) {             \
    soaprt::Conv2dStrides strides;                                             \
    strides.in = {isn, 0, isc, ish, isw};                                      \
    strides.filter = {0, fsf, fsc, fsh, fsw};                                  \
    strides.out = {osn, 0, osf, osh, osw};                                     \
    strides.filterBlock = filterBlock;                                         \
    strides.outBlock = outBlock;                                               \
    conv2dKernel<T>(                                                           \
        {n, c, h, w, f, kh, kw, oh, ow, sh, sw, dh, dw, 1, accumulate != 0},   \
        strides, in, filter, out);                                             \
  }                                                                            \
  void soaprt_conv2d_grouped_##SUFFIX(                                         \
      int64_t g, int64_t n, int64_t c, int64_t h, int64_t w, int64_t f,        \
      int64_t kh, int64_t kw, int64_t oh, int64_t ow, int64_t sh, int64_t sw,  \
      int64_t dh, int64_t dw, const T *in, int64_t isn, int64_t isg,           \
      int64_t isc, int64_t ish, int64_t isw, const T *filter, int64_t fsg,     \
      int64_t fsf, int64_t fsc, int64_t fsh, int64_t fsw, T *out, int64_t osn, \
      int64_t osg, int64_t osf, int64_t osh, int64_t osw, int64_t accumulate,  \
      int64_t filterBlock, int64_t outBlock) {                                 \
    soaprt::Conv2dStrides strides;                                             \
    strides.in = {isn, isg, isc, ish, isw};                                    \
    strides.filter = {fsg, fsf, fsc, fsh, fsw};                                \
    strides.out = {osn, osg, osf, osh, osw};                                   \
    strides.filterBlock = filterBlock;                                         \
    strides.outBlock = outBlock;                                               \
    conv2dKernel<T>(                                                           \
        {n, c, h, w, f, kh, kw, oh, ow, sh, sw, dh, dw, g, accumulate != 0},   \
        strides, in, filter, out);                                             \
  }

extern "C" {
SOAPRT_DEFINE_KERNELS(f32, float)
SOAPRT_DEFINE_KERNELS(f64, double)

void soaprt_conv2d_spread_f32(
    int64_t g, int64_t n, int64_t c, int64_t h, int64_t w, int64_t f,
    int64_t kh, int64_t kw, int64_t oh, int64_t ow, int64_t sh, int64_t sw,
    int64_t dh, int64_t dw, int64_t offsetH, int64_t offsetW, int64_t spreadH,
    int64_t spreadW, int64_t pointsH, int64_t pointsW, const float *points,
    int64_t psn, int64_t psg, int64_t psc, int64_t psh, int64_t psw,
    const float *filter, int64_t fsg, int64_t fsf, int64_t fsc, int64_t fsh,
    int64_t fsw, float *out, int64_t osn, int64_t osg, int64_t osf, int64_t osh,
    int64_t osw, int64_t accumulate, int64_t filterBlock, int64_t outBlock) {
  soaprt::Conv2dShape shape{
      n, c, h, w, f, kh, kw, oh, ow, sh, sw, dh, dw, g, accumulate != 0};
  soaprt::Conv2dStrides strides;
  strides.in = {psn, psg, psc, psh, psw};
  strides.filter = {fsg, fsf, fsc, fsh, fsw};
  strides.out = {osn, osg, osf, osh, osw};
  strides.filterBlock = filterBlock;
  strides.outBlock = outBlock;
  refuseGroupedBlocks(shape, strides, "soaprt_conv2d_spread_f32");
  if (soaprt::dnnlConv2dSpread(
          shape, strides,
          {{offsetH, offsetW}, {spreadH, spreadW}, {pointsH, pointsW}}, points,
          filter, out))
    return;
  // The whole image: zeros with the points spread into them (dense
  // n, g, c, h, w).
  std::vector<float> image(static_cast<size_t>(n * g * c * h * w), 0.0f);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t gi = 0; gi < g; ++gi)
      for (int64_t ci = 0; ci < c; ++ci) {
        float *channel = image.data() + ((b * g + gi) * c + ci) * h * w;
        const float *from = points + b * psn + gi * psg + ci * psc;
        for (int64_t y = 0; y < pointsH; ++y)
          for (int64_t x = 0; x < pointsW; ++x)
            channel[(offsetH + y * spreadH) * w + offsetW + x * spreadW] =
                from[y * psh + x * psw];
      }
  strides.in = {g * c * h * w, c * h * w, h * w, w, 1};
  conv2dKernel<float>(shape, strides, image.data(), filter, out);
}
}

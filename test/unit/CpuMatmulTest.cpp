//===- CpuMatmulTest.cpp - libsoaprt's CPU matrix products ----------------===//
//
// soaprt_matmul_* on each path of the GEMM dispatch (oneDNN's or OpenBLAS's
// sgemm, transposed products, packed operands), and soaprt_batch_matmul_*
// with a batch that one operand does not hold (broadcast) or that the
// output sums, against loops in double.
//
//===----------------------------------------------------------------------===//

#include "soap/Runtime/Runtime.h"

#include "DnnlKernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

//===----------------------------------------------------------------------===//
// soaprt_matmul_*: each path of the runtime's GEMM dispatch (oneDNN's
// sgemm, OpenBLAS, the transposed product for a few rows times a
// transposed B, packed operands, a column-major output) against a loop in
// double, accumulating into an output that is not zero.
//===----------------------------------------------------------------------===//

namespace {

/// How a matmul case stores a matrix: row-major, column-major, or
/// row-major with every stride doubled (BLAS cannot read it: packed).
enum class Storage { Rows, Columns, Gapped };

struct MatmulCase {
  int64_t m, n, k;
  Storage a, b, c;
};

std::string describe(const MatmulCase &mc) {
  auto name = [](Storage s) {
    return s == Storage::Rows      ? "rows"
           : s == Storage::Columns ? "cols"
                                   : "gapped";
  };
  std::ostringstream os;
  os << mc.m << "x" << mc.n << "x" << mc.k << " A " << name(mc.a) << " B "
     << name(mc.b) << " C " << name(mc.c);
  return os.str();
}

/// A rows x cols matrix's buffer and its (row, column) strides.
template <typename T> struct StoredMatrix {
  std::vector<T> data;
  int64_t rowStride, colStride;
  T &at(int64_t i, int64_t j) { return data[i * rowStride + j * colStride]; }
};

template <typename T>
StoredMatrix<T> makeMatrix(int64_t rows, int64_t cols, Storage s,
                           std::mt19937 &rng) {
  StoredMatrix<T> mat;
  if (s == Storage::Rows)
    mat.rowStride = cols, mat.colStride = 1;
  else if (s == Storage::Columns)
    mat.rowStride = 1, mat.colStride = rows;
  else
    mat.rowStride = 2 * cols, mat.colStride = 2;
  mat.data.resize(static_cast<size_t>((rows - 1) * mat.rowStride +
                                      (cols - 1) * mat.colStride + 1));
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  for (T &x : mat.data)
    x = static_cast<T>(dist(rng));
  return mat;
}

template <typename T>
void checkMatmul(const MatmulCase &mc,
                 void (*kernel)(int64_t, int64_t, int64_t, const T *, int64_t,
                                int64_t, const T *, int64_t, int64_t, T *,
                                int64_t, int64_t, int64_t),
                 bool accumulate) {
  std::mt19937 rng(7);
  auto a = makeMatrix<T>(mc.m, mc.k, mc.a, rng);
  auto b = makeMatrix<T>(mc.k, mc.n, mc.b, rng);
  auto c = makeMatrix<T>(mc.m, mc.n, mc.c, rng);
  auto before = c;
  kernel(mc.m, mc.n, mc.k, a.data.data(), a.rowStride, a.colStride,
         b.data.data(), b.rowStride, b.colStride, c.data.data(), c.rowStride,
         c.colStride, accumulate);
  double eps = std::is_same_v<T, float> ? 1e-6 : 1e-14;
  for (int64_t i = 0; i < mc.m; ++i)
    for (int64_t j = 0; j < mc.n; ++j) {
      // Overwritten, the output's old (nonzero) values must not count.
      double sum = accumulate ? before.at(i, j) : 0.0;
      double magnitude = std::abs(sum);
      for (int64_t l = 0; l < mc.k; ++l) {
        double term = double(a.at(i, l)) * double(b.at(l, j));
        sum += term;
        magnitude += std::abs(term);
      }
      ASSERT_NEAR(c.at(i, j), sum, eps * (mc.k + 1) * magnitude)
          << "at (" << i << ", " << j << ")";
    }
  // Gaps between the output's elements keep their values.
  if (mc.c != Storage::Gapped)
    return;
  for (int64_t i = 0; i < mc.m; ++i)
    for (int64_t j = 0; j + (i + 1 == mc.m) < mc.n; ++j)
      ASSERT_EQ(c.data[i * c.rowStride + j * c.colStride + 1],
                before.data[i * c.rowStride + j * c.colStride + 1]);
}

const MatmulCase matmulCases[] = {
    // oneDNN's sgemm (more than 2^19 products; B read as stored, or a few
    // rows).
    {64, 96, 128, Storage::Rows, Storage::Rows, Storage::Rows},
    {64, 96, 128, Storage::Columns, Storage::Rows, Storage::Rows},
    {8, 300, 256, Storage::Rows, Storage::Columns, Storage::Rows},
    // OpenBLAS: both transposed, or small.
    {64, 96, 128, Storage::Columns, Storage::Columns, Storage::Rows},
    {5, 7, 3, Storage::Rows, Storage::Rows, Storage::Rows},
    // The transposed product: a few rows times a transposed B.
    {16, 512, 96, Storage::Rows, Storage::Columns, Storage::Rows},
    {16, 512, 96, Storage::Columns, Storage::Columns, Storage::Rows},
    {12, 1000, 40, Storage::Rows, Storage::Columns, Storage::Rows},
    // A column-major output (C^T = B^T A^T), and packed operands.
    {16, 512, 96, Storage::Rows, Storage::Columns, Storage::Columns},
    {64, 96, 128, Storage::Gapped, Storage::Rows, Storage::Rows},
    {16, 512, 96, Storage::Rows, Storage::Gapped, Storage::Gapped},
};

} // namespace

TEST(CpuKernels, MatmulMatchesLoops) {
  // The cases reach both libraries.
  EXPECT_TRUE(soaprt::dnnlGemmPreferred(false, false, 64, 96, 128));
  EXPECT_FALSE(soaprt::dnnlGemmPreferred(true, true, 64, 96, 128));
  EXPECT_FALSE(soaprt::dnnlGemmPreferred(false, false, 5, 7, 3));
  for (const MatmulCase &mc : matmulCases) {
    SCOPED_TRACE(describe(mc));
    for (bool accumulate : {true, false}) {
      SCOPED_TRACE(accumulate ? "C += A B" : "C = A B");
      checkMatmul<float>(mc, soaprt_matmul_f32, accumulate);
      checkMatmul<double>(mc, soaprt_matmul_f64, accumulate);
    }
  }
}

// soaprt_batch_matmul_*: batches with stride 0 in one operand (the
// lowering's products of a weight broadcast over the batch, and of a
// weight gradient summed over it: BroadcastContractions.cpp), as one GEMM
// where the other two operands hold the batch next to their rows, columns
// or k, and one GEMM per batch elsewhere; against a loop in double.
namespace {

/// Strides of one batch_matmul operand: batch, row, column.
struct BatchStrides {
  int64_t batch, row, col;
};

struct BatchCase {
  const char *name;
  int64_t batch, m, n, k;
  BatchStrides a, b, c;
};

template <typename T>
void checkBatchMatmul(const BatchCase &bc, bool accumulate,
                      void (*kernel)(int64_t, int64_t, int64_t, int64_t,
                                     const T *, int64_t, int64_t, int64_t,
                                     const T *, int64_t, int64_t, int64_t, T *,
                                     int64_t, int64_t, int64_t, int64_t)) {
  auto extent = [&](const BatchStrides &s, int64_t rows, int64_t cols) {
    return static_cast<size_t>((bc.batch - 1) * s.batch + (rows - 1) * s.row +
                               (cols - 1) * s.col + 1);
  };
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  auto fill = [&](size_t size) {
    std::vector<T> v(size);
    for (T &x : v)
      x = static_cast<T>(dist(rng));
    return v;
  };
  std::vector<T> a = fill(extent(bc.a, bc.m, bc.k));
  std::vector<T> b = fill(extent(bc.b, bc.k, bc.n));
  std::vector<T> c = fill(extent(bc.c, bc.m, bc.n));
  // The expected output: each batch's product added into (or, overwritten,
  // replacing) what its C held, in batch order (a C several batches share
  // takes all their products).
  std::vector<double> want(c.begin(), c.end());
  std::vector<bool> written(c.size(), false);
  for (int64_t i = 0; i < bc.batch; ++i)
    for (int64_t r = 0; r < bc.m; ++r)
      for (int64_t j = 0; j < bc.n; ++j) {
        size_t at =
            static_cast<size_t>(i * bc.c.batch + r * bc.c.row + j * bc.c.col);
        if (!accumulate && !written[at])
          want[at] = 0;
        written[at] = true;
        for (int64_t l = 0; l < bc.k; ++l)
          want[at] += double(a[i * bc.a.batch + r * bc.a.row + l * bc.a.col]) *
                      double(b[i * bc.b.batch + l * bc.b.row + j * bc.b.col]);
      }
  kernel(bc.batch, bc.m, bc.n, bc.k, a.data(), bc.a.batch, bc.a.row, bc.a.col,
         b.data(), bc.b.batch, bc.b.row, bc.b.col, c.data(), bc.c.batch,
         bc.c.row, bc.c.col, accumulate);
  double eps = std::is_same_v<T, float> ? 1e-5 : 1e-13;
  for (size_t at = 0; at < c.size(); ++at)
    ASSERT_NEAR(c[at], want[at], eps * (bc.batch * bc.k + 1)) << "at " << at;
}

// batch 3, m 5, n 7, k 4.
const BatchCase batchCases[] = {
    // B broadcast; A and C hold the batch before their rows: one GEMM of
    // 15 rows.
    {"B broadcast, rows", 3, 5, 7, 4, {20, 4, 1}, {0, 7, 1}, {35, 7, 1}},
    // ... A's batches apart by more: one GEMM per batch.
    {"B broadcast, gaps", 3, 5, 7, 4, {23, 4, 1}, {0, 7, 1}, {35, 7, 1}},
    // A broadcast; B and C hold the batch after their columns.
    {"A broadcast, columns", 3, 5, 7, 4, {0, 4, 1}, {7, 21, 1}, {7, 21, 1}},
    // C summed over the batch; A and B hold it next to k: one GEMM of k 12.
    {"C summed, k", 3, 5, 7, 4, {4, 12, 1}, {28, 7, 1}, {0, 7, 1}},
    // ... B's batches apart by more: one GEMM per batch, added up.
    {"C summed, gaps", 3, 5, 7, 4, {4, 12, 1}, {30, 7, 1}, {0, 7, 1}},
    // Plain batches.
    {"plain", 3, 5, 7, 4, {20, 4, 1}, {28, 7, 1}, {35, 7, 1}},
};

} // namespace

TEST(CpuKernels, BatchMatmulBroadcastAndSummedBatches) {
  for (const BatchCase &bc : batchCases) {
    SCOPED_TRACE(bc.name);
    for (bool accumulate : {true, false}) {
      SCOPED_TRACE(accumulate ? "C += A B" : "C = A B");
      checkBatchMatmul<float>(bc, accumulate, soaprt_batch_matmul_f32);
      checkBatchMatmul<double>(bc, accumulate, soaprt_batch_matmul_f64);
    }
  }
}

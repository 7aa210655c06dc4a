//===- GemmBench.cpp - the runtime's GEMM dispatch against both libraries -===//
//
// soap-gemm-bench [REPEATS]: for each f32 product shape (a grid of
// few-row and square products in every transposition, and the products of
// the zoo's LSTM, BERT and classifier steps), the fastest of REPEATS runs
// (default 30) of OpenBLAS's cblas_sgemm, oneDNN's dnnl_sgemm, and
// soaprt_matmul_f32, the runtime's call (which picks one of the two, or the
// transposed product, see runtime/DnnlKernels.cpp and Kernels.cpp); prints
// a markdown table with the runtime's time against the faster library's.
// One thread: run with OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1.
//
//===----------------------------------------------------------------------===//

#include "soap/Runtime/Runtime.h"

#include <cblas.h>
#include <dnnl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

namespace {

struct Shape {
  int64_t m, n, k;
  bool transA, transB;
};

double now() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

template <typename F> double fastest(int repeats, F &&run) {
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    double start = now();
    run();
    best = std::min(best, now() - start);
  }
  return best;
}

} // namespace

int main(int argc, char **argv) {
  int repeats = argc > 1 ? std::atoi(argv[1]) : 30;
  if (repeats <= 0) {
    std::fprintf(stderr, "usage: soap-gemm-bench [REPEATS > 0]\n");
    return 2;
  }
  std::vector<Shape> shapes;
  const int64_t grid[][3] = {
      {4, 1024, 512},  {8, 1000, 512},  {16, 1024, 512}, {16, 512, 1024},
      {32, 1024, 512}, {64, 512, 1024}, {64, 64, 64},    {128, 1024, 512},
      {512, 256, 256}, {512, 1024, 16}, {512, 16, 1024}, {1024, 1024, 1024}};
  for (const auto &g : grid)
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        shapes.push_back({g[0], g[1], g[2], ta, tb});
  // The zoo's vs-pytorch sizes: rnnlm's decoder, BERT's feed-forward.
  shapes.push_back({160, 2000, 256, false, false});
  shapes.push_back({160, 256, 2000, false, true});
  shapes.push_back({256, 2000, 160, true, false});
  shapes.push_back({512, 1024, 256, false, false});

  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::printf("| m | n | k | A | B | OpenBLAS ms | oneDNN ms | soaprt ms | "
              "soaprt / faster library |\n| --- | --- | --- | --- | --- | --- "
              "| --- | --- | --- |\n");
  double totalBest = 0, totalRuntime = 0;
  for (const Shape &s : shapes) {
    std::vector<float> a(s.m * s.k), b(s.k * s.n), c(s.m * s.n, 0.0f);
    for (float &x : a)
      x = dist(rng);
    for (float &x : b)
      x = dist(rng);
    int64_t lda = s.transA ? s.m : s.k, ldb = s.transB ? s.k : s.n;
    double blas = fastest(repeats, [&] {
      cblas_sgemm(CblasRowMajor, s.transA ? CblasTrans : CblasNoTrans,
                  s.transB ? CblasTrans : CblasNoTrans, s.m, s.n, s.k, 1.0f,
                  a.data(), lda, b.data(), ldb, 1.0f, c.data(), s.n);
    });
    double dnnl = fastest(repeats, [&] {
      dnnl_sgemm(s.transA ? 'T' : 'N', s.transB ? 'T' : 'N', s.m, s.n, s.k,
                 1.0f, a.data(), lda, b.data(), ldb, 1.0f, c.data(), s.n);
    });
    // soaprt's strides: (row, column) of each operand as stored.
    int64_t am = s.transA ? 1 : s.k, ak = s.transA ? s.m : 1;
    int64_t bk = s.transB ? 1 : s.n, bn = s.transB ? s.k : 1;
    double runtime = fastest(repeats, [&] {
      soaprt_matmul_f32(s.m, s.n, s.k, a.data(), am, ak, b.data(), bk, bn,
                        c.data(), s.n, 1, /*accumulate=*/1);
    });
    double best = std::min(blas, dnnl);
    totalBest += best;
    totalRuntime += runtime;
    std::printf(
        "| %lld | %lld | %lld | %s | %s | %.4f | %.4f | %.4f | %.2f |\n",
        (long long)s.m, (long long)s.n, (long long)s.k, s.transA ? "T" : "N",
        s.transB ? "T" : "N", blas, dnnl, runtime, runtime / best);
  }
  std::printf("\nSum over the shapes: soaprt %.3f ms, the faster library "
              "per shape %.3f ms (%.2f).\n",
              totalRuntime, totalBest, totalRuntime / totalBest);
  return 0;
}

//===- DnnlKernels.h - oneDNN kernels of libsoaprt -------------*- C++ -*-===//
//
// Private to the runtime: Kernels.cpp tries these before its own paths.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_RUNTIME_DNNLKERNELS_H
#define SOAP_RUNTIME_DNNLKERNELS_H

#include <array>
#include <cstdint>
#include <string>

namespace soaprt {

/// out[n,g,f,oh,ow] += sum_{c,kh,kw} in[n,g,c,sh*oh+dh*kh,sw*ow+dw*kw]
///                                   * filter[g,f,c,kh,kw]
/// with c and f one group's channels (g = 1: a plain convolution).
struct Conv2dShape {
  int64_t n, c, h, w, f, kh, kw, oh, ow, sh, sw, dh, dw;
  int64_t g = 1;
  /// Whether the sum is added to the output (linalg's semantics) or
  /// replaces it (the caller's output was about to be zero).
  bool accumulate = true;
};

/// The element strides of each operand's five dimensions, in the order of
/// Conv2dShape's indices: in {n, g, c, h, w}, filter {g, f, c, kh, kw},
/// out {n, g, f, oh, ow}.
struct Conv2dStrides {
  std::array<int64_t, 5> in, filter, out;
  /// Blocks of the filter's and the output's weights when they hold
  /// blocked weights (BlockedLayout.h; their strides are then those of the
  /// plain layout, and the group dimension has size 1), else 0.
  int64_t filterBlock = 0, outBlock = 0;
};

/// Where a stride-1 convolution's image may be nonzero: rows
/// offsets[0] + strides[0] * a (a < sizes[0]) and likewise columns; zero
/// everywhere else (the autodiff's input gradient, a convolution of the
/// output's adjoint spread into zeros).
struct Conv2dSpread {
  std::array<int64_t, 2> offsets, strides, sizes;
};

/// The rows and columns of the input the windows read: oneDNN's shapes
/// must agree exactly, and linalg allows an input larger than its windows
/// reach.
inline std::array<int64_t, 2> usedImage(const Conv2dShape &s) {
  return {s.sh * (s.oh - 1) + s.dh * (s.kh - 1) + 1,
          s.sw * (s.ow - 1) + s.dw * (s.kw - 1) + 1};
}

/// Whether a convolution is grouped with few output channels per group (a
/// depthwise one, or a depthwise filter's gradient): the caller's direct
/// loops (Kernels.cpp) run those that oneDNN would run in its generic
/// im2col or reference kernels, faster.
inline bool narrowGroups(const Conv2dShape &s) { return s.g > 1 && s.f <= 8; }

/// Sets the convolution's output (`strides` of its n, g, f, oh, ow) to
/// zero.
template <typename T>
void zeroOutput(const Conv2dShape &s, const std::array<int64_t, 5> &strides,
                T *out) {
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t g = 0; g < s.g; ++g)
      for (int64_t f = 0; f < s.f; ++f)
        for (int64_t y = 0; y < s.oh; ++y)
          for (int64_t x = 0; x < s.ow; ++x)
            out[n * strides[0] + g * strides[1] + f * strides[2] +
                y * strides[3] + x * strides[4]] = T(0);
}

/// Whether oneDNN runs the runtime's convolutions (SOAP_DNNL=0: no).
bool dnnlEnabled();

/// Runs the convolution through oneDNN; false (nothing written) when
/// oneDNN is off or refuses it.
bool dnnlConv2d(const Conv2dShape &shape, const Conv2dStrides &strides,
                const float *in, const float *filter, float *out);

/// The convolution of a spread image through oneDNN's backward-data
/// convolution of its points (`points`, strides.in being theirs: {n, g, c}
/// then the two spatial dimensions of the points), which multiplies none
/// of the zeros; false (nothing written) when oneDNN is off or refuses it.
/// A filter with negative window strides (pointing at its last element
/// there) is read without a copy.
bool dnnlConv2dSpread(const Conv2dShape &shape, const Conv2dStrides &strides,
                      const Conv2dSpread &spread, const float *points,
                      const float *filter, float *out);

/// oneDNN's name (impl_info_str) for the kernel of the last convolution
/// dnnlConv2d or dnnlConv2dSpread ran on this thread ("jit_wino_4x3:...",
/// "jit:avx512_core", ...); empty before the first.
const std::string &dnnlLastConvImplementation();

/// C += op(A) op(B) (C = op(A) op(B) without `accumulate`) for row-major
/// f32 matrices (op: transposed or not, as BLAS's sgemm) through oneDNN's
/// sgemm, where oneDNN is on and is the faster library for the shape
/// (dnnlGemmPreferred); false (nothing written) otherwise.
bool dnnlSgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
               const float *a, int64_t lda, const float *b, int64_t ldb,
               float *c, int64_t ldc, bool accumulate);

/// Whether oneDNN's sgemm is expected to beat OpenBLAS's on the shape
/// (BLAS's row-major arguments): the rule measured by soap-gemm-bench
/// (bench/GemmBench.cpp) on AMD EPYC (znver4), one thread. SOAP_GEMM=dnnl
/// or SOAP_GEMM=openblas forces one library.
bool dnnlGemmPreferred(bool transA, bool transB, int64_t m, int64_t n,
                       int64_t k);

} // namespace soaprt

#endif // SOAP_RUNTIME_DNNLKERNELS_H

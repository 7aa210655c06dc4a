//===- DnnlConv.h - what libsoaprt's oneDNN convolutions share --*- C++ -*-===//
//
// Private to the runtime: a convolution built once per process (the
// primitive, the reorders around it, the caller's buffers bound) and the
// helpers that DnnlKernels.cpp (the forward and weight-gradient views) and
// DnnlSpread.cpp (data gradients: convolutions of a spread image) both
// build with.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_RUNTIME_DNNLCONV_H
#define SOAP_RUNTIME_DNNLCONV_H

#include "DnnlKernels.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <array>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace soaprt::dnnlconv {

struct Engine {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
};

/// oneDNN's engine and stream, made once (oneDNN's threads: as many as
/// OpenBLAS uses unless OMP_NUM_THREADS says).
Engine &engine();

/// One convolution, built: the primitive, the reorders around it and the
/// scratch memory of oneDNN's layouts. `userIn`, `userFilter` and
/// `userOut` are the caller's buffers; `args` binds the primitive's
/// arguments to them or to scratch in oneDNN's layouts, which `in` fills
/// (reorders from the caller's buffers) and `out` drains (a reorder that
/// adds into the caller's output).
struct Conv {
  dnnl::memory userIn, userFilter, userOut;
  /// The spread view's filter, flipped back before each run (userFilter
  /// reads it).
  std::vector<float> unflipped;
  std::vector<std::pair<dnnl::reorder, std::pair<dnnl::memory, dnnl::memory>>>
      in;
  std::optional<std::pair<dnnl::reorder, dnnl::memory>> out;
  dnnl::primitive primitive;
  std::unordered_map<int, dnnl::memory> args;
  /// The implementation oneDNN picked (its impl_info_str).
  std::string impl;
};

using dims = dnnl::memory::dims;

/// The caller's memory of `shape` at `strides` (its handle set per run).
dnnl::memory userMemory(const dims &shape, const dims &strides,
                        dnnl::engine &eng);
/// `shape` in whatever layout oneDNN picks.
dnnl::memory::desc anyLayout(const dims &shape);
/// Whether the environment variable `name` is set to `value` (the
/// switches that measure one kernel choice against another).
bool envIs(const char *name, const char *value);

/// A view oneDNN cannot express on the caller's buffers (no copy is made
/// to make one): the other view, or the caller's path, runs it.
struct Unexpressible {};

/// The caller's operand of four dimensions `shape` (no groups) at
/// `strides`, or, with `block` > 0, holding blocked weights in oneDNN's
/// layout of them (throws Unexpressible where it cannot).
dnnl::memory weightsMemory(const dims &shape, const dims &strides,
                           int64_t block, dnnl::engine &eng);
/// Binds the primitive's input `arg` (layout `desc`) to the caller's
/// `user` memory, through a reorder into scratch where needed.
void bindInput(Conv &conv, int arg, const dnnl::memory::desc &desc,
               const dnnl::memory &user, dnnl::engine &eng);
/// Binds the primitive's output `arg` (layout `desc`) to the caller's
/// output, directly or through scratch and a reorder that adds to it
/// (`accumulate`) or copies over it.
void bindOutput(Conv &conv, int arg, const dnnl::memory::desc &desc,
                bool primitiveAdds, bool accumulate, dnnl::engine &eng);
/// The stride of oneDNN's channel dimension over `outer` groups of `inner`
/// channels (throws Unexpressible where the groups do not follow each
/// other in memory).
int64_t mergedStride(int64_t outer, int64_t outerStride, int64_t inner,
                     int64_t innerStride);
/// `perGroup` with `groupEntry` before it when there are groups (g > 1).
dims withGroups(int64_t g, int64_t groupEntry, dims perGroup);
/// Whether Winograd's algorithm is worth trying (DnnlKernels.cpp says
/// when).
bool winogradWorth(const dims &window, const dims &strides,
                   const dims &dilations, int64_t groups, const dims &out,
                   int64_t channels);

/// What `build(algorithm)` builds with Winograd's algorithm where it is
/// `worth` it and oneDNN has a kernel for it, else with the direct one.
template <typename Build> auto preferringWinograd(bool worth, Build build) {
  if (worth) {
    try {
      return build(dnnl::algorithm::convolution_winograd);
    } catch (const dnnl::error &) {
    }
  }
  return build(dnnl::algorithm::convolution_direct);
}

/// The forward convolution a backward primitive is built against (oneDNN
/// picks the backward kernels to match it and its `algorithm`).
dnnl::convolution_forward::primitive_desc
trainingHint(dnnl::algorithm algorithm, const dims &src, const dims &weights,
             const dims &dst, const dims &strides, const dims &dilations,
             const dims &padLeft, const dims &padRight);

/// Rows and columns of zeros around the image that oneDNN adds itself.
struct Padding {
  dims left = {0, 0}, right = {0, 0};
};

/// The convolution in the view it looks like, else in the other; nullptr
/// when oneDNN takes neither. Its image is `image` rows and columns (by
/// default what the windows read) inside `padding`.
std::unique_ptr<Conv>
build(const Conv2dShape &s, const Conv2dStrides &st,
      std::optional<std::array<int64_t, 2>> image = std::nullopt,
      const Padding &padding = {});

/// What `builder` builds; nullptr where oneDNN refuses it or cannot
/// express it on the caller's strides.
template <typename Builder> std::unique_ptr<Conv> orNull(Builder &&builder) {
  try {
    return builder();
  } catch (const dnnl::error &) {
  } catch (const Unexpressible &) {
  }
  return nullptr;
}

/// Runs a built convolution on the caller's buffers.
void run(Conv &conv, const float *in, const float *filter, float *out);

/// The strides oneDNN gets: positive ones for dimensions of size 1; false
/// when a stride is still not positive. The image is `inSizes` ({H, W};
/// by default what the windows read).
bool positiveStrides(const Conv2dShape &s, const Conv2dStrides &given,
                     Conv2dStrides &st,
                     std::optional<std::array<int64_t, 2>> inSizes = {});

/// Everything that tells two convolutions' primitives apart.
template <size_t Extra>
std::array<int64_t, 32 + Extra> keyOf(const Conv2dShape &s,
                                      const Conv2dStrides &st,
                                      const std::array<int64_t, Extra> &extra) {
  std::array<int64_t, 32 + Extra> key;
  auto at = key.begin();
  for (int64_t v : {s.n, s.c, s.h, s.w, s.f, s.kh, s.kw, s.oh, s.ow, s.sh, s.sw,
                    s.dh, s.dw, s.g})
    *at++ = v;
  for (const std::array<int64_t, 5> *strides : {&st.in, &st.filter, &st.out})
    at = std::copy(strides->begin(), strides->end(), at);
  for (int64_t v : {int64_t(s.accumulate), st.filterBlock, st.outBlock})
    *at++ = v;
  std::copy(extra.begin(), extra.end(), at);
  return key;
}

} // namespace soaprt::dnnlconv

#endif // SOAP_RUNTIME_DNNLCONV_H

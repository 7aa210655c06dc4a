//===- DnnlKernels.cpp - oneDNN convolutions for generated code ----------===//
//
// f32 NCHW convolutions through oneDNN (Debian's libdnnl): the operands
// keep the strides generated code passes; oneDNN picks its own (blocked)
// layouts for the computation, and reorders copy in and out of them. The
// result is added to the output, as linalg's convolutions accumulate.
// The autodiff's filter gradient, conv(x^T, dy^T), runs as oneDNN's
// backward-weights convolution on the same buffers (the roles swap, see
// buildAsWeightGradient), which is up to 2.8x faster than oneDNN's forward
// kernels on such shapes (looksLikeWeightGradient).
//
// oneDNN sums in another order than im2col + GEMM: results agree to about
// 1e-6 relative (test/unit/CpuKernelsTest.cpp), not bitwise.
//
// Building a primitive compiles a kernel, so each distinct convolution
// (sizes, window and strides of its operands) is built once per process
// and kept. oneDNN's threads: OMP_NUM_THREADS when it is set, otherwise as
// many as OpenBLAS uses (OPENBLAS_NUM_THREADS=1 gives one thread to both).
// SOAP_DNNL=0 turns oneDNN off: convolutions then take the im2col path
// (Kernels.cpp), which is how the two are measured against each other.
//
//===----------------------------------------------------------------------===//

#include "DnnlKernels.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <array>
#include <cstdlib>
#include <map>
#include <memory>
#include <omp.h>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

extern "C" int openblas_get_num_threads(void);

namespace soaprt {

namespace {

using Key = std::array<int64_t, 25>;

struct Engine {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
};

/// One convolution, built: the primitive, the reorders around it and the
/// scratch memory of oneDNN's layouts. `userIn`, `userFilter` and
/// `userOut` are the caller's buffers; `args` binds the primitive's
/// arguments to them or to scratch in oneDNN's layouts, which `in` fills
/// (reorders from the caller's buffers) and `out` drains (a reorder that
/// adds into the caller's output).
struct Conv {
  dnnl::memory userIn, userFilter, userOut;
  std::vector<std::pair<dnnl::reorder, std::pair<dnnl::memory, dnnl::memory>>>
      in;
  std::optional<std::pair<dnnl::reorder, dnnl::memory>> out;
  dnnl::primitive primitive;
  std::unordered_map<int, dnnl::memory> args;
};

Engine &engine() {
  static Engine *instance = [] {
    if (!std::getenv("OMP_NUM_THREADS")) {
      int threads = openblas_get_num_threads();
      omp_set_num_threads(threads > 0 ? threads : 1);
    }
    return new Engine();
  }();
  return *instance;
}

using dims = dnnl::memory::dims;

dnnl::memory userMemory(const dims &shape, const dims &strides,
                        dnnl::engine &eng) {
  return dnnl::memory(
      dnnl::memory::desc(shape, dnnl::memory::data_type::f32, strides), eng,
      DNNL_MEMORY_NONE);
}

dnnl::memory::desc anyLayout(const dims &shape) {
  return dnnl::memory::desc(shape, dnnl::memory::data_type::f32,
                            dnnl::memory::format_tag::any);
}

/// Binds the primitive's input `arg` (layout `desc`) to the caller's
/// `user` memory, through a reorder into scratch when the layouts differ.
void bindInput(Conv &conv, int arg, const dnnl::memory::desc &desc,
               const dnnl::memory &user, dnnl::engine &eng) {
  if (desc == user.get_desc()) {
    conv.args[arg] = user;
    return;
  }
  dnnl::memory scratch(desc, eng);
  conv.in.push_back({dnnl::reorder(user, scratch), {user, scratch}});
  conv.args[arg] = scratch;
}

/// An attribute whose post-op adds the result to what the destination
/// holds (linalg's convolutions accumulate into their output).
dnnl::primitive_attr accumulating() {
  dnnl::primitive_attr attr;
  dnnl::post_ops ops;
  ops.append_sum(1.0f);
  attr.set_post_ops(ops);
  return attr;
}

/// Binds the primitive's output `arg` (layout `desc`) to the caller's
/// output: written there directly when `inPlace` (the primitive adds), else
/// into scratch that a reorder adds to the caller's output.
void bindOutput(Conv &conv, int arg, const dnnl::memory::desc &desc,
                bool inPlace, dnnl::engine &eng) {
  if (inPlace) {
    conv.args[arg] = conv.userOut;
    return;
  }
  dnnl::memory scratch(desc, eng);
  conv.out = {dnnl::reorder(dnnl::reorder::primitive_desc(scratch, conv.userOut,
                                                          accumulating())),
              scratch};
  conv.args[arg] = scratch;
}

/// The rows and columns the windows read: oneDNN's shapes must agree
/// exactly, and linalg allows an input larger than its windows reach.
std::array<int64_t, 2> usedImage(const Conv2dShape &s) {
  return {s.sh * (s.oh - 1) + s.dh * (s.kh - 1) + 1,
          s.sw * (s.ow - 1) + s.dw * (s.kw - 1) + 1};
}

/// The convolution as oneDNN's forward convolution.
std::unique_ptr<Conv> buildForward(const Conv2dShape &s,
                                   const Conv2dStrides &st) {
  Engine &e = engine();
  auto [usedH, usedW] = usedImage(s);
  auto conv = std::make_unique<Conv>();
  dims in = {s.n, s.c, usedH, usedW}, filter = {s.f, s.c, s.kh, s.kw},
       out = {s.n, s.f, s.oh, s.ow};
  conv->userIn =
      userMemory(in, {st.in[0], st.in[1], st.in[2], st.in[3]}, e.engine);
  conv->userFilter = userMemory(
      filter, {st.filter[0], st.filter[1], st.filter[2], st.filter[3]},
      e.engine);
  conv->userOut =
      userMemory(out, {st.out[0], st.out[1], st.out[2], st.out[3]}, e.engine);
  dnnl::convolution_forward::desc desc(
      dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
      anyLayout(in), anyLayout(filter), anyLayout(out), {s.sh, s.sw},
      {s.dh - 1, s.dw - 1}, {0, 0}, {0, 0});
  dnnl::convolution_forward::primitive_desc pd(desc, e.engine);
  // The output accumulates: in place through a sum post-op when oneDNN
  // writes the caller's layout, else through the reorder that adds.
  bool inPlace = pd.dst_desc() == conv->userOut.get_desc();
  if (inPlace)
    pd = dnnl::convolution_forward::primitive_desc(desc, accumulating(),
                                                   e.engine);
  bindInput(*conv, DNNL_ARG_SRC, pd.src_desc(), conv->userIn, e.engine);
  bindInput(*conv, DNNL_ARG_WEIGHTS, pd.weights_desc(), conv->userFilter,
            e.engine);
  bindOutput(*conv, DNNL_ARG_DST, pd.dst_desc(), inPlace, e.engine);
  conv->primitive = dnnl::convolution_forward(pd);
  return conv;
}

/// The same sum as a weight gradient, oneDNN's backward-weights
/// convolution: the caller's batch is its input channels, its input
/// channels the batch, its filter the output's gradient (window = the
/// gradient's image) and its output the filter's gradient (stride and
/// dilation swap). This is the form the autodiff gives a filter gradient,
/// conv(x^T, dy^T): a window as large as the forward output and an
/// output as small as the forward filter, which oneDNN's forward kernels
/// handle poorly.
std::unique_ptr<Conv> buildAsWeightGradient(const Conv2dShape &s,
                                            const Conv2dStrides &st) {
  Engine &e = engine();
  auto [usedH, usedW] = usedImage(s);
  auto conv = std::make_unique<Conv>();
  // In oneDNN's roles: N = s.c, C = s.n, F = s.f, OH = s.kh, KH = s.oh.
  dims src = {s.c, s.n, usedH, usedW}, diffDst = {s.c, s.f, s.kh, s.kw},
       diffWeights = {s.f, s.n, s.oh, s.ow};
  conv->userIn =
      userMemory(src, {st.in[1], st.in[0], st.in[2], st.in[3]}, e.engine);
  conv->userFilter = userMemory(
      diffDst, {st.filter[1], st.filter[0], st.filter[2], st.filter[3]},
      e.engine);
  conv->userOut = userMemory(
      diffWeights, {st.out[1], st.out[0], st.out[2], st.out[3]}, e.engine);
  dims strides = {s.dh, s.dw}, dilations = {s.sh - 1, s.sw - 1},
       padding = {0, 0};
  dnnl::convolution_forward::desc forward(
      dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
      anyLayout(src), anyLayout(diffWeights), anyLayout(diffDst), strides,
      dilations, padding, padding);
  dnnl::convolution_forward::primitive_desc hint(forward, e.engine);
  dnnl::convolution_backward_weights::desc desc(
      dnnl::algorithm::convolution_direct, anyLayout(src),
      anyLayout(diffWeights), anyLayout(diffDst), strides, dilations, padding,
      padding);
  dnnl::convolution_backward_weights::primitive_desc pd(desc, e.engine, hint);
  bindInput(*conv, DNNL_ARG_SRC, pd.src_desc(), conv->userIn, e.engine);
  bindInput(*conv, DNNL_ARG_DIFF_DST, pd.diff_dst_desc(), conv->userFilter,
            e.engine);
  // oneDNN overwrites a weight gradient: always through scratch and the
  // reorder that adds.
  bindOutput(*conv, DNNL_ARG_DIFF_WEIGHTS, pd.diff_weights_desc(),
             /*inPlace=*/false, e.engine);
  conv->primitive = dnnl::convolution_backward_weights(pd);
  return conv;
}

/// Whether the convolution looks like a weight gradient: a filter-sized
/// output (at most 8x8) and fewer channels summed than images in the batch
/// (the gradient sums over the forward batch, typically smaller than the
/// channel count its batch stands for). Measured on ResNet-18's
/// convolutions at batch 8 (bench/cpu-kernels.sh): the weights view runs
/// such shapes 1.3-2.8x faster, the forward view the forward and data
/// gradient convolutions 1.6-3.5x faster. SOAP_DNNL_VIEW=forward or
/// =weights forces one view (to measure them against each other).
bool looksLikeWeightGradient(const Conv2dShape &s) {
  static const char *forced = std::getenv("SOAP_DNNL_VIEW");
  if (forced && std::string(forced) == "forward")
    return false;
  if (forced && std::string(forced) == "weights")
    return true;
  return s.oh * s.ow <= 64 && s.c < s.n;
}

std::unique_ptr<Conv> build(const Conv2dShape &s, const Conv2dStrides &st) {
  if (looksLikeWeightGradient(s)) {
    try {
      return buildAsWeightGradient(s, st);
    } catch (const dnnl::error &) {
      // Refused in this view: the forward one may still take it.
    }
  }
  return buildForward(s, st);
}

} // namespace

bool dnnlEnabled() {
  static bool enabled = [] {
    const char *flag = std::getenv("SOAP_DNNL");
    return !(flag && std::string(flag) == "0");
  }();
  return enabled;
}

bool dnnlConv2d(const Conv2dShape &s, const Conv2dStrides &st, const float *in,
                const float *filter, float *out) {
  if (!dnnlEnabled())
    return false;
  for (const std::array<int64_t, 4> *strides : {&st.in, &st.filter, &st.out})
    for (int64_t stride : *strides)
      if (stride <= 0)
        return false;
  Key key = {s.n,  s.c,  s.h,  s.w,  s.f,  s.kh, s.kw, s.oh, s.ow,
             s.sh, s.sw, s.dh, s.dw, st.in[0], st.in[1], st.in[2], st.in[3],
             st.filter[0], st.filter[1], st.filter[2], st.filter[3],
             st.out[0], st.out[1], st.out[2], st.out[3]};
  // nullptr: oneDNN refused this convolution; the caller's path runs it.
  static std::map<Key, std::unique_ptr<Conv>> built;
  auto it = built.find(key);
  if (it == built.end()) {
    std::unique_ptr<Conv> conv;
    try {
      conv = build(s, st);
    } catch (const dnnl::error &) {
    }
    it = built.emplace(key, std::move(conv)).first;
  }
  Conv *conv = it->second.get();
  if (!conv)
    return false;
  dnnl::stream &stream = engine().stream;
  conv->userIn.set_data_handle(const_cast<float *>(in));
  conv->userFilter.set_data_handle(const_cast<float *>(filter));
  conv->userOut.set_data_handle(out);
  for (auto &[reorder, memories] : conv->in)
    reorder.execute(stream, memories.first, memories.second);
  conv->primitive.execute(stream, conv->args);
  if (conv->out)
    conv->out->first.execute(stream, conv->out->second, conv->userOut);
  stream.wait();
  return true;
}

} // namespace soaprt

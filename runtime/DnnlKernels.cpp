//===- DnnlKernels.cpp - oneDNN convolutions and GEMMs for generated code -===//
//
// f32 2-D convolutions, plain, grouped and depthwise, through oneDNN
// (Debian's libdnnl): the operands keep the strides generated code passes;
// oneDNN picks its own (blocked) layouts for the computation, and reorders copy
// in and out of them. The result is added to the output, as linalg's
// convolutions accumulate. The autodiff's filter gradient, conv(x^T, dy^T),
// runs as oneDNN's backward-weights convolution on the same buffers (the roles
// swap, see buildAsWeightGradient), which is up to 2.8x faster than oneDNN's
// forward kernels on such shapes (looksLikeWeightGradient); a depthwise
// filter's gradient runs only in that view. What oneDNN cannot express on the
// caller's strides (Unexpressible) or refuses falls back to the caller's
// path (Kernels.cpp: im2col and GEMM, one group at a time).
//
// A filter or weight gradient the caller keeps in oneDNN's blocked layout
// (Conv2dStrides' filterBlock/outBlock, BlockedLayout.h) is bound as that
// layout, and the primitive is built for it where oneDNN has a kernel for
// it (preferringLayout: its forward and backward-weights kernels on
// OIhw16i16o/OIhw8i8o), so it is read and written in place; the
// backward-data kernel reorders it into its own layout.
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
// Input gradients, convolutions of the output's adjoint spread into zeros,
// are in DnnlSpread.cpp; what both files build with is in DnnlConv.h.
//
// f32 matrix products run through oneDNN's sgemm on the shapes where it
// beats OpenBLAS's (dnnlGemmPreferred), through OpenBLAS on the others and
// with SOAP_DNNL=0. The two sum in different orders: a product's result
// does not depend on the run, only on its shape and operand layouts.
//
//===----------------------------------------------------------------------===//

#include "DnnlConv.h"

#include "BlockedLayout.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
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
namespace dnnlconv {

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

/// Whether the environment variable `name` is set to `value` (the
/// switches that measure one kernel choice against another).
bool envIs(const char *name, const char *value) {
  const char *flag = std::getenv(name);
  return flag && std::string(flag) == value;
}

/// Whether oneDNN's implementation `impl` is one of its generic kernels
/// (im2col and sgemm, or the reference loops) rather than one made for the
/// convolution's kind.
bool generic(const std::string &impl) {
  return impl.find("gemm") != std::string::npos || impl.rfind("ref", 0) == 0;
}

/// An image of `shape` (N, C, H, W) in oneDNN's layout of `block`
/// channels (nChw16c, nChw8c), or in the layout oneDNN picks (block 0).
dnnl::memory::desc channelBlocked(const dims &shape, int64_t block) {
  if (block == 16)
    return dnnl::memory::desc(shape, dnnl::memory::data_type::f32,
                              dnnl::memory::format_tag::aBcd16b);
  if (block == 8)
    return dnnl::memory::desc(shape, dnnl::memory::data_type::f32,
                              dnnl::memory::format_tag::aBcd8b);
  return anyLayout(shape);
}

/// Whether 1x1 convolutions (forward view) get their image and output in
/// channel blocks rather than the layout oneDNN picks, which is
/// channels-last (its brgconv_1x1 kernels): from the caller's NCHW
/// buffers, a reorder into channels-last transposes the whole image
/// (jit:uni, about 3x the time of one into channel blocks), and it made
/// the reorders around MobileNetV3-Small's 1x1 convolutions cost 23 ms of
/// a 70 ms step. SOAP_DNNL_POINTWISE=any leaves the choice to oneDNN (to
/// measure one against the other).
bool pointwiseBlocked() {
  static const bool blocked = !envIs("SOAP_DNNL_POINTWISE", "any");
  return blocked;
}

/// The caller's operand of four dimensions `shape` (no groups) at
/// `strides`, or, with `block` > 0, holding blocked weights
/// (BlockedLayout.h: the strides are the plain layout's) in oneDNN's
/// layout of them, OIhw<b>i<b>o, its first two dimensions swapped where
/// the operand's are.
dnnl::memory weightsMemory(const dims &shape, const dims &strides,
                           int64_t block, dnnl::engine &eng) {
  if (block == 0)
    return userMemory(shape, strides, eng);
  BlockedOperand operand;
  if (shape.size() != 4 || (block != 8 && block != 16) ||
      !blockedOperand({shape[0], shape[1], shape[2], shape[3]},
                      {strides[0], strides[1], strides[2], strides[3]},
                      operand) ||
      operand.offset != 0 || !blockable(operand.weights, block))
    throw Unexpressible();
  dnnl::memory::desc desc(dims(operand.weights.begin(), operand.weights.end()),
                          dnnl::memory::data_type::f32,
                          block == 16 ? dnnl::memory::format_tag::ABcd16b16a
                                      : dnnl::memory::format_tag::ABcd8b8a);
  if (operand.swapped)
    desc = desc.permute_axes({1, 0, 2, 3});
  return dnnl::memory(desc, eng, DNNL_MEMORY_NONE);
}

/// The primitive `make(layout)` builds with the layout of the caller's
/// blocked weights `user` where it has them (`blocked`) and oneDNN has a
/// kernel for that layout (not its reference one); else with the layout
/// oneDNN picks for `shape` (then a reorder converts).
template <typename Make>
auto preferringLayout(const dnnl::memory &user, bool blocked, const dims &shape,
                      Make make) {
  if (blocked) {
    try {
      auto pd = make(user.get_desc());
      if (std::string(pd.impl_info_str()).rfind("ref", 0) != 0)
        return pd;
    } catch (const dnnl::error &) {
    }
  }
  return make(anyLayout(shape));
}

/// Whether oneDNN's implementation `impl` wants its memory aligned to 64
/// bytes, which the caller's buffers need not be: oneDNN's Winograd
/// kernels crashed writing a weight gradient into a std::vector's buffer.
/// They get scratch memory for every argument.
bool alignedOnly(const std::string &impl) {
  return impl.find("wino") != std::string::npos;
}

/// Binds the primitive's input `arg` (layout `desc`) to the caller's
/// `user` memory, through a reorder into scratch when the layouts differ
/// (or the primitive wants aligned memory).
void bindInput(Conv &conv, int arg, const dnnl::memory::desc &desc,
               const dnnl::memory &user, dnnl::engine &eng) {
  if (desc == user.get_desc() && !alignedOnly(conv.impl)) {
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
/// output: written there directly when that has oneDNN's layout and the
/// primitive adds to what it holds (`primitiveAdds`) or the caller's output
/// is overwritten (not `accumulate`), else (or where the primitive wants
/// aligned memory) into scratch that a reorder adds to the caller's output
/// or copies over it.
void bindOutput(Conv &conv, int arg, const dnnl::memory::desc &desc,
                bool primitiveAdds, bool accumulate, dnnl::engine &eng) {
  if (desc == conv.userOut.get_desc() && (primitiveAdds || !accumulate) &&
      !alignedOnly(conv.impl)) {
    conv.args[arg] = conv.userOut;
    return;
  }
  dnnl::memory scratch(desc, eng);
  conv.out = {
      dnnl::reorder(accumulate
                        ? dnnl::reorder::primitive_desc(scratch, conv.userOut,
                                                        accumulating())
                        : dnnl::reorder::primitive_desc(scratch, conv.userOut)),
      scratch};
  conv.args[arg] = scratch;
}

/// The stride of oneDNN's channel dimension that runs over `outer` groups
/// of `inner` channels each (strides `outerStride`, `innerStride`): one
/// dimension only where the groups follow each other in memory.
int64_t mergedStride(int64_t outer, int64_t outerStride, int64_t inner,
                     int64_t innerStride) {
  if (outer == 1)
    return innerStride;
  if (inner == 1)
    return outerStride;
  if (outerStride != inner * innerStride)
    throw Unexpressible();
  return innerStride;
}

/// oneDNN's weights take a group dimension first only when there are
/// groups: `perGroup` ({F, C, KH, KW} or their strides) with `groupEntry`
/// (the group count, or the groups' stride) before it when g > 1.
dims withGroups(int64_t g, int64_t groupEntry, dims perGroup) {
  if (g > 1)
    perGroup.insert(perGroup.begin(), groupEntry);
  return perGroup;
}

/// Whether Winograd's algorithm (oneDNN's jit_wino_4x3 kernels, AVX-512
/// only) is worth trying for a convolution whose forward form has a
/// `window`, `strides`, `dilations` (oneDNN's: 0 is none), `groups`, an
/// output image `out` and `channels` (the fewer of its input and output
/// channels): a 3x3 window at stride 1, undilated, ungrouped, on an
/// output of at least 8x8 points, with at least 32 channels in and out
/// (SOAP_DNNL_WINOGRAD_MIN_CHANNELS). Below that the transforms cost more
/// than they save: a ResNet-18 of width 8 (8 to 64 channels, 16x16
/// images, batch 8) runs its step in 4.4 ms with Winograd wherever the
/// rest allows and 3.5 ms without; the 4-in, 8-out 3x3 convolution of a
/// channel split takes 123 us with it. Measured at batch 4 on one thread
/// (forward / data gradient / filter gradient, direct against Winograd,
/// ms): 64 channels on 56x56 10.3/8.3/8.7 against 3.1/3.0/3.4, 128 on
/// 28x28 7.8/7.8/8.2 against 3.4/3.4/3.3, 256 on 14x14 7.3/7.3/8.6
/// against 4.3/4.3/4.7, 256 on 10x10 3.6/3.6/4.1 against 3.0/3.0/2.8;
/// 512 on 7x7 is a draw (7.7/6.5/10.0 against 6.6/6.7/9.9; 64 MB more of
/// scratch in ResNet-18's step). Results differ from the direct
/// algorithm's by about 2e-6 of the largest output. SOAP_DNNL_WINOGRAD=0
/// turns it off (to measure one against the other).
bool winogradWorth(const dims &window, const dims &strides,
                   const dims &dilations, int64_t groups, const dims &out,
                   int64_t channels) {
  static const bool enabled = !envIs("SOAP_DNNL_WINOGRAD", "0");
  static const int64_t minChannels = [] {
    const char *value = std::getenv("SOAP_DNNL_WINOGRAD_MIN_CHANNELS");
    return value ? std::atoll(value) : 32;
  }();
  return enabled && window == dims{3, 3} && strides == dims{1, 1} &&
         dilations == dims{0, 0} && groups == 1 && out[0] >= 8 && out[1] >= 8 &&
         channels >= minChannels;
}

/// The forward convolution a backward primitive is built against (oneDNN
/// picks the backward kernels to match it and its `algorithm`).
dnnl::convolution_forward::primitive_desc
trainingHint(dnnl::algorithm algorithm, const dims &src, const dims &weights,
             const dims &dst, const dims &strides, const dims &dilations,
             const dims &padLeft, const dims &padRight) {
  dnnl::convolution_forward::desc forward(
      dnnl::prop_kind::forward_training, algorithm, anyLayout(src),
      anyLayout(weights), anyLayout(dst), strides, dilations, padLeft,
      padRight);
  return dnnl::convolution_forward::primitive_desc(forward, engine().engine);
}

/// The convolution as oneDNN's forward convolution: src {N, G*C, H, W}
/// (`image` rows and columns, by default what the windows read, inside
/// `padding`), weights {(G,) F, C, KH, KW}, dst {N, G*F, OH, OW}.
std::unique_ptr<Conv>
buildForward(const Conv2dShape &s, const Conv2dStrides &st,
             std::optional<std::array<int64_t, 2>> image = std::nullopt,
             const Padding &padding = {}) {
  Engine &e = engine();
  auto [usedH, usedW] = image ? *image : usedImage(s);
  auto conv = std::make_unique<Conv>();
  dims in = {s.n, s.g * s.c, usedH, usedW},
       filter = withGroups(s.g, s.g, {s.f, s.c, s.kh, s.kw}),
       out = {s.n, s.g * s.f, s.oh, s.ow};
  conv->userIn =
      userMemory(in,
                 {st.in[0], mergedStride(s.g, st.in[1], s.c, st.in[2]),
                  st.in[3], st.in[4]},
                 e.engine);
  if (s.g > 1 && (st.filterBlock || st.outBlock))
    throw Unexpressible();
  conv->userFilter = weightsMemory(
      filter,
      withGroups(s.g, st.filter[0],
                 {st.filter[1], st.filter[2], st.filter[3], st.filter[4]}),
      st.filterBlock, e.engine);
  conv->userOut =
      weightsMemory(out,
                    {st.out[0], mergedStride(s.g, st.out[1], s.f, st.out[2]),
                     st.out[3], st.out[4]},
                    st.outBlock, e.engine);
  // The image and output in `block` channels (0: oneDNN's choice).
  int64_t block = 0;
  dnnl::algorithm algorithm = dnnl::algorithm::convolution_direct;
  auto make = [&](const dnnl::memory::desc &weights,
                  const dnnl::primitive_attr &attr = {}) {
    // Inference would want Winograd's filter transformed ahead (oneDNN's
    // wino format), through a reorder that took 18 ms for a 256x256x3x3
    // filter; for training its kernels transform the blocked filter
    // themselves.
    dnnl::convolution_forward::desc desc(
        algorithm == dnnl::algorithm::convolution_winograd
            ? dnnl::prop_kind::forward_training
            : dnnl::prop_kind::forward_inference,
        algorithm, channelBlocked(in, block), weights,
        channelBlocked(out, block), {s.sh, s.sw}, {s.dh - 1, s.dw - 1},
        padding.left, padding.right);
    return dnnl::convolution_forward::primitive_desc(desc, attr, e.engine);
  };
  auto choose = [&] {
    return preferringLayout(
        conv->userFilter, st.filterBlock != 0, filter,
        [&](const dnnl::memory::desc &weights) { return make(weights); });
  };
  std::optional<dnnl::convolution_forward::primitive_desc> chosen;
  if (s.kh == 1 && s.kw == 1 && pointwiseBlocked())
    for (int64_t lanes : {16, 8}) {
      block = lanes;
      try {
        chosen = choose();
        if (!generic(chosen->impl_info_str()))
          break;
      } catch (const dnnl::error &) {
      }
      chosen.reset();
    }
  if (!chosen) {
    block = 0;
    chosen = preferringWinograd(winogradWorth({s.kh, s.kw}, {s.sh, s.sw},
                                              {s.dh - 1, s.dw - 1}, s.g,
                                              {s.oh, s.ow}, std::min(s.c, s.f)),
                                [&](dnnl::algorithm a) {
                                  algorithm = a;
                                  return choose();
                                });
  }
  auto pd = *chosen;
  // The output accumulates (unless the caller overwrites it): in place
  // through a sum post-op when oneDNN writes the caller's layout in the
  // caller's memory, else through the reorder that adds.
  bool inPlace = pd.dst_desc() == conv->userOut.get_desc() &&
                 !alignedOnly(pd.impl_info_str());
  if (inPlace && s.accumulate)
    pd = make(pd.weights_desc(), accumulating());
  conv->impl = pd.impl_info_str();
  bindInput(*conv, DNNL_ARG_SRC, pd.src_desc(), conv->userIn, e.engine);
  bindInput(*conv, DNNL_ARG_WEIGHTS, pd.weights_desc(), conv->userFilter,
            e.engine);
  bindOutput(*conv, DNNL_ARG_DST, pd.dst_desc(), /*primitiveAdds=*/true,
             s.accumulate, e.engine);
  conv->primitive = dnnl::convolution_forward(pd);
  return conv;
}

/// The same sum as a weight gradient, oneDNN's backward-weights
/// convolution: the caller's batch is its input channels, its input
/// channels the batch, its filter the output's gradient (window = the
/// gradient's image) and its output the filter's gradient (stride and
/// dilation swap); groups stay groups. This is the form the autodiff gives
/// a filter gradient, conv(x^T, dy^T): a window as large as the forward
/// output and an output as small as the forward filter, which oneDNN's
/// forward kernels handle poorly. A depthwise filter's gradient (no batch,
/// one channel per group) has only this view: its groups do not follow
/// each other in the forward view's channel dimension.
std::unique_ptr<Conv> buildAsWeightGradient(
    const Conv2dShape &s, const Conv2dStrides &st,
    std::optional<std::array<int64_t, 2>> image = std::nullopt,
    const Padding &padding = {}) {
  Engine &e = engine();
  auto [usedH, usedW] = image ? *image : usedImage(s);
  auto conv = std::make_unique<Conv>();
  // In oneDNN's roles: N = s.c, C = s.g * s.n, F = s.f, OH = s.kh,
  // KH = s.oh.
  dims src = {s.c, s.g * s.n, usedH, usedW},
       diffDst = {s.c, s.g * s.f, s.kh, s.kw},
       diffWeights = withGroups(s.g, s.g, {s.f, s.n, s.oh, s.ow});
  conv->userIn =
      userMemory(src,
                 {st.in[2], mergedStride(s.g, st.in[1], s.n, st.in[0]),
                  st.in[3], st.in[4]},
                 e.engine);
  if (s.g > 1 && (st.filterBlock || st.outBlock))
    throw Unexpressible();
  conv->userFilter = weightsMemory(
      diffDst,
      {st.filter[2], mergedStride(s.g, st.filter[0], s.f, st.filter[1]),
       st.filter[3], st.filter[4]},
      st.filterBlock, e.engine);
  conv->userOut = weightsMemory(
      diffWeights,
      withGroups(s.g, st.out[1], {st.out[2], st.out[0], st.out[3], st.out[4]}),
      st.outBlock, e.engine);
  dims strides = {s.dh, s.dw}, dilations = {s.sh - 1, s.sw - 1};
  auto pd = preferringWinograd(
      // The forward convolution's input channels are this one's images.
      winogradWorth({s.oh, s.ow}, strides, dilations, s.g, {s.kh, s.kw},
                    std::min(s.n, s.f)),
      [&](dnnl::algorithm algorithm) {
        auto hint = trainingHint(algorithm, src, diffWeights, diffDst, strides,
                                 dilations, padding.left, padding.right);
        return preferringLayout(
            conv->userOut, st.outBlock != 0, diffWeights,
            [&](const dnnl::memory::desc &weights) {
              dnnl::convolution_backward_weights::desc desc(
                  algorithm, anyLayout(src), weights, anyLayout(diffDst),
                  strides, dilations, padding.left, padding.right);
              return dnnl::convolution_backward_weights::primitive_desc(
                  desc, e.engine, hint);
            });
      });
  conv->impl = pd.impl_info_str();
  bindInput(*conv, DNNL_ARG_SRC, pd.src_desc(), conv->userIn, e.engine);
  bindInput(*conv, DNNL_ARG_DIFF_DST, pd.diff_dst_desc(), conv->userFilter,
            e.engine);
  // oneDNN overwrites a weight gradient: through scratch and the reorder
  // that adds, unless the caller overwrites too.
  bindOutput(*conv, DNNL_ARG_DIFF_WEIGHTS, pd.diff_weights_desc(),
             /*primitiveAdds=*/false, s.accumulate, e.engine);
  conv->primitive = dnnl::convolution_backward_weights(pd);
  return conv;
}

/// Whether the convolution looks like a weight gradient: a filter-sized
/// output (at most 8x8) and fewer channels summed than images in the batch
/// (the gradient sums over the forward batch, typically smaller than the
/// channel count its batch stands for) or a window larger than the output
/// (the window is the forward output's image: the first layer's gradient,
/// whose three colour channels are fewer than the images of a batch of 4).
/// Measured on ResNet-18's convolutions at batch 8 (bench/cpu-kernels.sh):
/// the weights view runs such shapes 1.3-2.8x faster, the forward view the
/// forward and data gradient convolutions 1.6-3.5x faster; the first
/// layers' filter gradients of torchvision's ResNet-18 and SqueezeNet 1.1
/// at batch 4 run 1.4x and 2x faster in the weights view.
/// SOAP_DNNL_VIEW=forward or =weights forces one view (to measure them
/// against each other).
bool looksLikeWeightGradient(const Conv2dShape &s) {
  static const bool forward = envIs("SOAP_DNNL_VIEW", "forward"),
                    weights = envIs("SOAP_DNNL_VIEW", "weights");
  if (forward)
    return false;
  if (weights)
    return true;
  return s.oh * s.ow <= 64 && (s.c < s.n || s.kh * s.kw > s.oh * s.ow);
}

/// The convolution in the view it looks like, else in the other; nullptr
/// when oneDNN takes neither. Its image is `image` rows and columns (by
/// default what the windows read) inside `padding`.
std::unique_ptr<Conv> build(const Conv2dShape &s, const Conv2dStrides &st,
                            std::optional<std::array<int64_t, 2>> image,
                            const Padding &padding) {
  using Builder = std::unique_ptr<Conv> (*)(
      const Conv2dShape &, const Conv2dStrides &,
      std::optional<std::array<int64_t, 2>>, const Padding &);
  Builder views[2] = {buildForward, buildAsWeightGradient};
  if (looksLikeWeightGradient(s))
    std::swap(views[0], views[1]);
  for (Builder view : views)
    if (std::unique_ptr<Conv> conv =
            orNull([&] { return view(s, st, image, padding); }))
      if (!narrowGroups(s) || !generic(conv->impl))
        return conv;
  return nullptr;
}

/// The strides with a dimension of size 1 given the stride past the whole
/// operand (any stride reads the same element; oneDNN wants positive ones
/// that do not overlap).
template <size_t N>
std::array<int64_t, N> sizeOneStrides(std::array<int64_t, N> strides,
                                      const std::array<int64_t, N> &sizes) {
  int64_t past = 1;
  for (size_t i = 0; i < N; ++i)
    if (sizes[i] > 1)
      past = std::max(past, sizes[i] * strides[i]);
  for (size_t i = 0; i < N; ++i)
    if (sizes[i] == 1)
      strides[i] = past;
  return strides;
}

/// The convolution run last on this thread (built convolutions live as
/// long as the process): dnnlLastConvImplementation's answer.
thread_local const Conv *lastRun = nullptr;

/// Runs a built convolution on the caller's buffers.
void run(Conv &conv, const float *in, const float *filter, float *out) {
  dnnl::stream &stream = engine().stream;
  lastRun = &conv;
  conv.userIn.set_data_handle(const_cast<float *>(in));
  if (conv.unflipped.empty())
    conv.userFilter.set_data_handle(const_cast<float *>(filter));
  conv.userOut.set_data_handle(out);
  for (auto &[reorder, memories] : conv.in)
    reorder.execute(stream, memories.first, memories.second);
  conv.primitive.execute(stream, conv.args);
  if (conv.out)
    conv.out->first.execute(stream, conv.out->second, conv.userOut);
  stream.wait();
}

/// The strides oneDNN gets: positive ones for dimensions of size 1
/// (sizeOneStrides); false when a stride is still not positive. The image
/// is `inSizes` ({H, W}; by default what the windows read).
bool positiveStrides(const Conv2dShape &s, const Conv2dStrides &given,
                     Conv2dStrides &st,
                     std::optional<std::array<int64_t, 2>> inSizes) {
  auto [usedH, usedW] = inSizes ? *inSizes : usedImage(s);
  st = given;
  st.in = sizeOneStrides(given.in, {s.n, s.g, s.c, usedH, usedW});
  st.filter = sizeOneStrides(given.filter, {s.g, s.f, s.c, s.kh, s.kw});
  st.out = sizeOneStrides(given.out, {s.n, s.g, s.f, s.oh, s.ow});
  for (const std::array<int64_t, 5> *strides : {&st.in, &st.filter, &st.out})
    for (int64_t stride : *strides)
      if (stride <= 0)
        return false;
  return true;
}

} // namespace dnnlconv

using namespace dnnlconv;

const std::string &dnnlLastConvImplementation() {
  static const std::string none;
  return lastRun ? lastRun->impl : none;
}

bool dnnlEnabled() {
  static const bool enabled = !envIs("SOAP_DNNL", "0");
  return enabled;
}

bool dnnlGemmPreferred(bool transA, bool transB, int64_t m, int64_t n,
                       int64_t k) {
  static const int forced = envIs("SOAP_GEMM", "dnnl")       ? 1
                            : envIs("SOAP_GEMM", "openblas") ? 0
                                                             : -1;
  if (forced >= 0)
    return forced == 1;
  // Measured by soap-gemm-bench (bench/GemmBench.cpp), one thread: oneDNN
  // is 1.05-1.1x faster on large products and 1.3-2.7x on few-row products
  // (batch-8 classifiers, LSTM steps) with B read as stored, and 1.3x with
  // a short k; it loses on small products (call overhead), with B
  // transposed on more than 8 rows (up to 1.25x), and with both transposed
  // (up to 6x).
  if (m * n * k <= (int64_t(1) << 19))
    return false;
  if (!transB || k <= 64)
    return true;
  return !transA && m <= 8;
}

bool dnnlSgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
               const float *a, int64_t lda, const float *b, int64_t ldb,
               float *c, int64_t ldc, bool accumulate) {
  if (!dnnlEnabled() || !dnnlGemmPreferred(transA, transB, m, n, k))
    return false;
  (void)engine(); // oneDNN's thread count, set once
  return dnnl_sgemm(transA ? 'T' : 'N', transB ? 'T' : 'N', m, n, k, 1.0f, a,
                    lda, b, ldb, accumulate ? 1.0f : 0.0f, c,
                    ldc) == dnnl_success;
}

bool dnnlConv2d(const Conv2dShape &s, const Conv2dStrides &given,
                const float *in, const float *filter, float *out) {
  Conv2dStrides st;
  if (!dnnlEnabled() || !positiveStrides(s, given, st))
    return false;
  // nullptr: oneDNN refused this convolution; the caller's path runs it.
  static std::map<std::array<int64_t, 32>, std::unique_ptr<Conv>> built;
  auto key = keyOf<0>(s, st, {});
  auto it = built.find(key);
  if (it == built.end())
    it = built.emplace(key, build(s, st)).first;
  if (!it->second)
    return false;
  run(*it->second, in, filter, out);
  return true;
}

} // namespace soaprt

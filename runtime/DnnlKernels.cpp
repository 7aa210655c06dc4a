//===- DnnlKernels.cpp - oneDNN convolutions for generated code ----------===//
//
// f32 NCHW convolutions through oneDNN (Debian's libdnnl): the operands
// keep the strides generated code passes; oneDNN picks its own (blocked)
// layouts for the computation, and reorders copy in and out of them. The
// result is added to the output, as linalg's convolutions accumulate.
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

extern "C" int openblas_get_num_threads(void);

namespace soaprt {

namespace {

using Key = std::array<int64_t, 25>;

struct Engine {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
};

/// One convolution, built: the primitive, the reorders around it and the
/// scratch memory of oneDNN's layouts.
struct Conv {
  dnnl::memory userSrc, userWeights, userDst;
  dnnl::memory src, weights, dst; // the primitive's (may be the user's)
  std::optional<dnnl::reorder> srcIn, weightsIn, dstOut;
  dnnl::convolution_forward conv;
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

dnnl::memory::desc userDesc(const dnnl::memory::dims &dims,
                            const dnnl::memory::dims &strides) {
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, strides);
}

/// The primitive's memory for `desc`: the user's when the layouts agree,
/// scratch otherwise (with the reorder that fills or drains it).
dnnl::memory layoutFor(const dnnl::memory::desc &desc,
                       const dnnl::memory &user, dnnl::engine &eng) {
  if (desc == user.get_desc())
    return user;
  return dnnl::memory(desc, eng);
}

std::unique_ptr<Conv> build(const Conv2dShape &s, const Conv2dStrides &st) {
  Engine &e = engine();
  using dims = dnnl::memory::dims;
  // The rows and columns the windows read: oneDNN's shapes must agree
  // exactly, and linalg allows an input larger than its windows reach.
  int64_t usedH = s.sh * (s.oh - 1) + s.dh * (s.kh - 1) + 1;
  int64_t usedW = s.sw * (s.ow - 1) + s.dw * (s.kw - 1) + 1;
  auto conv = std::make_unique<Conv>();
  conv->userSrc = dnnl::memory(
      userDesc({s.n, s.c, usedH, usedW}, {st.in[0], st.in[1], st.in[2], st.in[3]}),
      e.engine, DNNL_MEMORY_NONE);
  conv->userWeights = dnnl::memory(
      userDesc({s.f, s.c, s.kh, s.kw},
               {st.filter[0], st.filter[1], st.filter[2], st.filter[3]}),
      e.engine, DNNL_MEMORY_NONE);
  conv->userDst = dnnl::memory(
      userDesc({s.n, s.f, s.oh, s.ow},
               {st.out[0], st.out[1], st.out[2], st.out[3]}),
      e.engine, DNNL_MEMORY_NONE);
  auto any = [](const dims &d) {
    return dnnl::memory::desc(d, dnnl::memory::data_type::f32,
                              dnnl::memory::format_tag::any);
  };
  dnnl::convolution_forward::desc desc(
      dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
      any({s.n, s.c, usedH, usedW}), any({s.f, s.c, s.kh, s.kw}),
      any({s.n, s.f, s.oh, s.ow}), {s.sh, s.sw}, {s.dh - 1, s.dw - 1}, {0, 0},
      {0, 0});
  dnnl::convolution_forward::primitive_desc pd(desc, e.engine);
  // The output accumulates: in place through a sum post-op when oneDNN
  // writes the user's layout, else through a reorder that adds.
  dnnl::primitive_attr sum;
  dnnl::post_ops ops;
  ops.append_sum(1.0f);
  sum.set_post_ops(ops);
  bool inPlace = pd.dst_desc() == conv->userDst.get_desc();
  if (inPlace)
    pd = dnnl::convolution_forward::primitive_desc(desc, sum, e.engine);
  conv->src = layoutFor(pd.src_desc(), conv->userSrc, e.engine);
  conv->weights = layoutFor(pd.weights_desc(), conv->userWeights, e.engine);
  conv->dst = inPlace ? conv->userDst : dnnl::memory(pd.dst_desc(), e.engine);
  if (conv->src != conv->userSrc)
    conv->srcIn = dnnl::reorder(conv->userSrc, conv->src);
  if (conv->weights != conv->userWeights)
    conv->weightsIn = dnnl::reorder(conv->userWeights, conv->weights);
  if (!inPlace)
    conv->dstOut = dnnl::reorder(
        dnnl::reorder::primitive_desc(conv->dst, conv->userDst, sum));
  conv->conv = dnnl::convolution_forward(pd);
  return conv;
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
  conv->userSrc.set_data_handle(const_cast<float *>(in));
  conv->userWeights.set_data_handle(const_cast<float *>(filter));
  conv->userDst.set_data_handle(out);
  if (conv->srcIn)
    conv->srcIn->execute(stream, conv->userSrc, conv->src);
  if (conv->weightsIn)
    conv->weightsIn->execute(stream, conv->userWeights, conv->weights);
  conv->conv.execute(stream, {{DNNL_ARG_SRC, conv->src},
                              {DNNL_ARG_WEIGHTS, conv->weights},
                              {DNNL_ARG_DST, conv->dst}});
  if (conv->dstOut)
    conv->dstOut->execute(stream, conv->dst, conv->userDst);
  stream.wait();
  return true;
}

} // namespace soaprt

//===- DnnlSpread.cpp - oneDNN data gradients of spread images -----------===//
//
// The autodiff's input gradient of a convolution is a convolution of the
// output's adjoint spread into zeros (soaprt_conv2d_spread_f32). oneDNN
// runs it without the zeros: points one apart through a filter read
// forwards as a forward convolution with padding (planPadding), any other
// spread of a unit-stride convolution as oneDNN's backward-data
// convolution of the points (planSpread, buildSpread).
//
//===----------------------------------------------------------------------===//

#include "DnnlConv.h"

#include <map>

namespace soaprt {
namespace dnnlconv {
namespace {

/// The spread view (buildSpread): the output rows and columns that
/// receive a contribution, oneDNN's padding and the offset into the
/// caller's output, per spatial dimension.
struct SpreadPlan {
  std::array<int64_t, 2> rows, padLeft, padRight, skipped;
};

/// Where the spread convolution's image is nonzero (oy + py * a, a < ay),
/// it is oneDNN's backward-data convolution of the adjoint at those points
/// (forward stride py, the same dilation) through the filter flipped back:
/// out[y] += img[y + d * i] * filter[i] with img[o + p * a] = dy[a] is
/// out[y] += dy[a] * filter[K - 1 - i'] where y = p * a - (d (K - 1) - o) +
/// d * i'. Output rows no point reaches are skipped (the sum adds nothing
/// there), so the padding is never negative. nullopt when nothing is left.
std::optional<SpreadPlan> planSpread(const Conv2dShape &s,
                                     const Conv2dSpread &sp) {
  SpreadPlan plan;
  int64_t outSize[2] = {s.oh, s.ow}, window[2] = {s.kh, s.kw},
          dilation[2] = {s.dh, s.dw};
  for (int k = 0; k < 2; ++k) {
    int64_t reach = dilation[k] * (window[k] - 1);
    int64_t left = reach - sp.offsets[k], rows = outSize[k], skipped = 0;
    if (left < 0) {
      skipped = -left;
      rows -= skipped;
      left = 0;
    }
    int64_t right = (sp.sizes[k] - 1) * sp.strides[k] + reach + 1 - rows - left;
    if (right < 0) {
      rows += right;
      right = 0;
    }
    if (rows <= 0 || sp.sizes[k] <= 0)
      return std::nullopt;
    plan.rows[k] = rows;
    plan.padLeft[k] = left;
    plan.padRight[k] = right;
    plan.skipped[k] = skipped;
  }
  return plan;
}

/// The spread convolution as oneDNN's backward-data convolution (see
/// planSpread): diff_dst the spread's points (userIn), weights the filter
/// flipped back ({G,} C, F, KH, KW: the caller's memory read forwards when
/// the caller reads it `backwards` or it is 1x1, else `unflipped`, which
/// each run fills; blocked weights only the former), diff_src the output
/// rows reached (userOut, its handle moved past the skipped ones).
std::unique_ptr<Conv> buildSpread(const Conv2dShape &s, const Conv2dStrides &st,
                                  const Conv2dSpread &sp,
                                  const SpreadPlan &plan, bool backwards) {
  Engine &e = engine();
  auto conv = std::make_unique<Conv>();
  dims diffDst = {s.n, s.g * s.c, sp.sizes[0], sp.sizes[1]},
       weights = withGroups(s.g, s.g, {s.c, s.f, s.kh, s.kw}),
       diffSrc = {s.n, s.g * s.f, plan.rows[0], plan.rows[1]};
  conv->userIn =
      userMemory(diffDst,
                 {st.in[0], mergedStride(s.g, st.in[1], s.c, st.in[2]),
                  st.in[3], st.in[4]},
                 e.engine);
  if (st.outBlock || (st.filterBlock && (s.g > 1 || !backwards)))
    throw Unexpressible();
  if (backwards) {
    conv->userFilter = weightsMemory(
        weights,
        withGroups(s.g, st.filter[0],
                   {st.filter[2], st.filter[1], st.filter[3], st.filter[4]}),
        st.filterBlock, e.engine);
  } else {
    conv->unflipped.resize(static_cast<size_t>(s.g * s.c * s.f * s.kh * s.kw));
    conv->userFilter = dnnl::memory(
        dnnl::memory::desc(weights, dnnl::memory::data_type::f32,
                           s.g > 1 ? dnnl::memory::format_tag::goihw
                                   : dnnl::memory::format_tag::oihw),
        e.engine, conv->unflipped.data());
  }
  conv->userOut =
      userMemory(diffSrc,
                 {st.out[0], mergedStride(s.g, st.out[1], s.f, st.out[2]),
                  st.out[3], st.out[4]},
                 e.engine);
  dims strides = {sp.strides[0], sp.strides[1]},
       dilations = {s.dh - 1, s.dw - 1},
       padLeft = {plan.padLeft[0], plan.padLeft[1]},
       padRight = {plan.padRight[0], plan.padRight[1]};
  auto pd = preferringWinograd(
      winogradWorth({s.kh, s.kw}, strides, dilations, s.g,
                    {sp.sizes[0], sp.sizes[1]}, std::min(s.c, s.f)),
      [&](dnnl::algorithm algorithm) {
        auto hint = trainingHint(algorithm, diffSrc, weights, diffDst, strides,
                                 dilations, padLeft, padRight);
        dnnl::convolution_backward_data::desc desc(
            algorithm, anyLayout(diffSrc), anyLayout(weights),
            anyLayout(diffDst), strides, dilations, padLeft, padRight);
        return dnnl::convolution_backward_data::primitive_desc(desc, e.engine,
                                                               hint);
      });
  conv->impl = pd.impl_info_str();
  bindInput(*conv, DNNL_ARG_DIFF_DST, pd.diff_dst_desc(), conv->userIn,
            e.engine);
  bindInput(*conv, DNNL_ARG_WEIGHTS, pd.weights_desc(), conv->userFilter,
            e.engine);
  // oneDNN overwrites diff_src: through scratch and the reorder that adds,
  // unless the caller overwrites too.
  bindOutput(*conv, DNNL_ARG_DIFF_SRC, pd.diff_src_desc(),
             /*primitiveAdds=*/false, s.accumulate, e.engine);
  conv->primitive = dnnl::convolution_backward_data(pd);
  return conv;
}

/// A spread of points one apart (an image padded with zeros) as oneDNN's
/// forward convolution of the points with that padding: per spatial
/// dimension the padding before them, after them, and how many of them
/// the windows read; nullopt when they read none.
std::optional<std::pair<Padding, std::array<int64_t, 2>>>
planPadding(const Conv2dShape &s, const Conv2dSpread &sp) {
  std::array<int64_t, 2> used = usedImage(s), read;
  Padding padding;
  for (int k = 0; k < 2; ++k) {
    int64_t right = used[k] - sp.offsets[k] - sp.sizes[k];
    read[k] = sp.sizes[k] + std::min<int64_t>(right, 0);
    if (read[k] <= 0)
      return std::nullopt;
    padding.left[k] = sp.offsets[k];
    padding.right[k] = std::max<int64_t>(right, 0);
  }
  return std::make_pair(padding, read);
}

} // namespace
} // namespace dnnlconv

using namespace dnnlconv;

bool dnnlConv2dSpread(const Conv2dShape &s, const Conv2dStrides &given,
                      const Conv2dSpread &sp, const float *points,
                      const float *filter, float *out) {
  // SOAP_DNNL_SPREAD=0: the convolution of the whole spread image, as
  // before this path existed (to measure one against the other).
  static const bool enabled = !envIs("SOAP_DNNL_SPREAD", "0");
  if (!dnnlEnabled() || !enabled)
    return false;
  // A filter the caller reads backwards (negative window strides from its
  // last element) is, read forwards, the filter flipped back: U[g][c][f]
  // [i][j] = filter[g, f, c, KH - 1 - i, KW - 1 - j], which the
  // backward-data convolution takes.
  bool backwards = (s.kh == 1 || given.filter[3] < 0) &&
                   (s.kw == 1 || given.filter[4] < 0) &&
                   (given.filter[3] < 0 || given.filter[4] < 0);
  Conv2dStrides forward = given;
  const float *flippedBack = filter;
  if (backwards) {
    flippedBack =
        filter + (s.kh - 1) * given.filter[3] + (s.kw - 1) * given.filter[4];
    forward.filter[3] = -given.filter[3];
    forward.filter[4] = -given.filter[4];
  }
  Conv2dStrides st;
  if (!positiveStrides(s, forward, st, sp.sizes))
    return false;
  // Points one apart through a filter read forwards: the image padded, a
  // forward convolution of any stride with that padding.
  if (!backwards && sp.strides == std::array<int64_t, 2>{1, 1}) {
    auto plan = planPadding(s, sp);
    if (!plan) {
      // The windows read none of the points: the output gets nothing.
      if (!s.accumulate)
        zeroOutput(s, given.out, out);
      return true;
    }
    auto [padding, read] = *plan;
    static std::map<std::array<int64_t, 38>, std::unique_ptr<Conv>> built;
    auto key = keyOf<6>(s, st,
                        {padding.left[0], padding.left[1], padding.right[0],
                         padding.right[1], read[0], read[1]});
    auto it = built.find(key);
    if (it == built.end())
      it = built.emplace(key, build(s, st, read, padding)).first;
    if (!it->second)
      return false;
    run(*it->second, points, filter, out);
    return true;
  }
  // Otherwise the backward-data convolution of the points, of a
  // unit-stride convolution.
  if (s.sh != 1 || s.sw != 1)
    return false;
  std::optional<SpreadPlan> plan = planSpread(s, sp);
  // An output the convolution overwrites but reaches only part of (or,
  // without a plan, none of) is zeroed first, then added to.
  Conv2dShape shape = s;
  if (!s.accumulate &&
      (!plan || plan->rows[0] != s.oh || plan->rows[1] != s.ow)) {
    zeroOutput(s, given.out, out);
    shape.accumulate = true;
  }
  if (!plan)
    return true;
  // A 1x1 filter is its own flip: read as it is, without a copy.
  bool readAsGiven = backwards || (s.kh == 1 && s.kw == 1);
  static std::map<std::array<int64_t, 39>, std::unique_ptr<Conv>> built;
  auto key = keyOf<7>(shape, st,
                      {sp.offsets[0], sp.offsets[1], sp.strides[0],
                       sp.strides[1], sp.sizes[0], sp.sizes[1], readAsGiven});
  auto it = built.find(key);
  if (it == built.end())
    it = built
             .emplace(key, orNull([&] {
                        return buildSpread(shape, st, sp, *plan, readAsGiven);
                      }))
             .first;
  Conv *conv = it->second.get();
  if (!conv)
    return false;
  if (!readAsGiven) {
    float *w = conv->unflipped.data();
    for (int64_t g = 0; g < s.g; ++g)
      for (int64_t c = 0; c < s.c; ++c)
        for (int64_t f = 0; f < s.f; ++f)
          for (int64_t i = 0; i < s.kh; ++i)
            for (int64_t j = 0; j < s.kw; ++j)
              *w++ = filter[g * given.filter[0] + f * given.filter[1] +
                            c * given.filter[2] +
                            (s.kh - 1 - i) * given.filter[3] +
                            (s.kw - 1 - j) * given.filter[4]];
  }
  run(*conv, points, flippedBack,
      out + plan->skipped[0] * st.out[3] + plan->skipped[1] * st.out[4]);
  return true;
}

} // namespace soaprt

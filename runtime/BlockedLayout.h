//===- BlockedLayout.h - convolution weights stored in blocks --*- C++ -*-===//
//
// A convolution's weights [O][I][KH][KW] (and their gradient and optimizer
// state) that the compiler keeps in oneDNN's blocked layout OIhw<b>i<b>o
// across steps (lib/codegen/KernelCalls.cpp, blockedWeights): blocks of
// b output by b input channels, the output channel innermost, the blocks
// in O, I, KH, KW order. O and I are multiples of b, so the blocked tensor
// has exactly the plain one's elements, permuted. The convolution kernels
// read and write such operands in place (oneDNN's own layout for its
// AVX-512 and AVX2 kernels: no reorder of the weights each step); the
// driver converts at its boundaries (initial values, checkpoints).
//
// Private to the runtime and its driver.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_RUNTIME_BLOCKEDLAYOUT_H
#define SOAP_RUNTIME_BLOCKEDLAYOUT_H

#include <array>
#include <cstdint>
#include <cstdlib>

namespace soaprt {

/// Where element [o][i][h][w] of weights `dims` ({O, I, KH, KW}) is in
/// their blocked layout with blocks of `b`.
inline int64_t blockedOffset(const std::array<int64_t, 4> &dims, int64_t b,
                             int64_t o, int64_t i, int64_t h, int64_t w) {
  int64_t window = dims[2] * dims[3];
  return (((o / b) * (dims[1] / b) + i / b) * window + h * dims[3] + w) * b *
             b +
         (i % b) * b + o % b;
}

/// Whether weights `dims` can be stored in blocks of `b` (both channel
/// counts multiples of it).
inline bool blockable(const std::array<int64_t, 4> &dims, int64_t b) {
  return b > 0 && dims[0] % b == 0 && dims[1] % b == 0;
}

/// Plain [O][I][KH][KW] to blocked (`toBlocked`) or back.
template <typename T>
void convertBlocked(const std::array<int64_t, 4> &dims, int64_t b,
                    const T *from, T *to, bool toBlocked) {
  int64_t plain = 0;
  for (int64_t o = 0; o < dims[0]; ++o)
    for (int64_t i = 0; i < dims[1]; ++i)
      for (int64_t h = 0; h < dims[2]; ++h)
        for (int64_t w = 0; w < dims[3]; ++w, ++plain) {
          int64_t blocked = blockedOffset(dims, b, o, i, h, w);
          if (toBlocked)
            to[blocked] = from[plain];
          else
            to[plain] = from[blocked];
        }
}

/// A convolution operand of four dimensions (a filter {F, C, KH, KW}, a
/// weight gradient in the backward-weights view {F, N, OH, OW}, or their
/// forms with the first two swapped) that holds blocked weights, as the
/// compiler passes it: the strides are those of the weights' plain layout
/// (dense [O][I][KH][KW]; a window read backwards has a negative stride
/// and the pointer at its last element there). The operand's first two
/// dimensions are O and I in either order, its last two KH and KW.
struct BlockedOperand {
  /// The weights' dims {O, I, KH, KW}.
  std::array<int64_t, 4> weights;
  /// Whether the operand's first dimension is I (and its second O).
  bool swapped = false;
  /// Elements from the weights' first one to the one the pointer is at.
  int64_t offset = 0;
};

/// The weights an operand of `sizes` and plain `strides` is (see
/// BlockedOperand); false when the strides are not those of dense weights.
inline bool blockedOperand(const std::array<int64_t, 4> &sizes,
                           const std::array<int64_t, 4> &strides,
                           BlockedOperand &result) {
  result.swapped = std::llabs(strides[0]) < std::llabs(strides[1]);
  result.weights = sizes;
  std::array<int64_t, 4> given = strides;
  if (result.swapped) {
    std::swap(result.weights[0], result.weights[1]);
    std::swap(given[0], given[1]);
  }
  const std::array<int64_t, 4> &d = result.weights;
  std::array<int64_t, 4> dense = {d[1] * d[2] * d[3], d[2] * d[3], d[3], 1};
  result.offset = 0;
  for (int k = 0; k < 4; ++k) {
    if (d[k] == 1)
      continue;
    if (std::llabs(given[k]) != dense[k] || (k < 2 && given[k] < 0))
      return false;
    if (given[k] < 0)
      result.offset += (d[k] - 1) * dense[k];
  }
  return true;
}

} // namespace soaprt

#endif // SOAP_RUNTIME_BLOCKEDLAYOUT_H

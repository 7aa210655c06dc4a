//===- Layers.cpp - convolutions, pooling and normalization ---------------===//

#include "ModelBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>

using namespace mlir;
using namespace soap::zoo;

Attribute ModelBuilder::i64Pair(int64_t value) {
  auto type = RankedTensorType::get({2}, builder.getI64Type());
  return DenseIntElementsAttr::get(type, ArrayRef<int64_t>{value, value});
}

int64_t ModelBuilder::windowOutput(int64_t in, int64_t k, int64_t stride,
                                   int64_t padLow, int64_t padHigh,
                                   StringRef what) {
  int64_t padded = in + padLow + padHigh;
  if (padded < k) {
    std::string where =
        what.empty() && !scopes.empty() ? scopes.back() : qualify(what);
    fail("the input of " + where + " is " + Twine(in) +
         " wide, smaller than its window of " + Twine(k) +
         " (use a larger --image)");
    return 1;
  }
  return (padded - k) / stride + 1;
}

Value ModelBuilder::conv2d(Value x, int64_t outChannels, Window window,
                           StringRef name, bool bias) {
  Scope scope(*this, name);
  ArrayRef<int64_t> shape = shapeOf(x);
  int64_t n = shape[0], c = shape[1];
  int64_t oh = windowOutput(shape[2], window.kh, window.stride, window.padH,
                            window.padH, "");
  int64_t ow = windowOutput(shape[3], window.kw, window.stride, window.padW,
                            window.padW, "");
  Value weight = param("weight", {outChannels, c, window.kh, window.kw});
  Value padded = x;
  if (window.padH || window.padW)
    padded = pad(x, {0, 0, window.padH, window.padW},
                 {0, 0, window.padH, window.padW}, 0.0);
  Value init = zeros({n, outChannels, oh, ow});
  Value y =
      linalg::Conv2DNchwFchwOp::create(
          builder, loc(), TypeRange{init.getType()}, ValueRange{padded, weight},
          ValueRange{init}, i64Pair(window.stride), i64Pair(1))
          .getResult(0);
  if (bias)
    y = addBias(y, param("bias", {outChannels}, "zeros"), 1);
  return y;
}

std::pair<Value, Value> ModelBuilder::meanAndVariance(Value x, AffineMap all,
                                                      AffineMap statistic,
                                                      ArrayRef<unsigned> kept,
                                                      double inverse) {
  ArrayRef<int64_t> shape = shapeOf(x);
  Value mean = reduction({x}, {all}, shape, kept, 0.0,
                         [inverse](OpBuilder &b, Location l, ValueRange args) {
                           Value scaled = arith::MulFOp::create(
                               b, l, args[0], f32Constant(b, l, inverse));
                           return arith::AddFOp::create(b, l, args[1], scaled);
                         });
  Value variance =
      reduction({x, mean}, {all, statistic}, shape, kept, 0.0,
                [inverse](OpBuilder &b, Location l, ValueRange args) {
                  Value d = arith::SubFOp::create(b, l, args[0], args[1]);
                  Value sq = arith::MulFOp::create(b, l, d, d);
                  Value scaled = arith::MulFOp::create(
                      b, l, sq, f32Constant(b, l, inverse));
                  return arith::AddFOp::create(b, l, args[2], scaled);
                });
  return {mean, variance};
}

/// The body of batch and layer norm: (x - mean) * rsqrt(variance + eps)
/// * gamma + beta, from args = (x, mean, variance, gamma, beta).
static Value normalize(OpBuilder &b, Location l, ValueRange args,
                       double epsilon) {
  Value centered = arith::SubFOp::create(b, l, args[0], args[1]);
  Value rstd = math::RsqrtOp::create(
      b, l, arith::AddFOp::create(b, l, args[2], f32Constant(b, l, epsilon)));
  Value normed = arith::MulFOp::create(b, l, centered, rstd);
  return arith::AddFOp::create(
      b, l, arith::MulFOp::create(b, l, normed, args[3]), args[4]);
}

Value ModelBuilder::batchNorm(Value x, StringRef name, double epsilon) {
  Scope scope(*this, name);
  ArrayRef<int64_t> shape = shapeOf(x);
  int64_t channels = shape[1];
  double inverse = 1.0 / static_cast<double>(shape[0] * shape[2] * shape[3]);
  Value gamma = param("weight", {channels}, "ones");
  Value beta = param("bias", {channels}, "zeros");
  AffineMap all = identity(4), channel = dims(4, {1});
  auto [mean, variance] = meanAndVariance(x, all, channel, {1}, inverse);
  return parallel({x, mean, variance, gamma, beta},
                  {all, channel, channel, channel, channel}, shape,
                  [epsilon](OpBuilder &b, Location l, ValueRange args) {
                    return normalize(b, l, args, epsilon);
                  });
}

template <typename PoolOp>
Value ModelBuilder::pool(Value x, Window window, double padValue,
                         double initValue) {
  ArrayRef<int64_t> shape = shapeOf(x);
  int64_t oh = windowOutput(shape[2], window.kh, window.stride, window.padH,
                            window.padH, "");
  int64_t ow = windowOutput(shape[3], window.kw, window.stride, window.padW,
                            window.padW, "");
  if (hasFailed())
    return filled({shape[0], shape[1], oh, ow}, 0.0);
  Value padded = x;
  if (window.padH || window.padW)
    padded = pad(x, {0, 0, window.padH, window.padW},
                 {0, 0, window.padH, window.padW}, padValue);
  Value init = filled({shape[0], shape[1], oh, ow}, initValue);
  Value windowShape = empty({window.kh, window.kw});
  return PoolOp::create(builder, loc(), TypeRange{init.getType()},
                        ValueRange{padded, windowShape}, ValueRange{init},
                        i64Pair(window.stride), i64Pair(1))
      .getResult(0);
}

Value ModelBuilder::maxPool(Value x, Window window, StringRef name) {
  Scope scope(*this, name);
  return pool<linalg::PoolingNchwMaxOp>(x, window, -INFINITY, -INFINITY);
}

Value ModelBuilder::avgPool(Value x, Window window, StringRef name) {
  Scope scope(*this, name);
  Value sum = pool<linalg::PoolingNchwSumOp>(x, window, 0.0, 0.0);
  if (hasFailed())
    return sum;
  return scale(sum, 1.0 / static_cast<double>(window.kh * window.kw));
}

Value ModelBuilder::globalAvgPool(Value x) {
  ArrayRef<int64_t> shape = shapeOf(x);
  int64_t h = shape[2], w = shape[3];
  Value init = zeros({shape[0], shape[1], 1, 1});
  Value windowShape = empty({h, w});
  Value sum =
      linalg::PoolingNchwSumOp::create(
          builder, loc(), TypeRange{init.getType()}, ValueRange{x, windowShape},
          ValueRange{init}, i64Pair(1), i64Pair(1))
          .getResult(0);
  return scale(flatten(sum), 1.0 / static_cast<double>(h * w));
}

Value ModelBuilder::layerNorm(Value x, StringRef name, double epsilon) {
  Scope scope(*this, name);
  ArrayRef<int64_t> shape = shapeOf(x);
  int64_t width = shape[1];
  double inverse = 1.0 / static_cast<double>(width);
  Value gamma = param("weight", {width}, "ones");
  Value beta = param("bias", {width}, "zeros");
  AffineMap all = identity(2), row = dims(2, {0}), column = dims(2, {1});
  auto [mean, variance] = meanAndVariance(x, all, row, {0}, inverse);
  return parallel({x, mean, variance, gamma, beta},
                  {all, row, row, column, column}, shape,
                  [epsilon](OpBuilder &b, Location l, ValueRange args) {
                    return normalize(b, l, args, epsilon);
                  });
}

//===- Inception.cpp - Inception-v3 ---------------------------------------===//
//
// torchvision's Inception-v3 without the auxiliary classifier (23.8M
// parameters at 299x299 and 1000 classes). Every convolution is a
// "BasicConv2d": convolution without bias + batch norm (training mode,
// epsilon 1e-3) + ReLU.
//   stem: 3x3/2 (32), 3x3 (32), 3x3 pad 1 (64), max pool 3/2, 1x1 (80),
//         3x3 (192), max pool 3/2
//   Mixed_5b/5c/5d: InceptionA (1x1 | 1x1-5x5 | 1x1-3x3-3x3 | avg pool-1x1)
//   Mixed_6a: InceptionB (grid reduction to 17x17)
//   Mixed_6b..6e: InceptionC (factorized 1x7 / 7x1 convolutions)
//   Mixed_7a: InceptionD (grid reduction to 8x8)
//   Mixed_7b/7c: InceptionE (expanded 1x3 / 3x1 branches)
//   global average pool + fc (classes).
// Branches are concatenated along the channels (tensor.concat). Average
// pools count padding in the divisor, as torchvision does.
//
//===----------------------------------------------------------------------===//

#include "ModelBuilder.h"
#include "Models.h"

using namespace mlir;
using namespace soap::zoo;

static constexpr double kEpsilon = 1e-3;

/// A 1xk or kx1 window with "same" padding.
static Window row(int64_t k) { return {1, k, 1, 0, k / 2}; }
static Window column(int64_t k) { return {k, 1, 1, k / 2, 0}; }

namespace {

class InceptionV3 {
public:
  InceptionV3(ModelBuilder &mb, int64_t width) : mb(mb), width(width) {}

  Value build(Value x) {
    x = conv(x, 32, Window::square(3, 2), "Conv2d_1a_3x3");
    x = conv(x, 32, Window::square(3), "Conv2d_2a_3x3");
    x = conv(x, 64, Window::square(3, 1, 1), "Conv2d_2b_3x3");
    x = mb.maxPool(x, Window::square(3, 2), "maxpool1");
    x = conv(x, 80, Window::square(1), "Conv2d_3b_1x1");
    x = conv(x, 192, Window::square(3), "Conv2d_4a_3x3");
    x = mb.maxPool(x, Window::square(3, 2), "maxpool2");
    x = inceptionA(x, 32, "Mixed_5b");
    x = inceptionA(x, 64, "Mixed_5c");
    x = inceptionA(x, 64, "Mixed_5d");
    x = inceptionB(x, "Mixed_6a");
    x = inceptionC(x, 128, "Mixed_6b");
    x = inceptionC(x, 160, "Mixed_6c");
    x = inceptionC(x, 160, "Mixed_6d");
    x = inceptionC(x, 192, "Mixed_6e");
    x = inceptionD(x, "Mixed_7a");
    x = inceptionE(x, "Mixed_7b");
    x = inceptionE(x, "Mixed_7c");
    return mb.globalAvgPool(x);
  }

private:
  /// Channels scaled by --width (32 is the published network).
  int64_t channels(int64_t c) const {
    return std::max<int64_t>(1, c * width / 32);
  }

  /// BasicConv2d.
  Value conv(Value x, int64_t c, Window window, const std::string &name) {
    ModelBuilder::Scope scope(mb, name);
    x = mb.conv2d(x, channels(c), window, "conv", /*bias=*/false);
    return mb.relu(mb.batchNorm(x, "bn", kEpsilon));
  }

  Value poolBranch(Value x, int64_t c) {
    Value pooled = mb.avgPool(x, Window::square(3, 1, 1), "avg_pool");
    return conv(pooled, c, Window::square(1), "branch_pool");
  }

  Value inceptionA(Value x, int64_t poolFeatures, const std::string &name) {
    ModelBuilder::Scope scope(mb, name);
    Value b1 = conv(x, 64, Window::square(1), "branch1x1");
    Value b5 = conv(x, 48, Window::square(1), "branch5x5_1");
    b5 = conv(b5, 64, Window::square(5, 1, 2), "branch5x5_2");
    Value b3 = conv(x, 64, Window::square(1), "branch3x3dbl_1");
    b3 = conv(b3, 96, Window::square(3, 1, 1), "branch3x3dbl_2");
    b3 = conv(b3, 96, Window::square(3, 1, 1), "branch3x3dbl_3");
    Value bp = poolBranch(x, poolFeatures);
    return mb.concat({b1, b5, b3, bp}, 1);
  }

  Value inceptionB(Value x, const std::string &name) {
    ModelBuilder::Scope scope(mb, name);
    Value b3 = conv(x, 384, Window::square(3, 2), "branch3x3");
    Value bd = conv(x, 64, Window::square(1), "branch3x3dbl_1");
    bd = conv(bd, 96, Window::square(3, 1, 1), "branch3x3dbl_2");
    bd = conv(bd, 96, Window::square(3, 2), "branch3x3dbl_3");
    Value bp = mb.maxPool(x, Window::square(3, 2), "max_pool");
    return mb.concat({b3, bd, bp}, 1);
  }

  Value inceptionC(Value x, int64_t c7, const std::string &name) {
    ModelBuilder::Scope scope(mb, name);
    Value b1 = conv(x, 192, Window::square(1), "branch1x1");
    Value b7 = conv(x, c7, Window::square(1), "branch7x7_1");
    b7 = conv(b7, c7, row(7), "branch7x7_2");
    b7 = conv(b7, 192, column(7), "branch7x7_3");
    Value bd = conv(x, c7, Window::square(1), "branch7x7dbl_1");
    bd = conv(bd, c7, column(7), "branch7x7dbl_2");
    bd = conv(bd, c7, row(7), "branch7x7dbl_3");
    bd = conv(bd, c7, column(7), "branch7x7dbl_4");
    bd = conv(bd, 192, row(7), "branch7x7dbl_5");
    Value bp = poolBranch(x, 192);
    return mb.concat({b1, b7, bd, bp}, 1);
  }

  Value inceptionD(Value x, const std::string &name) {
    ModelBuilder::Scope scope(mb, name);
    Value b3 = conv(x, 192, Window::square(1), "branch3x3_1");
    b3 = conv(b3, 320, Window::square(3, 2), "branch3x3_2");
    Value b7 = conv(x, 192, Window::square(1), "branch7x7x3_1");
    b7 = conv(b7, 192, row(7), "branch7x7x3_2");
    b7 = conv(b7, 192, column(7), "branch7x7x3_3");
    b7 = conv(b7, 192, Window::square(3, 2), "branch7x7x3_4");
    Value bp = mb.maxPool(x, Window::square(3, 2), "max_pool");
    return mb.concat({b3, b7, bp}, 1);
  }

  Value inceptionE(Value x, const std::string &name) {
    ModelBuilder::Scope scope(mb, name);
    Value b1 = conv(x, 320, Window::square(1), "branch1x1");
    Value b3 = conv(x, 384, Window::square(1), "branch3x3_1");
    b3 = mb.concat({conv(b3, 384, row(3), "branch3x3_2a"),
                    conv(b3, 384, column(3), "branch3x3_2b")},
                   1);
    Value bd = conv(x, 448, Window::square(1), "branch3x3dbl_1");
    bd = conv(bd, 384, Window::square(3, 1, 1), "branch3x3dbl_2");
    bd = mb.concat({conv(bd, 384, row(3), "branch3x3dbl_3a"),
                    conv(bd, 384, column(3), "branch3x3dbl_3b")},
                   1);
    Value bp = poolBranch(x, 192);
    return mb.concat({b1, b3, bd, bp}, 1);
  }

  ModelBuilder &mb;
  int64_t width;
};

} // namespace

LogicalResult soap::zoo::buildInceptionV3(ModuleOp module,
                                          const ModelOptions &options,
                                          std::string &error) {
  int64_t batch = options.get("batch"), image = options.get("image");
  ModelBuilder mb(module);
  Value x = mb.input("images", {batch, 3, image, image}, mb.f32());
  Value features = InceptionV3(mb, options.get("width")).build(x);
  Value logits = mb.linear(features, options.get("classes"), "fc");
  Value labels = mb.input("labels", {batch}, mb.i64(), options.get("classes"));
  return mb.finish(mb.softmaxCrossEntropy(logits, labels), error);
}

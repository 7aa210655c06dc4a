//===- ResNet.cpp - residual networks -------------------------------------===//
//
// torchvision's ResNets (v1.5: a bottleneck downsamples in its 3x3
// convolution):
//   stem: conv 7x7/2 pad 3 (64) + BN + ReLU + max pool 3/2 pad 1
//   4 stages of blocks (64, 128, 256, 512 channels; stages 2-4 start with
//   stride 2), a 1x1 convolution + BN on the shortcut where the shape changes
//   global average pool + fc (classes).
// Depth 18 and 34 use basic blocks (two 3x3 convolutions); 50, 101 and 152
// use bottlenecks (1x1, 3x3, 1x1 with 4x expansion). Convolutions have no
// bias; batch norm runs in training mode (batch statistics; gamma and beta
// are parameters). ResNet-50 has 25.6M parameters, ResNet-101 44.5M.
//
//===----------------------------------------------------------------------===//

#include "ModelBuilder.h"
#include "Models.h"

#include <array>
#include <optional>

using namespace mlir;
using namespace soap::zoo;

static constexpr double kEpsilon = 1e-5;

namespace {
struct ResNetShape {
  bool bottleneck;
  std::array<int, 4> blocks;
};
} // namespace

static std::optional<ResNetShape> resnetShape(int64_t depth) {
  switch (depth) {
  case 18:
    return ResNetShape{false, {2, 2, 2, 2}};
  case 34:
    return ResNetShape{false, {3, 4, 6, 3}};
  case 50:
    return ResNetShape{true, {3, 4, 6, 3}};
  case 101:
    return ResNetShape{true, {3, 4, 23, 3}};
  case 152:
    return ResNetShape{true, {3, 8, 36, 3}};
  default:
    return std::nullopt;
  }
}

/// conv + BN (+ ReLU).
static Value convBn(ModelBuilder &mb, Value x, int64_t channels, Window window,
                    const std::string &index, bool relu) {
  x = mb.conv2d(x, channels, window, "conv" + index, /*bias=*/false);
  x = mb.batchNorm(x, "bn" + index, kEpsilon);
  return relu ? mb.relu(x) : x;
}

static Value block(ModelBuilder &mb, Value x, int64_t planes, int64_t stride,
                   bool bottleneck) {
  int64_t outChannels = bottleneck ? 4 * planes : planes;
  Value y;
  if (bottleneck) {
    y = convBn(mb, x, planes, Window::square(1), "1", true);
    y = convBn(mb, y, planes, Window::square(3, stride, 1), "2", true);
    y = convBn(mb, y, outChannels, Window::square(1), "3", false);
  } else {
    y = convBn(mb, x, planes, Window::square(3, stride, 1), "1", true);
    y = convBn(mb, y, planes, Window::square(3, 1, 1), "2", false);
  }
  Value shortcut = x;
  if (stride != 1 || ModelBuilder::dimOf(x, 1) != outChannels) {
    ModelBuilder::Scope scope(mb, "downsample");
    shortcut = mb.conv2d(x, outChannels, Window::square(1, stride), "0",
                         /*bias=*/false);
    shortcut = mb.batchNorm(shortcut, "1", kEpsilon);
  }
  if (mb.hasFailed())
    return y;
  return mb.relu(mb.add(y, shortcut));
}

LogicalResult soap::zoo::buildResNet(ModuleOp module,
                                     const ModelOptions &options,
                                     std::string &error) {
  std::optional<ResNetShape> shape = resnetShape(options.get("depth"));
  if (!shape) {
    error = "--depth must be 18, 34, 50, 101 or 152, got " +
            std::to_string(options.get("depth"));
    return failure();
  }
  int64_t batch = options.get("batch"), image = options.get("image");
  int64_t width = options.get("width");

  ModelBuilder mb(module);
  Value x = mb.input("images", {batch, 3, image, image}, mb.f32());
  x = mb.conv2d(x, width, Window::square(7, 2, 3), "conv1", /*bias=*/false);
  x = mb.relu(mb.batchNorm(x, "bn1", kEpsilon));
  x = mb.maxPool(x, Window::square(3, 2, 1), "maxpool");
  for (int stage = 0; stage < 4; ++stage) {
    int64_t planes = width << stage;
    for (int index = 0; index < shape->blocks[stage]; ++index) {
      ModelBuilder::Scope scope(mb, "layer" + std::to_string(stage + 1) + "." +
                                        std::to_string(index));
      int64_t stride = (stage > 0 && index == 0) ? 2 : 1;
      x = block(mb, x, planes, stride, shape->bottleneck);
    }
  }
  Value logits = mb.linear(mb.globalAvgPool(x), options.get("classes"), "fc");
  Value labels = mb.input("labels", {batch}, mb.i64(), options.get("classes"));
  return mb.finish(mb.softmaxCrossEntropy(logits, labels), error);
}

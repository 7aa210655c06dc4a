//===- Vgg.cpp - VGG ------------------------------------------------------===//
//
// VGG without batch norm (Simonyan & Zisserman; torchvision's vgg11/13/16/
// 19): stages of 3x3 pad-1 convolutions + ReLU, each followed by a 2x2 max
// pool, then fc6, fc7 (4096) + ReLU and fc8 (classes). VGG-16 (configuration
// D) has 138.4M parameters at 224x224 and 1000 classes. Dropout is left out;
// fc6 reads the final feature map as it is (7x7 at 224x224).
//
//===----------------------------------------------------------------------===//

#include "ModelBuilder.h"
#include "Models.h"

#include <array>
#include <optional>

using namespace mlir;
using namespace soap::zoo;

/// Convolutions per stage of each configuration (channels 64, 128, 256,
/// 512, 512).
static std::optional<std::array<int, 5>> stageDepths(int64_t depth) {
  switch (depth) {
  case 11:
    return std::array<int, 5>{1, 1, 2, 2, 2};
  case 13:
    return std::array<int, 5>{2, 2, 2, 2, 2};
  case 16:
    return std::array<int, 5>{2, 2, 3, 3, 3};
  case 19:
    return std::array<int, 5>{2, 2, 4, 4, 4};
  default:
    return std::nullopt;
  }
}

LogicalResult soap::zoo::buildVgg(ModuleOp module, const ModelOptions &options,
                                  std::string &error) {
  std::optional<std::array<int, 5>> depths = stageDepths(options.get("depth"));
  if (!depths) {
    error = "--depth must be 11, 13, 16 or 19, got " +
            std::to_string(options.get("depth"));
    return failure();
  }
  int64_t batch = options.get("batch"), image = options.get("image");
  int64_t width = options.get("width"), hidden = options.get("hidden");

  ModelBuilder mb(module);
  Value x = mb.input("images", {batch, 3, image, image}, mb.f32());
  const int64_t stageChannels[5] = {64, 128, 256, 512, 512};
  for (int stage = 0; stage < 5; ++stage) {
    int64_t channels = std::max<int64_t>(1, stageChannels[stage] * width / 64);
    for (int conv = 0; conv < (*depths)[stage]; ++conv)
      x = mb.relu(mb.conv2d(x, channels, Window::square(3, 1, 1),
                            "conv" + std::to_string(stage + 1) + "_" +
                                std::to_string(conv + 1),
                            /*bias=*/true));
    x = mb.maxPool(x, Window::square(2, 2), "pool" + std::to_string(stage + 1));
  }
  x = mb.flatten(x);
  x = mb.relu(mb.linear(x, hidden, "fc6"));
  x = mb.relu(mb.linear(x, hidden, "fc7"));
  Value logits = mb.linear(x, options.get("classes"), "fc8");
  Value labels = mb.input("labels", {batch}, mb.i64(), options.get("classes"));
  return mb.finish(mb.softmaxCrossEntropy(logits, labels), error);
}

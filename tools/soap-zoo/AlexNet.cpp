//===- AlexNet.cpp - AlexNet ----------------------------------------------===//
//
// torchvision's AlexNet (61.1M parameters at 224x224 and 1000 classes):
//   conv1 11x11/4 pad 2 (64) + ReLU + max pool 3/2
//   conv2 5x5 pad 2 (192)    + ReLU + max pool 3/2
//   conv3, conv4, conv5 3x3 pad 1 (384, 256, 256) + ReLU, max pool 3/2
//   fc6, fc7 (4096) + ReLU, fc8 (classes).
// Dropout is left out (it does not change shapes or parameters), and so is
// torchvision's adaptive average pool: fc6 reads the final feature map as it
// is (6x6 at 224x224).
//
//===----------------------------------------------------------------------===//

#include "ModelBuilder.h"
#include "Models.h"

using namespace mlir;
using namespace soap::zoo;

LogicalResult soap::zoo::buildAlexNet(ModuleOp module,
                                      const ModelOptions &options,
                                      std::string &error) {
  int64_t batch = options.get("batch"), image = options.get("image");
  int64_t width = options.get("width"), hidden = options.get("hidden");
  auto channels = [&](int64_t c) {
    return std::max<int64_t>(1, c * width / 64);
  };

  ModelBuilder mb(module);
  Value x = mb.input("images", {batch, 3, image, image}, mb.f32());
  Window pool = Window::square(3, 2);
  x = mb.relu(mb.conv2d(x, channels(64), Window::square(11, 4, 2), "conv1",
                        /*bias=*/true));
  x = mb.maxPool(x, pool, "pool1");
  x = mb.relu(mb.conv2d(x, channels(192), Window::square(5, 1, 2), "conv2",
                        /*bias=*/true));
  x = mb.maxPool(x, pool, "pool2");
  x = mb.relu(mb.conv2d(x, channels(384), Window::square(3, 1, 1), "conv3",
                        /*bias=*/true));
  x = mb.relu(mb.conv2d(x, channels(256), Window::square(3, 1, 1), "conv4",
                        /*bias=*/true));
  x = mb.relu(mb.conv2d(x, channels(256), Window::square(3, 1, 1), "conv5",
                        /*bias=*/true));
  x = mb.flatten(mb.maxPool(x, pool, "pool5"));
  x = mb.relu(mb.linear(x, hidden, "fc6"));
  x = mb.relu(mb.linear(x, hidden, "fc7"));
  Value logits = mb.linear(x, options.get("classes"), "fc8");
  Value labels = mb.input("labels", {batch}, mb.i64(), options.get("classes"));
  return mb.finish(mb.softmaxCrossEntropy(logits, labels), error);
}

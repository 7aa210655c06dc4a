//===- Mlp.cpp - a multilayer perceptron ----------------------------------===//
//
// x [batch, input] -> (linear + ReLU) x layers -> linear -> logits
// [batch, classes] -> softmax cross-entropy against class ids [batch].
//
//===----------------------------------------------------------------------===//

#include "ModelBuilder.h"
#include "Models.h"

using namespace mlir;
using namespace soap::zoo;

LogicalResult soap::zoo::buildMlp(ModuleOp module, const ModelOptions &options,
                                  std::string &error) {
  int64_t batch = options.get("batch");
  ModelBuilder mb(module);
  Value x = mb.input("input", {batch, options.get("input")}, mb.f32());
  for (int64_t layer = 0; layer < options.get("layers"); ++layer)
    x = mb.relu(
        mb.linear(x, options.get("hidden"), "fc" + std::to_string(layer)));
  Value logits = mb.linear(x, options.get("classes"), "classifier");
  Value labels = mb.input("labels", {batch}, mb.i64(), options.get("classes"));
  return mb.finish(mb.softmaxCrossEntropy(logits, labels), error);
}

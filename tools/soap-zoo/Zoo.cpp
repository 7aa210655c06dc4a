//===- Zoo.cpp - the registry of models -----------------------------------===//

#include "soap/zoo/Zoo.h"

#include "Models.h"

#include "soap/Dialect/SoapDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Verifier.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/raw_ostream.h"

#include <tuple>

using namespace mlir;
using namespace soap::zoo;

/// The largest value any option takes: sizes beyond it would overflow the
/// element counts of the tensors they shape.
static constexpr int64_t kMaxOptionValue = int64_t(1) << 24;

int64_t ModelOptions::get(StringRef name) const {
  for (const ModelOption &option : options)
    if (option.name == name)
      return option.value;
  llvm::report_fatal_error("soap-zoo: a model asked for option '" + name +
                           "' it does not declare");
}

bool ModelOptions::has(StringRef name) const {
  return llvm::any_of(
      options, [&](const ModelOption &option) { return option.name == name; });
}

LogicalResult ModelOptions::set(StringRef name, int64_t value,
                                std::string &error) {
  for (ModelOption &option : options) {
    if (option.name != name)
      continue;
    if (value < 1 || value > kMaxOptionValue) {
      error = ("--" + name + " must be between 1 and " +
               Twine(kMaxOptionValue) + ", got " + Twine(value))
                  .str();
      return failure();
    }
    option.value = value;
    return success();
  }
  error =
      ("unknown option --" + name + " (this model takes " + flagList() + ")")
          .str();
  return failure();
}

std::string ModelOptions::flagList() const {
  std::string flags;
  for (const ModelOption &option : options)
    flags += (flags.empty() ? "--" : ", --") + option.name;
  return flags;
}

//===----------------------------------------------------------------------===//
// The registry
//===----------------------------------------------------------------------===//

// Option descriptions shared by several models.
static constexpr const char *kBatch = "samples per batch";
static constexpr const char *kImage =
    "image height and width (3 channels, NCHW)";
static constexpr const char *kClasses = "output classes";
static constexpr const char *kSeq = "tokens per sequence";
static constexpr const char *kVocab = "vocabulary size";
static constexpr const char *kLayers = "stacked layers";
static constexpr const char *kHeads = "attention heads (must divide --hidden)";
static constexpr const char *kMaxPos =
    "rows of the position embedding (>= --seq)";

static std::vector<ModelInfo> makeRegistry() {
  std::vector<ModelInfo> models;
  models.push_back(
      {"mlp",
       "multilayer perceptron: ReLU hidden layers and a linear classifier",
       {{"batch", 64, kBatch},
        {"input", 784, "input features"},
        {"hidden", 1024, "units per hidden layer"},
        {"layers", 2, "hidden layers"},
        {"classes", 10, kClasses}},
       std::nullopt,
       buildMlp});
  models.push_back(
      {"alexnet",
       "AlexNet (torchvision layout): 5 convolutions, 3 max pools, 3 fully "
       "connected layers",
       {{"batch", 64, kBatch},
        {"image", 224, kImage},
        {"classes", 1000, kClasses},
        {"width", 64, "channels of the first convolution (others scale)"},
        {"hidden", 4096, "units of the two hidden fully connected layers"}},
       61100840,
       buildAlexNet});
  models.push_back(
      {"vgg16",
       "VGG-16 (configuration D): 13 3x3 convolutions, 5 max pools, 3 fully "
       "connected layers",
       {{"batch", 64, kBatch},
        {"image", 224, kImage},
        {"classes", 1000, kClasses},
        {"width", 64, "channels of the first stage (others scale)"},
        {"hidden", 4096, "units of the two hidden fully connected layers"},
        {"depth", 16, "weight layers: 11, 13, 16 or 19"}},
       138357544,
       buildVgg});
  for (auto [name, depth, count] : {std::tuple{"resnet50", 50, 25557032},
                                    std::tuple{"resnet101", 101, 44549160}}) {
    models.push_back(
        {name,
         std::string("ResNet-") + std::to_string(depth) +
             " (v1.5): bottleneck blocks with training-mode batch norm",
         {{"batch", 64, kBatch},
          {"image", 224, kImage},
          {"classes", 1000, kClasses},
          {"width", 64, "channels of the stem (others scale)"},
          {"depth", depth, "layers: 18, 34, 50, 101 or 152"}},
         count,
         buildResNet});
  }
  models.push_back(
      {"inception_v3",
       "Inception-v3 without the auxiliary classifier: conv + batch norm "
       "stem, 11 inception modules",
       {{"batch", 64, kBatch},
        {"image", 299, "image height and width (3 channels, NCHW; >= 75)"},
        {"classes", 1000, kClasses},
        {"width", 32, "channels of the first convolution (others scale)"}},
       23834568,
       buildInceptionV3});
  models.push_back(
      {"rnntc",
       "RNN text classifier: embedding, stacked LSTMs unrolled over the "
       "sequence, a classifier on the last state",
       {{"batch", 64, kBatch},
        {"seq", 20, kSeq},
        {"vocab", 20480, kVocab},
        {"embed", 2048, "embedding width"},
        {"hidden", 2048, "LSTM state width"},
        {"layers", 4, kLayers},
        {"classes", 2, kClasses}},
       std::nullopt,
       buildRnnTc});
  models.push_back(
      {"rnnlm",
       "RNN language model: embedding, stacked LSTMs, a softmax over the "
       "vocabulary at every step",
       {{"batch", 64, kBatch},
        {"seq", 20, kSeq},
        {"vocab", 10000, kVocab},
        {"embed", 2048, "embedding width"},
        {"hidden", 2048, "LSTM state width"},
        {"layers", 2, kLayers}},
       std::nullopt,
       buildRnnLm});
  models.push_back(
      {"nmt",
       "neural machine translation: LSTM encoder, LSTM decoder with global "
       "attention over the encoder states, a softmax at every target step",
       {{"batch", 64, kBatch},
        {"seq", 20, "tokens per source and per target sequence"},
        {"vocab", 20480, "source and target vocabulary size"},
        {"embed", 2048, "embedding width"},
        {"hidden", 2048, "LSTM state width"},
        {"layers", 2, "LSTM layers of the encoder and of the decoder"}},
       std::nullopt,
       buildNmt});
  models.push_back(
      {"bert-base",
       "BERT-base encoder (post-norm) with the pooler and a sequence "
       "classifier",
       {{"batch", 32, kBatch},
        {"seq", 128, kSeq},
        {"vocab", 30522, kVocab},
        {"hidden", 768, "model width (the feed-forward is 4x)"},
        {"layers", 12, kLayers},
        {"heads", 12, kHeads},
        {"max-pos", 512, kMaxPos},
        {"types", 2, "token types (segments)"},
        {"classes", 2, kClasses}},
       110000000,
       buildTransformerEncoder});
  for (auto [name, hidden, layers, heads, count] :
       {std::tuple{"gpt2", 768, 12, 12, 124439808},
        std::tuple{"gpt2-medium", 1024, 24, 16, 354823168},
        std::tuple{"gpt2-large", 1280, 36, 20, 774030080}}) {
    models.push_back(
        {name,
         std::string("GPT-2 ") +
             (hidden == 768    ? "small"
              : hidden == 1024 ? "medium"
                               : "large") +
             " decoder (pre-norm, causal) with a tied output embedding",
         {{"batch", 8, kBatch},
          {"seq", 1024, kSeq},
          {"vocab", 50257, kVocab},
          {"hidden", hidden, "model width (the feed-forward is 4x)"},
          {"layers", layers, kLayers},
          {"heads", heads, kHeads},
          {"max-pos", 1024, kMaxPos}},
         count,
         buildTransformerDecoder});
  }
  return models;
}

ArrayRef<ModelInfo> soap::zoo::getModels() {
  static const std::vector<ModelInfo> models = makeRegistry();
  return models;
}

const ModelInfo *soap::zoo::lookupModel(StringRef name) {
  for (const ModelInfo &model : getModels())
    if (model.name == name)
      return &model;
  return nullptr;
}

void soap::zoo::registerZooDialects(DialectRegistry &registry) {
  registry.insert<func::FuncDialect, arith::ArithDialect, math::MathDialect,
                  linalg::LinalgDialect, tensor::TensorDialect,
                  soap::SoapDialect>();
}

OwningOpRef<ModuleOp> soap::zoo::buildModel(MLIRContext &context,
                                            const ModelInfo &model,
                                            const ModelOptions &options,
                                            std::string &error) {
  DialectRegistry registry;
  registerZooDialects(registry);
  context.appendDialectRegistry(registry);
  context.loadDialect<func::FuncDialect, arith::ArithDialect, math::MathDialect,
                      linalg::LinalgDialect, tensor::TensorDialect,
                      soap::SoapDialect>();

  OwningOpRef<ModuleOp> module =
      ModuleOp::create(UnknownLoc::get(&context), StringRef(model.name));
  if (failed(model.build(*module, options, error))) {
    error = model.name + ": " + error;
    return nullptr;
  }

  // A module that does not verify is a bug in the zoo, not a user error:
  // report what the verifier says.
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    os << diag.getLocation() << ": " << diag << "\n";
    return success();
  });
  if (failed(verify(*module))) {
    error = "internal error: the generated " + model.name +
            " model does not verify:\n" + diagnostics;
    return nullptr;
  }
  return module;
}

int64_t soap::zoo::countParameters(ModuleOp module) {
  int64_t count = 0;
  module.walk([&](func::FuncOp function) {
    for (unsigned i = 0; i < function.getNumArguments(); ++i) {
      if (!function.getArgAttr(i, SoapDialect::getParamAttrName()))
        continue;
      auto type = dyn_cast<RankedTensorType>(function.getArgument(i).getType());
      if (type && type.hasStaticShape())
        count += type.getNumElements();
    }
  });
  return count;
}

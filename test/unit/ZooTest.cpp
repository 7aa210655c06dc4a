//===- ZooTest.cpp - the model zoo ----------------------------------------===//
//
// Every model: its parameter count at the default sizes matches the
// published architecture (within 1%), and a tiny version builds, verifies,
// has the @loss signature, and is partitionable op by op with data
// parallelism available on every contraction and convolution.
//
//===----------------------------------------------------------------------===//

#include "soap/zoo/Zoo.h"
#include "soap/Dialect/DimensionKinds.h"
#include "soap/Dialect/Registration.h"
#include "soap/Dialect/SoapDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace mlir;
using namespace soap;
using namespace soap::zoo;

namespace {

/// Small sizes for every model (the same as test/tools/soap-zoo-models.test).
const llvm::StringMap<std::vector<std::pair<std::string, int64_t>>> &
tinyOptions() {
  using Options = std::vector<std::pair<std::string, int64_t>>;
  static const llvm::StringMap<Options> options = [] {
    Options cnn = {{"batch", 2}, {"classes", 4}, {"width", 8}};
    Options rnn = {{"batch", 2}, {"seq", 3},    {"vocab", 10},
                   {"embed", 8}, {"hidden", 8}, {"layers", 2}};
    Options transformer = {{"batch", 2},   {"seq", 8},    {"vocab", 32},
                           {"hidden", 16}, {"layers", 1}, {"heads", 2},
                           {"max-pos", 16}};
    llvm::StringMap<Options> map;
    map["mlp"] = {{"batch", 2},
                  {"input", 8},
                  {"hidden", 16},
                  {"layers", 1},
                  {"classes", 4}};
    map["alexnet"] = cnn;
    map["alexnet"].insert(map["alexnet"].end(),
                          {{"image", 64}, {"hidden", 16}});
    map["vgg16"] = cnn;
    map["vgg16"].insert(map["vgg16"].end(), {{"image", 32}, {"hidden", 16}});
    map["resnet50"] = cnn;
    map["resnet50"].push_back({"image", 32});
    map["resnet101"] = map["resnet50"];
    map["inception_v3"] = {
        {"batch", 2}, {"classes", 4}, {"width", 4}, {"image", 75}};
    map["rnntc"] = rnn;
    map["rnntc"].push_back({"classes", 2});
    map["rnnlm"] = rnn;
    map["nmt"] = rnn;
    map["bert-base"] = transformer;
    map["bert-base"].push_back({"classes", 2});
    for (const char *name : {"gpt2", "gpt2-medium", "gpt2-large"})
      map[name] = transformer;
    return map;
  }();
  return options;
}

/// "linalg.matmul at loc("fc6")", for failure messages.
std::string describe(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << op->getName() << " at " << op->getLoc();
  return text;
}

class ZooTest : public ::testing::Test {
protected:
  ZooTest() {
    DialectRegistry registry;
    registerZooDialects(registry);
    registerSoapDialects(registry); // the partitioning interface
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  OwningOpRef<ModuleOp> build(const ModelInfo &model,
                              const ModelOptions &options) {
    std::string error;
    OwningOpRef<ModuleOp> module = buildModel(context, model, options, error);
    EXPECT_TRUE(module) << error;
    return module;
  }

  ModelOptions tiny(const ModelInfo &model) {
    ModelOptions options = model.defaults;
    for (const auto &[name, value] : tinyOptions().lookup(model.name)) {
      std::string error;
      EXPECT_TRUE(succeeded(options.set(name, value, error))) << error;
    }
    return options;
  }

  MLIRContext context;
};

TEST_F(ZooTest, RegistryListsThePapersModelsAndTransformers) {
  for (const char *name : {"mlp", "alexnet", "inception_v3", "resnet50",
                           "resnet101", "rnntc", "rnnlm", "nmt", "vgg16",
                           "bert-base", "gpt2", "gpt2-medium", "gpt2-large"})
    EXPECT_NE(lookupModel(name), nullptr) << name;
  EXPECT_EQ(lookupModel("resnet"), nullptr);
  for (const ModelInfo &model : getModels())
    EXPECT_TRUE(tinyOptions().count(model.name))
        << model.name << " needs tiny options in this test";
}

TEST_F(ZooTest, DefaultParameterCountsMatchPublishedArchitectures) {
  int checked = 0;
  for (const ModelInfo &model : getModels()) {
    if (!model.publishedParameters)
      continue;
    OwningOpRef<ModuleOp> module = build(model, model.defaults);
    ASSERT_TRUE(module);
    double count = static_cast<double>(countParameters(*module));
    double published = static_cast<double>(*model.publishedParameters);
    EXPECT_LE(std::abs(count - published), 0.01 * published)
        << model.name << ": " << count << " parameters, published "
        << published;
    ++checked;
  }
  EXPECT_EQ(checked, 9); // the CNNs, BERT-base and the three GPT-2s
}

TEST_F(ZooTest, ExactParameterCounts) {
  // torchvision's exact counts, and BERT-base with a 2-way classifier as
  // Hugging Face's BertForSequenceClassification counts it.
  struct Case {
    const char *model;
    std::vector<std::pair<std::string, int64_t>> options;
    int64_t parameters;
  };
  const Case cases[] = {
      // 4*8 + 8 + 8*3 + 3
      {"mlp", {{"input", 4}, {"hidden", 8}, {"layers", 1}, {"classes", 3}}, 67},
      {"alexnet", {}, 61100840},
      {"vgg16", {}, 138357544},
      {"vgg16", {{"depth", 19}}, 143667240},
      {"resnet50", {}, 25557032},
      {"resnet50", {{"depth", 18}}, 11689512},
      {"resnet101", {}, 44549160},
      {"inception_v3", {}, 23834568},
      {"bert-base", {}, 109483778},
      {"gpt2", {}, 124439808},
      {"gpt2-medium", {}, 354823168},
      {"gpt2-large", {}, 774030080},
  };
  for (const Case &c : cases) {
    const ModelInfo *model = lookupModel(c.model);
    ASSERT_NE(model, nullptr);
    ModelOptions options = model->defaults;
    for (const auto &[name, value] : c.options) {
      std::string error;
      ASSERT_TRUE(succeeded(options.set(name, value, error))) << error;
    }
    OwningOpRef<ModuleOp> module = build(*model, options);
    ASSERT_TRUE(module);
    EXPECT_EQ(countParameters(*module), c.parameters) << c.model;
  }
}

TEST_F(ZooTest, LstmParameterCounts) {
  // Embedding V*E, per layer (in + H) * 4H + 4H, and the heads.
  const int64_t v = 10, e = 8, h = 8;
  int64_t layer0 = (e + h) * 4 * h + 4 * h, layer1 = (h + h) * 4 * h + 4 * h;
  std::pair<const char *, int64_t> cases[] = {
      {"rnntc", v * e + layer0 + layer1 + (h * 2 + 2)},
      {"rnnlm", v * e + layer0 + layer1 + (h * v + v)},
      // two embeddings and two stacks, W_c [2H, H], the generator
      {"nmt", 2 * (v * e + layer0 + layer1) + 2 * h * h + (h * v + v)},
  };
  for (auto [name, expected] : cases) {
    const ModelInfo *model = lookupModel(name);
    ASSERT_NE(model, nullptr);
    OwningOpRef<ModuleOp> module = build(*model, tiny(*model));
    ASSERT_TRUE(module);
    EXPECT_EQ(countParameters(*module), expected) << name;
  }
}

TEST_F(ZooTest, TinyModelsBuildVerifyAndPartition) {
  for (const ModelInfo &model : getModels()) {
    SCOPED_TRACE(model.name);
    ModelOptions options = tiny(model);
    OwningOpRef<ModuleOp> module = build(model, options);
    ASSERT_TRUE(module);

    // @loss(params..., inputs..., labels) -> tensor<f32>
    auto loss = module->lookupSymbol<func::FuncOp>("loss");
    ASSERT_TRUE(loss);
    ASSERT_EQ(loss.getNumResults(), 1u);
    auto result = dyn_cast<RankedTensorType>(loss.getResultTypes()[0]);
    ASSERT_TRUE(result);
    EXPECT_EQ(result.getRank(), 0);
    EXPECT_TRUE(result.getElementType().isF32());
    bool seenInput = false;
    unsigned inputs = 0;
    for (unsigned i = 0; i < loss.getNumArguments(); ++i) {
      bool isParam = static_cast<bool>(
          loss.getArgAttr(i, SoapDialect::getParamAttrName()));
      auto type = cast<RankedTensorType>(loss.getArgument(i).getType());
      if (isParam) {
        EXPECT_FALSE(seenInput) << "parameter " << i << " after an input";
        EXPECT_TRUE(type.getElementType().isF32());
        continue;
      }
      seenInput = true;
      ++inputs;
      EXPECT_EQ(type.getDimSize(0), options.get("batch")) << "argument " << i;
    }
    EXPECT_GE(inputs, 2u); // data and labels

    // Every op that computes a tensor is partitionable; every contraction
    // and convolution can be split along the batch, and along a parameter
    // dimension when it reads a parameter.
    DimensionKindAnalysis kinds(*module);
    int contractions = 0;
    module->walk([&](Operation *op) {
      if (op->getParentOfType<linalg::LinalgOp>() ||
          op->hasTrait<OpTrait::ConstantLike>() ||
          !llvm::any_of(op->getResultTypes(), llvm::IsaPred<TensorType>))
        return;
      auto partitionable = dyn_cast<PartitionableOpInterface>(op);
      ASSERT_TRUE(partitionable) << "not partitionable: " << describe(op);
      EXPECT_FALSE(partitionable.getUnsupportedReason()) << describe(op);
      auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
      if (!linalgOp || !(linalg::isaContractionOpInterface(linalgOp) ||
                         linalg::isaConvolutionOpInterface(linalgOp)))
        return;
      ++contractions;
      SmallVector<DimKind> loopKinds = kinds.getLoopKinds(partitionable);
      EXPECT_TRUE(llvm::is_contained(loopKinds, DimKind::Sample))
          << "no sample loop: " << describe(op);
      bool readsParameter = llvm::any_of(linalgOp.getDpsInputs(), [&](Value v) {
        return kinds.isParameter(v);
      });
      if (readsParameter) {
        EXPECT_TRUE(llvm::is_contained(loopKinds, DimKind::Parameter))
            << "no parameter loop: " << describe(op);
      }
    });
    EXPECT_GT(contractions, 0);
  }
}

TEST_F(ZooTest, OutputIsDeterministic) {
  for (const char *name : {"inception_v3", "nmt", "gpt2"}) {
    const ModelInfo *model = lookupModel(name);
    ASSERT_NE(model, nullptr);
    std::string first, second;
    llvm::raw_string_ostream firstOs(first), secondOs(second);
    build(*model, tiny(*model))->print(firstOs);
    build(*model, tiny(*model))->print(secondOs);
    EXPECT_EQ(first, second) << name;
  }
}

TEST_F(ZooTest, OptionsRejectUnknownNamesAndNonPositiveValues) {
  ModelOptions options = lookupModel("alexnet")->defaults;
  std::string error;
  EXPECT_TRUE(failed(options.set("seq", 4, error)));
  EXPECT_NE(error.find("unknown option --seq"), std::string::npos) << error;
  EXPECT_NE(error.find("--image"), std::string::npos) << error;
  EXPECT_TRUE(failed(options.set("batch", 0, error)));
  EXPECT_NE(error.find("--batch must be between 1 and"), std::string::npos)
      << error;
  EXPECT_EQ(options.get("batch"), 64);
  EXPECT_TRUE(succeeded(options.set("batch", 3, error)));
  EXPECT_EQ(options.get("batch"), 3);
}

TEST_F(ZooTest, InvalidSizesAreReportedNotBuilt) {
  struct Case {
    const char *model, *option;
    int64_t value;
    const char *message;
  };
  const Case cases[] = {
      {"alexnet", "image", 16, "use a larger --image"},
      {"inception_v3", "image", 64, "Mixed_7a"},
      {"gpt2", "heads", 5, "--heads 5 does not divide --hidden 768"},
      {"bert-base", "seq", 1024, "--seq 1024 is longer than --max-pos 512"},
      {"resnet50", "depth", 42, "--depth must be 18, 34, 50, 101 or 152"},
      {"vgg16", "depth", 12, "--depth must be 11, 13, 16 or 19"},
  };
  for (const Case &c : cases) {
    const ModelInfo *model = lookupModel(c.model);
    ASSERT_NE(model, nullptr);
    ModelOptions options = model->defaults;
    std::string error;
    ASSERT_TRUE(succeeded(options.set(c.option, c.value, error)));
    EXPECT_FALSE(buildModel(context, *model, options, error)) << c.model;
    EXPECT_NE(error.find(c.message), std::string::npos) << error;
  }
}

} // namespace

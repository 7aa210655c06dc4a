//===- Zoo.h - benchmark models as MLIR -------------------------*- C++ -*-===//
//
// The model zoo: the FlexFlow paper's six networks (AlexNet, Inception-v3,
// ResNet-101, RNNTC, RNNLM, NMT), ResNet-50, VGG-16, an MLP, and transformer
// encoders and decoders (BERT-base, GPT-2 small/medium/large), built as
// linalg-on-tensors MLIR. Each model is one function, `@loss`, whose
// arguments are the parameters (marked `{soap.param}`), then the inputs, then
// the labels, and whose result is the mean softmax cross-entropy loss, a
// tensor<f32>. See docs/zoo.md for every model's structure and conventions.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_ZOO_ZOO_H
#define SOAP_ZOO_ZOO_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/LogicalResult.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir {
class DialectRegistry;
class MLIRContext;
} // namespace mlir

namespace soap::zoo {

/// One size option of a model (`--batch 64`): its flag name without the
/// dashes, its value, and what it means.
struct ModelOption {
  std::string name;
  int64_t value;
  std::string help;
};

/// The size options of one model, in the order `--list` shows them. Starts
/// from a model's defaults; `set` changes one of them.
class ModelOptions {
public:
  ModelOptions() = default;
  ModelOptions(std::initializer_list<ModelOption> options) : options(options) {}

  /// The value of option `name`; the option must exist (a model asks only
  /// for the options it declares).
  int64_t get(llvm::StringRef name) const;

  /// Sets option `name`; fails with a message naming the problem when the
  /// model has no such option or the value is out of range (every option is
  /// a positive count).
  llvm::LogicalResult set(llvm::StringRef name, int64_t value,
                          std::string &error);

  bool has(llvm::StringRef name) const;
  /// The flags, for messages: "--batch, --image, --classes".
  std::string flagList() const;
  llvm::ArrayRef<ModelOption> all() const { return options; }

private:
  std::vector<ModelOption> options;
};

/// Builds a model's `@loss` function into `module` from `options`. Fails
/// with a message in `error` when the options do not describe a valid model
/// (an image too small for the network, heads that do not divide the hidden
/// size, ...).
using BuildModelFn = llvm::LogicalResult (*)(mlir::ModuleOp module,
                                             const ModelOptions &options,
                                             std::string &error);

/// One entry of the registry.
struct ModelInfo {
  std::string name;
  std::string description;
  ModelOptions defaults;
  /// The parameter count of the published architecture at the default
  /// sizes, when there is one to compare with.
  std::optional<int64_t> publishedParameters;
  BuildModelFn build;
};

/// Every model, in the order `soap-zoo --list` prints them.
llvm::ArrayRef<ModelInfo> getModels();

/// The model called `name`, or null.
const ModelInfo *lookupModel(llvm::StringRef name);

/// Registers the dialects the zoo's models use (func, arith, math, linalg,
/// tensor, and soap for the `{soap.param}` markers).
void registerZooDialects(mlir::DialectRegistry &registry);

/// Builds `model` with `options` into a new module named after the model and
/// verifies it. Returns null with a message in `error` when the options are
/// invalid or (a bug) the module does not verify.
mlir::OwningOpRef<mlir::ModuleOp> buildModel(mlir::MLIRContext &context,
                                             const ModelInfo &model,
                                             const ModelOptions &options,
                                             std::string &error);

/// The number of scalar parameters: the elements of every function argument
/// marked `{soap.param}`.
int64_t countParameters(mlir::ModuleOp module);

} // namespace soap::zoo

#endif // SOAP_ZOO_ZOO_H

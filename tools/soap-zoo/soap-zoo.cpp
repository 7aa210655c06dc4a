//===- soap-zoo.cpp - print benchmark models as MLIR ----------------------===//
//
//   soap-zoo NAME [--OPTION VALUE]... [-o FILE] [--locations]
//   soap-zoo --list
//   soap-zoo NAME --help
//
//===----------------------------------------------------------------------===//

#include "soap/zoo/Zoo.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Support/FileUtilities.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

using namespace soap::zoo;

static constexpr const char *kUsage =
    "usage: soap-zoo NAME [--OPTION VALUE]... [-o FILE] [--locations]\n"
    "       soap-zoo --list\n"
    "       soap-zoo NAME --help\n";

/// 1234567 -> "1,234,567".
static std::string withCommas(int64_t value) {
  std::string digits = std::to_string(value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return out;
}

static std::string flagsOf(const ModelOptions &options) {
  std::string flags;
  for (const ModelOption &option : options.all())
    flags += (flags.empty() ? "--" : " --") + option.name + " " +
             std::to_string(option.value);
  return flags;
}

static void printHelp(llvm::raw_ostream &os) {
  os << "soap-zoo: prints a benchmark model as MLIR (linalg, tensor, arith "
        "and math\non tensors).\n\n"
     << kUsage
     << "\nThe model is one function, @loss: its arguments are the "
        "parameters (marked\n{soap.param}), then the inputs (f32 images "
        "[batch, 3, H, W] or i64 token ids\n[batch, seq]), then the labels "
        "(i64 class or next-token ids); it returns\nthe mean softmax "
        "cross-entropy, a tensor<f32>.\n\n"
        "  --list         list the models, their default options and "
        "parameter counts\n"
        "  NAME --help    describe one model's options\n"
        "  --OPTION N     change a size (every option is a positive "
        "integer)\n"
        "  -o FILE        write the module to FILE instead of stdout\n"
        "  --locations    print each op's name location (layer1.0.conv2)\n\n"
        "Models:";
  for (const ModelInfo &model : getModels())
    os << " " << model.name;
  os << "\nSee docs/zoo.md for each model's structure.\n";
}

static void printModelHelp(const ModelInfo &model, llvm::raw_ostream &os) {
  os << model.name << ": " << model.description << "\n\noptions:\n";
  for (const ModelOption &option : model.defaults.all())
    os << llvm::formatv("  --{0,-10} {1,-7} {2}\n", option.name, option.value,
                        option.help);
}

static int listModels(llvm::raw_ostream &os) {
  mlir::MLIRContext context;
  for (const ModelInfo &model : getModels()) {
    std::string error;
    mlir::OwningOpRef<mlir::ModuleOp> module =
        buildModel(context, model, model.defaults, error);
    if (!module) {
      llvm::errs() << "soap-zoo: " << error << "\n";
      return 1;
    }
    os << llvm::formatv("{0,-14}{1}\n", model.name, model.description);
    os << llvm::formatv("{0,-14}{1}\n", "", flagsOf(model.defaults));
    os << llvm::formatv("{0,-14}parameters: {1}", "",
                        withCommas(countParameters(*module)));
    if (model.publishedParameters)
      os << " (published: " << withCommas(*model.publishedParameters) << ")";
    os << "\n";
  }
  return 0;
}

static int fail(const llvm::Twine &message) {
  llvm::errs() << "soap-zoo: " << message << "\n";
  return 1;
}

int main(int argc, char **argv) {
  std::vector<llvm::StringRef> args(argv + 1, argv + argc);
  if (args.empty()) {
    llvm::errs() << kUsage << "(soap-zoo --help explains more)\n";
    return 1;
  }
  if (args[0] == "--help" || args[0] == "-h") {
    printHelp(llvm::outs());
    return 0;
  }
  if (args[0] == "--list")
    return listModels(llvm::outs());
  if (args[0].starts_with("-"))
    return fail("expected a model name before '" + args[0] +
                "' (soap-zoo --list shows them)");

  const ModelInfo *model = lookupModel(args[0]);
  if (!model)
    return fail("unknown model '" + args[0] + "' (soap-zoo --list shows them)");

  ModelOptions options = model->defaults;
  std::string outputPath = "-";
  bool locations = false;
  for (size_t i = 1; i < args.size(); ++i) {
    llvm::StringRef arg = args[i];
    if (arg == "--help" || arg == "-h") {
      printModelHelp(*model, llvm::outs());
      return 0;
    }
    if (arg == "--locations") {
      locations = true;
      continue;
    }
    if (arg == "-o") {
      if (i + 1 == args.size())
        return fail("-o needs a file name");
      outputPath = args[++i].str();
      continue;
    }
    if (!arg.consume_front("--"))
      return fail("unexpected argument '" + arg + "' (options look like " +
                  "--batch 8)");
    auto [name, text] = arg.split('=');
    if (!arg.contains('=')) {
      if (i + 1 == args.size())
        return fail("--" + name + " needs a value");
      text = args[++i];
    }
    if (!options.has(name))
      return fail(model->name + ": unknown option --" + name + " (" +
                  model->name + " takes " + options.flagList() + ")");
    int64_t value;
    if (text.getAsInteger(10, value))
      return fail("--" + name + " expects a positive integer, got '" + text +
                  "'");
    std::string error;
    if (failed(options.set(name, value, error)))
      return fail(model->name + ": " + error);
  }

  mlir::MLIRContext context;
  std::string error;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      buildModel(context, *model, options, error);
  if (!module)
    return fail(error);

  std::string openError;
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputPath, &openError);
  if (!output)
    return fail(openError);
  // Values are named after their layers (%layer1.0.conv2, %fc.weight).
  mlir::OpPrintingFlags flags;
  flags.printNameLocAsPrefix();
  if (locations)
    flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
  output->os() << "// soap-zoo " << model->name << " " << flagsOf(options)
               << "\n// parameters: " << withCommas(countParameters(*module))
               << "\n";
  module->print(output->os(), flags);
  output->os() << "\n";
  output->keep();
  return 0;
}

//===- soap-opt.cpp - the SOAP optimizer driver ---------------------------===//
//
// Upstream MLIR's dialects and passes plus SOAP's, behind mlir-opt's command
// line: `soap-opt model.mlir --soap-print-dims`.
//
//===----------------------------------------------------------------------===//

#include "soap/Dialect/Registration.h"
#include "soap/codegen/CpuLowering.h"
#include "soap/support/AtomicFile.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CrashRecoveryContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include "mlir/Support/FileUtilities.h"

#include <atomic>

#include <vector>

/// The option names in a pass's options string ("a=1 b={x y} c"): the
/// keys at the top level, values skipped through their braces and quotes.
static std::vector<std::string> optionNames(llvm::StringRef text) {
  std::vector<std::string> names;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && text[i] == ' ')
      ++i;
    size_t start = i;
    while (i < text.size() && text[i] != '=' && text[i] != ' ')
      ++i;
    if (i > start)
      names.push_back(text.slice(start, i).str());
    if (i < text.size() && text[i] == '=') {
      int depth = 0;
      char quote = 0;
      for (++i; i < text.size(); ++i) {
        char c = text[i];
        if (quote) {
          quote = c == quote ? 0 : quote;
        } else if (c == '"' || c == '\'') {
          quote = c;
        } else if (c == '{') {
          ++depth;
        } else if (c == '}') {
          --depth;
        } else if (c == ' ' && depth <= 0) {
          break;
        }
      }
    }
  }
  return names;
}

/// Checks the options of every `--<pass>=<options>` on the command line
/// before the driver runs: a misspelt option name is named with the pass,
/// the pass's options and the closest one (mlir-opt's own parser printed
/// nothing for --soap-search="machien=x" and exited 1).
static bool checkPassOptions(int argc, char **argv) {
  bool ok = true;
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg(argv[i]);
    if (!arg.consume_front("-"))
      continue;
    arg.consume_front("-");
    auto [name, value] = arg.split('=');
    if (value.empty() && !arg.contains('='))
      continue;
    const mlir::PassInfo *info = mlir::PassInfo::lookup(name);
    if (!info)
      continue;
    // The pass's options, as its default instance prints them.
    auto ignore = [](const llvm::Twine &) { return mlir::failure(); };
    mlir::OpPassManager defaults("builtin.module",
                                 mlir::OpPassManager::Nesting::Implicit);
    if (mlir::failed(info->addToPipeline(defaults, "", ignore)))
      continue;
    std::string printed;
    llvm::raw_string_ostream os(printed);
    defaults.printAsTextualPipeline(os);
    size_t open = printed.find('{');
    size_t close = printed.rfind('}');
    std::vector<std::string> known;
    if (open != std::string::npos && close != std::string::npos && close > open)
      known = optionNames(llvm::StringRef(printed).slice(open + 1, close));
    std::vector<std::string> unknown;
    for (const std::string &option : optionNames(value))
      if (!llvm::is_contained(known, option))
        unknown.push_back(option);
    if (unknown.empty())
      continue; // A bad value is left to the pass's own message.
    // A list option without values is not printed: if the pass takes the
    // options as given, the names were its own.
    mlir::OpPassManager given("builtin.module",
                              mlir::OpPassManager::Nesting::Implicit);
    if (mlir::succeeded(info->addToPipeline(given, value, ignore)))
      continue;
    for (const std::string &option : unknown) {
      llvm::errs() << "error: --" << name << ": no option '" << option << "'";
      std::string closest;
      unsigned best = 3;
      for (const std::string &candidate : known) {
        unsigned distance = llvm::StringRef(candidate).edit_distance(option);
        if (distance < best) {
          best = distance;
          closest = candidate;
        }
      }
      if (!closest.empty())
        llvm::errs() << " (did you mean '" << closest << "'?)";
      if (known.empty())
        llvm::errs() << "; it takes no options\n";
      else
        llvm::errs() << "; its options: " << llvm::join(known, ", ")
                     << " (soap-opt --help describes them)\n";
      ok = false;
    }
  }
  return ok;
}

/// Whether the input has been parsed: set when the pass pipeline is set up,
/// which mlir-opt's driver does right after parsing.
static std::atomic<bool> inputParsed{false};

/// mlir-opt's driver on one input and output file, as upstream's
/// MlirOptMain(argc, argv, ...) runs it, with the pass pipeline's setup
/// noting that parsing is over.
static mlir::LogicalResult runDriver(int argc, char **argv,
                                     llvm::StringRef input,
                                     llvm::StringRef output,
                                     mlir::DialectRegistry &registry) {
  mlir::MlirOptMainConfig config =
      mlir::MlirOptMainConfig::createFromCLOptions();
  if (config.shouldShowDialects() || config.shouldListPasses())
    return mlir::MlirOptMain(argc, argv, input, output, registry);
  mlir::MlirOptMainConfig given = config;
  config.setPassPipelineSetupFn([given](mlir::PassManager &pm) {
    inputParsed = true;
    // From here on a crash is LLVM's usual one: a stack dump, then the
    // signal.
    llvm::CrashRecoveryContext::Disable();
    return given.setupPassPipeline(pm);
  });
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> file = mlir::openInputFile(input, &error);
  if (!file) {
    llvm::errs() << error << "\n";
    return mlir::failure();
  }
  std::unique_ptr<llvm::ToolOutputFile> out =
      mlir::openOutputFile(output, &error);
  if (!out) {
    llvm::errs() << error << "\n";
    return mlir::failure();
  }
  if (mlir::failed(
          mlir::MlirOptMain(out->os(), std::move(file), registry, config)))
    return mlir::failure();
  out->keep();
  return mlir::success();
}

/// runDriver, with a crash while parsing turned into an error. MLIR 22's
/// parser segfaults on some malformed input (an `array<index: ...>`
/// attribute, llvm/llvm-project#179045; an out-of-range integer in
/// linalg.transpose's permutation): the user gets a message naming the
/// input instead of a stack dump. A crash after parsing (in a pass) still
/// crashes with its stack dump: that is a bug to report.
static mlir::LogicalResult runGuarded(int argc, char **argv,
                                      llvm::StringRef input,
                                      llvm::StringRef output,
                                      mlir::DialectRegistry &registry) {
#if defined(__SANITIZE_ADDRESS__)
  // Under AddressSanitizer (scripts/sanitize.sh) a crash is its report and
  // its exit status, never an error message.
  return runDriver(argc, argv, input, output, registry);
#else
  llvm::CrashRecoveryContext::Enable();
  llvm::CrashRecoveryContext context;
  mlir::LogicalResult result = mlir::failure();
  if (context.RunSafely(
          [&] { result = runDriver(argc, argv, input, output, registry); }))
    return result;
  if (!inputParsed) {
    llvm::errs() << "error: MLIR's parser crashed reading '" << input
                 << "': a bug of Debian's MLIR 22 on malformed input (e.g. "
                    "an array<index: ...> attribute, llvm/llvm-project#179045, "
                    "or an integer too large for linalg.transpose's "
                    "permutation); the errors above, if any, say where\n";
    llvm::errs().flush();
    llvm::sys::Process::Exit(1, /*NoCleanup=*/true);
  }
  return mlir::failure(); // Not reached: past parsing, crashes are not caught.
#endif
}

/// Runs mlir-opt's driver with its output in a temporary file, then puts
/// that file in place with soap::writeFileAtomically: a failed run leaves
/// `-o F` as it was (never empty, never half written), a link is written
/// through, a device such as /dev/null is written, not replaced.
static mlir::LogicalResult optMain(int argc, char **argv,
                                   mlir::DialectRegistry &registry) {
  auto [input, output] = mlir::registerAndParseCLIOptions(
      argc, argv,
      "SOAP optimizer driver: partitions tensor programs over the Sample, "
      "Operator, Attribute and Parameter dimensions.\n"
      "SOAP passes are the --soap-* options below.\n",
      registry);
  if (output == "-")
    return runGuarded(argc, argv, input, output, registry);
  llvm::SmallString<128> temporary;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
          "soap-opt", "mlir", temporary)) {
    llvm::errs() << "error: cannot create a temporary file for '" << output
                 << "': " << ec.message() << "\n";
    return mlir::failure();
  }
  mlir::LogicalResult result =
      runGuarded(argc, argv, input, temporary, registry);
  if (mlir::succeeded(result)) {
    auto bytes = llvm::MemoryBuffer::getFile(temporary, /*IsText=*/false);
    std::string error;
    if (!bytes) {
      llvm::errs() << "error: cannot read back the output for '" << output
                   << "': " << bytes.getError().message() << "\n";
      result = mlir::failure();
    } else if (!soap::writeFileAtomically(output, (*bytes)->getBuffer().str(),
                                          error)) {
      llvm::errs() << "error: " << error << "\n";
      result = mlir::failure();
    }
  }
  llvm::sys::fs::remove(temporary);
  return result;
}

int main(int argc, char **argv) {
  // Stack dumps on a crash (upstream's MlirOptMain does the same).
  llvm::InitLLVM initLLVM(argc, argv);
  // An error names its location (file:line:col and the source line) and
  // is not followed by the op it is about: for SOAP's whole-module passes
  // that op is the module, thousands of lines. Upstream's default prints
  // it; --mlir-print-op-on-diagnostic=true still does.
  std::vector<char *> args(argv, argv + argc);
  bool chosen = false;
  for (int i = 1; i < argc; ++i)
    chosen |= llvm::StringRef(argv[i]).contains("mlir-print-op-on-diagnostic");
  static char noOpDump[] = "--mlir-print-op-on-diagnostic=false";
  if (!chosen)
    args.insert(args.begin() + 1, noOpDump);
  args.push_back(nullptr);
  argc = static_cast<int>(args.size()) - 1;
  argv = args.data();

  mlir::registerAllPasses();
  soap::registerSoapPasses();
  soap::registerLoweringPasses();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  soap::registerSoapDialects(registry);

  if (!checkPassOptions(argc, argv))
    return 1;
  return mlir::asMainReturnCode(optMain(argc, argv, registry));
}

//===- soap-opt.cpp - the SOAP optimizer driver ---------------------------===//
//
// Upstream MLIR's dialects and passes plus SOAP's, behind mlir-opt's command
// line: `soap-opt model.mlir --soap-print-dims`.
//
//===----------------------------------------------------------------------===//

#include "soap/Dialect/Registration.h"
#include "soap/support/AtomicFile.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <vector>

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
    return mlir::MlirOptMain(argc, argv, input, output, registry);
  llvm::SmallString<128> temporary;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
          "soap-opt", "mlir", temporary)) {
    llvm::errs() << "error: cannot create a temporary file for '" << output
                 << "': " << ec.message() << "\n";
    return mlir::failure();
  }
  mlir::LogicalResult result =
      mlir::MlirOptMain(argc, argv, input, temporary, registry);
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

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  soap::registerSoapDialects(registry);

  return mlir::asMainReturnCode(optMain(argc, argv, registry));
}

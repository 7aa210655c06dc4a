//===- soap-translate.cpp - the SOAP translation driver -------------------===//
//
// Upstream translations (--mlir-to-llvmir among them); programs may carry
// SOAP attributes and ops. --soap-to-executable builds a native executable
// from a module lowered by --soap-lower-cpu.
//
//===----------------------------------------------------------------------===//

#include "ToExecutable.h"
#include "soap/Dialect/Registration.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllTranslations.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "mlir/Tools/mlir-translate/Translation.h"

#include "llvm/Support/FileSystem.h"

#include <cstring>
#include <string>

/// The -o file of an --soap-to-executable run, which must become executable
/// (mlir-translate's output file is created without the x bits).
static std::string executableOutput(int argc, char **argv) {
  bool toExecutable = false;
  std::string output;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--soap-to-executable" || arg == "-soap-to-executable")
      toExecutable = true;
    else if (arg == "-o" && i + 1 < argc)
      output = argv[i + 1];
    else if (arg.rfind("-o=", 0) == 0 || arg.rfind("--o=", 0) == 0)
      output = arg.substr(arg.find('=') + 1);
  }
  return toExecutable && output != "-" ? output : std::string();
}

int main(int argc, char **argv) {
  mlir::registerAllTranslations();
  soap::registerToExecutableTranslation();
  mlir::TranslateFromMLIRRegistration verifyRegistration(
      "soap-verify", "Parse and verify a module with the SOAP dialect, then "
                     "print it back",
      [](mlir::Operation *op, llvm::raw_ostream &output) {
        op->print(output);
        return mlir::success();
      },
      [](mlir::DialectRegistry &registry) {
        mlir::registerAllDialects(registry);
        soap::registerSoapDialects(registry);
      });
  std::string executable = executableOutput(argc, argv);
  if (mlir::failed(mlir::mlirTranslateMain(argc, argv,
                                           "SOAP translation driver\n")))
    return 1;
  if (!executable.empty())
    llvm::sys::fs::setPermissions(executable, llvm::sys::fs::all_read |
                                                  llvm::sys::fs::all_exe |
                                                  llvm::sys::fs::owner_write);
  return 0;
}

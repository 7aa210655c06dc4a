//===- soap-translate.cpp - the SOAP translation driver -------------------===//
//
// Upstream translations (--mlir-to-llvmir among them); programs may carry
// SOAP attributes and ops. --soap-to-executable builds a native executable
// from a module lowered by --soap-lower-cpu.
//
//===----------------------------------------------------------------------===//

#include "ToExecutable.h"
#include "soap/Dialect/Registration.h"
#include "soap/support/AtomicFile.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllTranslations.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "mlir/Tools/mlir-translate/Translation.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

/// Where the -o file is named in argv: the index of the argument that
/// holds it and the offset of the name in it ("-o F" or "-o=F"); none for
/// standard output.
struct OutputArgument {
  int index = -1;
  size_t offset = 0;
};

static OutputArgument findOutput(int argc, char **argv, bool &toExecutable) {
  OutputArgument found;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--soap-to-executable" || arg == "-soap-to-executable")
      toExecutable = true;
    else if ((arg == "-o" || arg == "--o") && i + 1 < argc)
      found = {i + 1, 0};
    else if (arg.rfind("-o=", 0) == 0 || arg.rfind("--o=", 0) == 0)
      found = {i, arg.find('=') + 1};
  }
  if (found.index >= 0 &&
      std::string(argv[found.index] + found.offset) == "-")
    return {};
  return found;
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
  // mlir-translate's driver writes into a temporary file, which then goes
  // in place through soap::writeFileAtomically: a failed run leaves -o F as
  // it was, a link is written through, a device (/dev/null) is written,
  // never replaced or made executable; an executable gets mode 0755.
  bool toExecutable = false;
  OutputArgument output = findOutput(argc, argv, toExecutable);
  if (output.index < 0)
    return mlir::failed(
        mlir::mlirTranslateMain(argc, argv, "SOAP translation driver\n"));
  std::string target = argv[output.index] + output.offset;
  llvm::SmallString<128> temporary;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
          "soap-translate", "out", temporary)) {
    llvm::errs() << "error: cannot create a temporary file for '" << target
                 << "': " << ec.message() << "\n";
    return 1;
  }
  std::vector<char *> args(argv, argv + argc);
  std::string replaced =
      std::string(argv[output.index], output.offset) + temporary.str().str();
  args[output.index] = replaced.data();
  args.push_back(nullptr);
  int status = 0;
  if (mlir::failed(mlir::mlirTranslateMain(argc, args.data(),
                                           "SOAP translation driver\n"))) {
    status = 1;
  } else if (auto bytes =
                 llvm::MemoryBuffer::getFile(temporary, /*IsText=*/false)) {
    std::string error;
    if (!soap::writeFileAtomically(target, (*bytes)->getBuffer().str(), error,
                                   toExecutable ? 0755 : -1)) {
      llvm::errs() << "error: " << error << "\n";
      status = 1;
    }
  } else {
    llvm::errs() << "error: cannot read back the output for '" << target
                 << "': " << bytes.getError().message() << "\n";
    status = 1;
  }
  llvm::sys::fs::remove(temporary);
  return status;
}

//===- soap-opt.cpp - the SOAP optimizer driver ---------------------------===//
//
// Upstream MLIR's dialects and passes plus SOAP's, behind mlir-opt's command
// line: `soap-opt model.mlir --soap-print-dims`.
//
//===----------------------------------------------------------------------===//

#include "soap/Dialect/Registration.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

#include "llvm/ADT/StringRef.h"

#include <vector>

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

  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv,
      "SOAP optimizer driver: partitions tensor programs over the Sample, "
      "Operator, Attribute and Parameter dimensions.\n"
      "SOAP passes are the --soap-* options below.\n",
      registry));
}

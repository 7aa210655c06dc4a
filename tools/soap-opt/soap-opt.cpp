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

int main(int argc, char **argv) {
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

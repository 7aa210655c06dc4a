//===- soap-translate.cpp - the SOAP translation driver -------------------===//
//
// Upstream translations (--mlir-to-llvmir among them); programs may carry
// SOAP attributes and ops.
//
//===----------------------------------------------------------------------===//

#include "soap/Dialect/Registration.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllTranslations.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "mlir/Tools/mlir-translate/Translation.h"

int main(int argc, char **argv) {
  mlir::registerAllTranslations();
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
  return mlir::failed(mlir::mlirTranslateMain(
      argc, argv, "SOAP translation driver\n"));
}

//===- consumer.cpp - an MLIR compiler that embeds SOAP -------------------===//
//
// Parses a module, runs SOAP's --soap-print-dims through a textual pipeline,
// and prints every remark it produced. Exits non-zero on any failure.
//
//===----------------------------------------------------------------------===//

#include "soap/Dialect/Registration.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  if (argc != 2) {
    llvm::errs() << "usage: soap-consumer FILE.mlir\n";
    return 2;
  }
  mlir::DialectRegistry registry;
  registry.insert<mlir::func::FuncDialect, mlir::arith::ArithDialect>();
  soap::registerSoap(registry);
  mlir::MLIRContext context(registry);

  int remarks = 0;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    if (d.getSeverity() == mlir::DiagnosticSeverity::Remark)
      ++remarks;
    llvm::outs() << d.str() << "\n";
    return mlir::success();
  });

  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(argv[1], &context);
  if (!module)
    return 1;
  mlir::PassManager pm(&context);
  if (mlir::failed(mlir::parsePassPipeline("soap-print-dims", pm)) ||
      mlir::failed(pm.run(*module)))
    return 1;
  llvm::outs() << "remarks: " << remarks << "\n";
  return remarks > 0 ? 0 : 1;
}

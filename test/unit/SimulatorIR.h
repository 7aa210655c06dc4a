//===- SimulatorIR.h - op graphs from MLIR for unit tests -------*- C++ -*-===//
//
// A test fixture whose context has the func, arith and SOAP dialects: it
// parses MLIR (a string, or a file of the source tree) and builds the op
// graph of its target function, as --soap-simulate does.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_TEST_UNIT_SIMULATORIR_H
#define SOAP_TEST_UNIT_SIMULATORIR_H

#include "soap/Dialect/Registration.h"
#include "soap/graph/OpGraphBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace soap::test {

class SimulatorIR : public ::testing::Test {
protected:
  SimulatorIR() {
    mlir::DialectRegistry registry;
    registry.insert<mlir::func::FuncDialect, mlir::arith::ArithDialect>();
    registerSoapDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  OpGraph graphOf(const std::string &source) {
    module = mlir::parseSourceString<mlir::ModuleOp>(source, &context);
    EXPECT_TRUE(module);
    std::string error;
    auto func = findTargetFunction(*module, "", error);
    EXPECT_TRUE(func) << error;
    auto built = buildOpGraph(func, error);
    EXPECT_TRUE(built) << error;
    return built->graph;
  }

  OpGraph graphOfFile(const std::string &relative) {
    std::ifstream in(std::string(SOAP_SOURCE_DIR) + "/" + relative);
    std::stringstream buffer;
    buffer << in.rdbuf();
    return graphOf(buffer.str());
  }

public:
  /// The `skip`-th node (from 0) of op `name` in `g`, or -1.
  static int nodeOf(const OpGraph &g, const std::string &name, int skip = 0) {
    for (size_t n = 0; n < g.nodes.size(); ++n)
      if (g.nodes[n].opName == name && skip-- == 0)
        return static_cast<int>(n);
    return -1;
  }

protected:
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

} // namespace soap::test

#endif // SOAP_TEST_UNIT_SIMULATORIR_H

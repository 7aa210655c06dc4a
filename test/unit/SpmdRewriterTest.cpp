//===- SpmdRewriterTest.cpp - partitioning through the interface ---------===//
//
// --soap-partition hands every op to PartitionableOpInterface::partition:
// an op of another dialect that implements the interface is asked, and runs
// whole on every device when it declines; a linalg op without the interface
// (its models not registered) is refused by name.
//
//===----------------------------------------------------------------------===//

#include "soap/Dialect/SpmdRewriter.h"
#include "soap/Dialect/PartitionableInterface.h"
#include "soap/Dialect/Registration.h"
#include "soap/Dialect/SoapDialect.h"
#include "soap/Partition/Partition.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace soap;

namespace {

int partitionCalls = 0;

/// arith.addf on tensors as a partitionable op of a dialect SOAP does not
/// know: elementwise over the result's dimensions. Its partition declines.
struct TensorAddModel
    : PartitionableOpInterface::ExternalModel<TensorAddModel, arith::AddFOp> {
  SmallVector<int64_t> getLoopSizes(Operation *op) const {
    auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    return type ? SmallVector<int64_t>(type.getShape())
                : SmallVector<int64_t>();
  }
  SmallVector<utils::IteratorType> getLoopIteratorTypes(Operation *op) const {
    return SmallVector<utils::IteratorType>(getLoopSizes(op).size(),
                                            utils::IteratorType::parallel);
  }
  SmallVector<std::string> getLoopNames(Operation *op) const {
    SmallVector<std::string> names;
    for (size_t i = 0; i < getLoopSizes(op).size(); ++i)
      names.push_back("d" + std::to_string(i));
    return names;
  }
  SmallVector<OperandAccess> getOperandAccesses(Operation *op) const {
    AffineMap identity = AffineMap::getMultiDimIdentityMap(
        getLoopSizes(op).size(), op->getContext());
    return {{op->getOperand(0), identity, AccessRole::Read},
            {op->getOperand(1), identity, AccessRole::Read},
            {op->getResult(0), identity, AccessRole::Write}};
  }
  double getFlopsPerIteration(Operation *) const { return 1; }
  LogicalResult partition(Operation *, SpmdRewriter &) const {
    ++partitionCalls;
    return failure();
  }
};

// A matmul split along its rows on 2 devices, then a tensor add of its
// result: the add's operand is gathered and the add runs whole.
constexpr const char *kStep = R"mlir(
module attributes {soap.num_devices = 2 : i64} {
func.func @f(%a: tensor<4x8xf32>, %b: tensor<8x6xf32>, %c: tensor<4x6xf32>)
    -> tensor<4x6xf32> {
  %z = tensor.empty() : tensor<4x6xf32>
  %p = linalg.matmul {soap.config = #soap.config<degrees = [2, 1, 1],
                                                 devices = [0, 1]>}
         ins(%a, %b : tensor<4x8xf32>, tensor<8x6xf32>)
         outs(%z : tensor<4x6xf32>) -> tensor<4x6xf32>
  %s = arith.addf %p, %c : tensor<4x6xf32>
  return %s : tensor<4x6xf32>
}
}
)mlir";

/// Partitions @f of `source` in `context`; the diagnostics it emitted.
LogicalResult partition(MLIRContext &context, StringRef source,
                        std::string &diagnostics,
                        OwningOpRef<ModuleOp> &module) {
  module = parseSourceString<ModuleOp>(source, &context);
  if (!module)
    return failure();
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diagnostic) {
    diagnostics += diagnostic.str() + "\n";
    return success();
  });
  auto function = module->lookupSymbol<func::FuncOp>("f");
  return partitionByConfigs(function, 2);
}

TEST(SpmdRewriter, AsksTheInterfaceOfAnyOp) {
  DialectRegistry registry;
  registry.insert<func::FuncDialect, arith::ArithDialect>();
  registerSoapDialects(registry);
  registry.addExtension(+[](MLIRContext *context, arith::ArithDialect *) {
    arith::AddFOp::attachInterface<TensorAddModel>(*context);
  });
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  partitionCalls = 0;
  std::string diagnostics;
  OwningOpRef<ModuleOp> module;
  ASSERT_TRUE(succeeded(partition(context, kStep, diagnostics, module)))
      << diagnostics;
  // Once in the partitioner's probe of the state layouts, once for real.
  EXPECT_EQ(partitionCalls, 2);
  // Declined: the add runs whole on every device, its operand gathered.
  EXPECT_NE(diagnostics.find("arith.addf x1"), std::string::npos)
      << diagnostics;
  int gathers = 0, matmuls = 0;
  module->walk([&](Operation *op) {
    gathers += isa<AllGatherOp>(op);
    matmuls += isa<linalg::MatmulOp>(op);
  });
  EXPECT_EQ(gathers, 1);
  EXPECT_EQ(matmuls, 1);
  module->walk([&](linalg::MatmulOp matmul) {
    // The local matmul computes 2 of the 4 rows.
    EXPECT_EQ(
        cast<RankedTensorType>(matmul.getResult(0).getType()).getDimSize(0), 2);
  });
}

TEST(SpmdRewriter, RefusesLinalgWithoutTheInterface) {
  DialectRegistry registry;
  registry.insert<func::FuncDialect, arith::ArithDialect, SoapDialect,
                  linalg::LinalgDialect, tensor::TensorDialect>();
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  std::string diagnostics;
  OwningOpRef<ModuleOp> module;
  // Without a config: with one, the attribute's verifier refuses the
  // matmul first (it is not partitionable without its model).
  std::string step = kStep;
  size_t config = step.find(" {soap.config");
  step.erase(config, step.find("}\n", config) + 1 - config);
  EXPECT_TRUE(failed(partition(context, step, diagnostics, module)));
  EXPECT_NE(diagnostics.find("'linalg.matmul' has no "
                             "PartitionableOpInterface"),
            std::string::npos)
      << diagnostics;
  EXPECT_NE(diagnostics.find("soap::registerSoap"), std::string::npos);
}

} // namespace

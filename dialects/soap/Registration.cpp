//===- Registration.cpp - one call to register SOAP -----------------------===//

#include "soap/Dialect/Registration.h"
#include "soap/Dialect/PartitionableInterface.h"
#include "soap/Dialect/SoapDialect.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"

namespace soap {
void registerLinalgPartitionableModels(mlir::DialectRegistry &registry);
void registerTensorPartitionableModels(mlir::DialectRegistry &registry);

void registerPartitionableExternalModels(mlir::DialectRegistry &registry) {
  registerLinalgPartitionableModels(registry);
  registerTensorPartitionableModels(registry);
}

void registerSoapDialects(mlir::DialectRegistry &registry) {
  registry.insert<SoapDialect, mlir::linalg::LinalgDialect,
                  mlir::tensor::TensorDialect>();
  registerPartitionableExternalModels(registry);
}
} // namespace soap

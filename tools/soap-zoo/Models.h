//===- Models.h - the zoo's model builders ----------------------*- C++ -*-===//
//
// One builder per model family; the registry (Zoo.cpp) names them and gives
// their defaults.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_TOOLS_SOAP_ZOO_MODELS_H
#define SOAP_TOOLS_SOAP_ZOO_MODELS_H

#include "soap/zoo/Zoo.h"

namespace soap::zoo {

// Each has the signature of BuildModelFn.
llvm::LogicalResult buildMlp(mlir::ModuleOp module, const ModelOptions &options,
                             std::string &error);
llvm::LogicalResult buildAlexNet(mlir::ModuleOp module,
                                 const ModelOptions &options,
                                 std::string &error);
llvm::LogicalResult buildVgg(mlir::ModuleOp module, const ModelOptions &options,
                             std::string &error);
llvm::LogicalResult buildResNet(mlir::ModuleOp module,
                                const ModelOptions &options,
                                std::string &error);
llvm::LogicalResult buildInceptionV3(mlir::ModuleOp module,
                                     const ModelOptions &options,
                                     std::string &error);
llvm::LogicalResult buildRnnTc(mlir::ModuleOp module,
                               const ModelOptions &options, std::string &error);
llvm::LogicalResult buildRnnLm(mlir::ModuleOp module,
                               const ModelOptions &options, std::string &error);
llvm::LogicalResult buildNmt(mlir::ModuleOp module, const ModelOptions &options,
                             std::string &error);
llvm::LogicalResult buildTransformerEncoder(mlir::ModuleOp module,
                                            const ModelOptions &options,
                                            std::string &error);
llvm::LogicalResult buildTransformerDecoder(mlir::ModuleOp module,
                                            const ModelOptions &options,
                                            std::string &error);

} // namespace soap::zoo

#endif // SOAP_TOOLS_SOAP_ZOO_MODELS_H

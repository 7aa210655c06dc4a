//===- OpGraphBuilder.h - OpGraph from MLIR ---------------------*- C++ -*-===//
//
// The bridge from IR to the plain-C++ OpGraph, through the partitioning
// interface and the dimension-kind analysis.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_GRAPH_OPGRAPHBUILDER_H
#define SOAP_GRAPH_OPGRAPHBUILDER_H

#include "soap/graph/OpGraph.h"
#include "soap/graph/Strategy.h"

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/DenseMap.h"

namespace soap {

/// An OpGraph of `func` and, for each node, the op it came from.
struct BuiltOpGraph {
  OpGraph graph;
  std::vector<mlir::Operation *> ops; ///< ops[n] is node n's op
};

/// Builds the OpGraph of `func`'s body: one node per op that computes or
/// reads tensors (partitionable ones with their loops, others as replicated
/// single tasks). Fails, with the op's location in `error`, on bodies with
/// several blocks.
std::optional<BuiltOpGraph> buildOpGraph(mlir::FunctionOpInterface func,
                                         std::string &error);

/// The strategy the IR carries: each op's #soap.config, replicated where
/// there is none.
Strategy strategyFromIR(const BuiltOpGraph &built, int numDevices);

/// Attaches `strategy` as #soap.config (removing the attribute from
/// replicated ops) and sets the module's soap.num_devices.
void attachStrategy(const BuiltOpGraph &built, const Strategy &strategy);

/// The function a SOAP pass works on: the one named `name` when given,
/// else the only function with a body, else the only one with arguments
/// marked {soap.param} (the loss function beside its @train_step), else
/// the only function that takes or returns something and that no other
/// such function calls (the model beside its helpers and a printing
/// `@main() -> ()`).
mlir::FunctionOpInterface findTargetFunction(mlir::Operation *module,
                                             llvm::StringRef name,
                                             std::string &error);

/// Inlines into `function` every call to a function of the module with a
/// body, repeatedly (helpers that call helpers), so that passes see the
/// whole model in one function; the callees stay in the module. Calls to
/// external functions stay. Errors (recursion, a call the inliner refuses)
/// are emitted on the call, prefixed with `pass`.
mlir::LogicalResult inlineCalls(mlir::FunctionOpInterface function,
                                llvm::StringRef pass);

} // namespace soap

#endif // SOAP_GRAPH_OPGRAPHBUILDER_H

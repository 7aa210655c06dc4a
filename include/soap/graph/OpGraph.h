//===- OpGraph.h - a model as plain C++ for simulation and search -*- C++ -*-===//
//
// The ops of one function with their loop nests, loop kinds, tensor
// accesses, FLOPs and parameter flags; edges are tensors. No MLIR types: the
// simulator and the search are tested and benchmarked on OpGraphs alone, and
// OpGraphs serialize to JSON. lib/graph/OpGraphBuilder builds one from IR.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_GRAPH_OPGRAPH_H
#define SOAP_GRAPH_OPGRAPH_H

#include "soap/cost/ShardCost.h"
#include "soap/graph/DimKind.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace soap {

/// A tensor of the function: an argument, a constant, or an op's result.
struct GraphTensor {
  std::string name;
  std::vector<int64_t> shape;
  int64_t elementBytes = 4;
  std::string dtype = "f32";
  bool isParameter = false; ///< trainable: {soap.param} argument or weight
  bool isInput = false;     ///< a non-parameter function argument
  int producer = -1;        ///< node that computes it, or -1
  /// The function returns it as its loss (a rank-0 result): the partitioned
  /// step returns it whole on every device.
  bool isLoss = false;

  int64_t numElements() const;
  int64_t bytes() const { return numElements() * elementBytes; }
  /// Floating point (f16, bf16, f32, f64, f8...): only such tensors carry
  /// gradients (the training step differentiates no integer value).
  bool isFloat() const;
};

/// How a node touches a tensor (see TensorAccess for the roles).
struct NodeAccess {
  int tensor = -1;
  std::vector<IndexExpr> indices;
  AccessRole role = AccessRole::Read;
  bool isDestination = false; ///< an output the op accumulates into
  /// A read whose value the op's backward work reads again (an input of a
  /// contraction or of a non-affine body: a ReLU's, a product's), so that
  /// training keeps it until then; reads that only affine bodies make (a
  /// bias add, a sum, a copy) are not kept for them.
  bool savedForBackward = true;
  /// A read whose gradient the training step takes to be the op's result
  /// adjoint itself (a residual add's operands: the derivative generic is
  /// an identity copy, which canonicalization erases): the gradients of
  /// every such read of the op are one value, and what a reshard of it
  /// made for one producer serves the others.
  bool gradientIsAdjoint = false;
  /// A read of an identity copy's result, which canonicalization erases
  /// (the graph has no node for it; the read is of its source): the id of
  /// the first node after the copy in program order, else -1. The training
  /// step differentiates before it erases the copy: the gradients of the
  /// copy's readers add up into the copy's adjoint first, which is then
  /// one addend of its source's (a contraction among them accumulates into
  /// that sum only).
  int viaCopyBefore = -1;

  /// Whether the op reads the tensor's value: not a write, nor an input
  /// whose shape alone it uses, nor a destination whose old contents it
  /// ignores.
  bool readsValue() const {
    return role != AccessRole::Write && role != AccessRole::Shape &&
           !(role == AccessRole::Unread && isDestination);
  }
};

/// Broad class of an op, for per-class device efficiency.
enum class OpClass { Matmul, Conv, Elementwise, Reduction, DataMovement };
const char *opClassName(OpClass opClass);
std::optional<OpClass> parseOpClass(const std::string &name);
/// Matmuls and convolutions: contractions, which read weights and whose
/// gradients accumulate in place.
inline bool isContraction(OpClass opClass) {
  return opClass == OpClass::Matmul || opClass == OpClass::Conv;
}

/// One op.
struct OpNode {
  std::string opName;   ///< "linalg.matmul"
  std::string location; ///< "model.mlir:12:8", for reports
  OpClass opClass = OpClass::Elementwise;
  bool partitionable = true; ///< false: runs replicated, loops empty
  std::vector<int64_t> loopSizes;
  std::vector<std::string> loopNames;
  std::vector<DimKind> loopKinds;
  /// Loops that run over the batch, reductions included (batch-norm
  /// statistics): what data parallelism splits.
  std::vector<bool> overBatch;
  /// Per loop, whether it is a gather's lookup loop (over the rows of its
  /// table; PartitionableOpInterface::getLookupLoops). Empty: none.
  std::vector<bool> lookupLoops;
  std::vector<NodeAccess> accesses;
  double flopsPerIteration = 0;
  /// A fill of a fresh tensor (or a splat constant): the partitioner
  /// rebuilds it at the shape each reader needs, so nothing moves from it
  /// to its readers.
  bool splat = false;
  /// The op reduces by a max or min (a max pool, a softmax's max): split
  /// along a reduction loop, its tasks' partial results are combined at
  /// once on its devices, never left for the readers
  /// (soap::completesPartialsAtOnce).
  bool completesPartials = false;
  /// Split along a reduction loop, the op's partial results could not be
  /// combined (its body is not a sum, max or min of one output, as a max
  /// with its index; a gather's partial sums excepted): the partitioner
  /// refuses such a config and runs the op whole on every device
  /// (SpmdPartitioner::checkPlan), and so does the simulator.
  bool partialsUncombinable = false;
  /// The op copies its one input with its dimensions transposed or
  /// broadcast (soap::isRelayoutCopy): where only contractions read it,
  /// directly or through other such copies, the CPU lowering folds it into
  /// them and it holds no buffer of its own.
  bool relayoutCopy = false;
  /// Training: the op lies between a parameter and the loss, so it has
  /// backward work.
  bool needsBackward = false;
  /// Training: accesses (indices into `accesses`) whose gradient the
  /// backward adds to the sum of the gradients that later readers of the
  /// same tensor gave: an elementwise add over what a task reads, which a
  /// training step emits unless the gradient comes from a contraction
  /// (matmul, convolution) that accumulates in place.
  std::vector<int> accumulatedReads;

  /// The node's tensors in LoopNest form (for ShardCost).
  LoopNest loopNest(const std::vector<GraphTensor> &tensors) const;
  /// Whether `access` is the table a gather looks its rows up in: one of
  /// its indices runs over a lookup loop.
  bool isLookupTable(const NodeAccess &access) const;
};

class OpGraph {
public:
  std::vector<GraphTensor> tensors;
  std::vector<OpNode> nodes;

  /// Tensors read by node `n` that other nodes produce or that are
  /// arguments, with the index of the access (not those whose shape alone
  /// it uses: a count depends on nothing, and no gradient reaches it).
  std::vector<std::pair<int, int>> readTensors(int node) const;
  /// For every node, the nodes that read its results, in node order (one
  /// pass over the accesses).
  std::vector<std::vector<int>> consumers() const;
  /// Bytes of all parameter tensors.
  int64_t parameterBytes() const;
  /// Whether the training step computes a gradient for `tensor`: a
  /// floating-point parameter, or a result of a node with backward work
  /// (after markBackward).
  bool carriesGradient(int tensor) const;
  /// Whether node `node`'s backward work reads the value of its
  /// `access`-th access again, so that training keeps it until then
  /// (NodeAccess::savedForBackward): a product's operand only where
  /// another operand carries a gradient (the gradient of a product with
  /// the input data needs the input, not the weight's copy).
  bool keepsForBackward(int node, int access) const;
  /// Sets needsBackward on nodes that depend on a parameter and lead to an
  /// output of the function (every node with results, for a loss function),
  /// and each node's accumulatedReads.
  void markBackward();
  /// Sets each node's accumulatedReads from needsBackward: a tensor read by
  /// several nodes with backward work gets its gradient from the last of
  /// them first (the backward runs in reverse), then each earlier reader
  /// adds its own, except matmuls and convolutions.
  void markGradientSums();

  /// Checks indices and sizes; returns the first problem.
  std::optional<std::string> validate() const;

  std::string toJSON() const;
  static std::optional<OpGraph> fromJSON(const std::string &text,
                                         std::string &error);
};

} // namespace soap

#endif // SOAP_GRAPH_OPGRAPH_H

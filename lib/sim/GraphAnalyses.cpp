//===- GraphAnalyses.cpp - what the simulator reads off the op graph -----===//
//
// Facts of the op graph that hold for every strategy, found once when the
// simulator is made: views that run whole wherever their operands are
// whole (findWholeViews), the one reader whose gradient an op's adjoint
// accumulates into (findAdjointReaders), and transposes whose gradient is
// taken lazily by their reader (findLazyGradients).
//
//===----------------------------------------------------------------------===//

#include "soap/sim/Simulator.h"

#include "SimulatorTasks.h"

#include <algorithm>

namespace soap {

void Simulator::findWholeViews() {
  wholeViews.assign(graph.nodes.size(), 0);
  // Nodes come in program order: a view's producers are decided first.
  for (size_t node = 0; node < graph.nodes.size(); ++node) {
    const OpNode &n = graph.nodes[node];
    if (!isView(n))
      continue;
    bool any = false, whole = true;
    for (const NodeAccess &a : n.accesses) {
      const GraphTensor &tensor = graph.tensors[a.tensor];
      // A view's result is an access of its own (a reshape's is unread).
      if (!a.readsValue() || tensor.producer == static_cast<int>(node))
        continue;
      any = true;
      // Parameters may be kept sharded; fills are rebuilt in each block.
      whole &= tensor.producer < 0 ? !tensor.isParameter
                                   : wholeViews[tensor.producer] != 0;
    }
    wholeViews[node] = any && whole;
  }
}

void Simulator::findAdjointReaders() {
  adjointReaders.assign(graph.nodes.size(), {-1, -1});
  if (!options.training)
    return;
  for (size_t node = 0; node < graph.nodes.size(); ++node) {
    const OpNode &n = graph.nodes[node];
    if (!n.needsBackward || n.splat)
      continue;
    const NodeAccess *result = nullptr;
    int results = 0;
    bool readsInit = false;
    for (const NodeAccess &a : n.accesses) {
      if (a.role == AccessRole::Write) {
        result = &a;
        ++results;
      }
      readsInit |= a.isDestination && a.role == AccessRole::Read;
    }
    if (results != 1 || !readsInit)
      continue;
    // The loss's adjoint is the training step's seed, a constant every
    // device makes.
    if (graph.tensors[result->tensor].isLoss) {
      adjointReaders[node] = {kSeedAdjoint, -1};
      continue;
    }
    std::vector<std::pair<int, int>> readers =
        gradientReadersOf(static_cast<int>(node), result->tensor);
    if (readers.size() == 1 && lazyGradients[readers[0].first].reader < 0 &&
        lazyGradients[node].reader < 0)
      adjointReaders[node] = readers[0];
  }
}

void Simulator::findLazyGradients() {
  size_t n = graph.nodes.size();
  lazyGradients.assign(n, LazyGradient());
  if (!options.training)
    return;
  // The one op with backward work that reads each tensor, -1 for none, -2
  // for several.
  std::vector<int> reader(graph.tensors.size(), -1);
  for (size_t node = 0; node < n; ++node) {
    if (!graph.nodes[node].needsBackward)
      continue;
    for (const NodeAccess &a : graph.nodes[node].accesses) {
      if (!a.readsValue())
        continue;
      int &r = reader[a.tensor];
      r = r == -1 || r == static_cast<int>(node) ? static_cast<int>(node) : -2;
    }
  }
  auto onlyReaderOf = [&](int tensor) { return reader[tensor]; };
  // In reverse: a transpose read by a lazy one is not (its reader's
  // gradient would be a permutation of a permutation).
  for (size_t t = n; t-- > 0;) {
    const OpNode &op = graph.nodes[t];
    if (op.opName != "linalg.transpose" || !op.needsBackward)
      continue;
    const NodeAccess *in = nullptr, *out = nullptr;
    for (const NodeAccess &a : op.accesses) {
      if (a.role == AccessRole::Write)
        out = &a;
      else if (a.readsValue() && !a.isDestination)
        in = &a;
    }
    int producer = in ? graph.tensors[in->tensor].producer : -1;
    // A transposed parameter (a torch-mlir linear layer's weight) that
    // nothing else reads: its update reads the gradient transposed
    // (Parameters.cpp takes it from the transpose's reader).
    bool parameter = in && producer < 0 &&
                     graph.tensors[in->tensor].isParameter &&
                     onlyReaderOf(in->tensor) == static_cast<int>(t);
    if (!in || !out || (producer < 0 && !parameter) ||
        in->indices.size() != out->indices.size())
      continue;
    LazyGradient lazy;
    for (const IndexExpr &index : in->indices) {
      std::optional<unsigned> loop = index.singleLoop();
      int dim = -1;
      for (size_t i = 0; i < out->indices.size() && loop; ++i)
        if (out->indices[i].singleLoop() == loop)
          dim = static_cast<int>(i);
      lazy.outputDim.push_back(dim);
    }
    if (std::count(lazy.outputDim.begin(), lazy.outputDim.end(), -1))
      continue;
    // Its result's one reader with backward work, and its input's (both
    // have producers: the readers are among their consumers).
    auto readers = [&](int tensor, int &reader, int &access) {
      int count = 0;
      for (int c : consumersOf[graph.tensors[tensor].producer]) {
        const OpNode &other = graph.nodes[c];
        for (size_t a = 0; a < other.accesses.size(); ++a)
          if (other.accesses[a].tensor == tensor &&
              other.accesses[a].readsValue() && other.needsBackward) {
            ++count;
            reader = c;
            access = static_cast<int>(a);
          }
      }
      return count;
    };
    int inputReader = -1, inputAccess = -1;
    if (readers(out->tensor, lazy.reader, lazy.access) != 1 ||
        lazyGradients[lazy.reader].reader >= 0 ||
        (!parameter && readers(in->tensor, inputReader, inputAccess) != 1))
      continue;
    lazyGradients[t] = std::move(lazy);
  }
}

} // namespace soap

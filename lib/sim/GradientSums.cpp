//===- GradientSums.cpp - gradients several readers give one value -------===//
//
// Where the training step adds the gradients of a value's readers, and
// where the partitioner moves them, when that differs from one reshard per
// reader (buildEdge's default): a replicated producer's adjoint sum,
// slices of disjoint parts, lazily transposed gradients, slices of a
// parameter kept whole.
//
//===----------------------------------------------------------------------===//

#include "SimulatorTasks.h"

#include <algorithm>

namespace soap {

bool Simulator::viewOfWholeParameter(int node) const {
  const OpNode &n = graph.nodes[node];
  if (n.opName != "tensor.extract_slice" && n.opName != "tensor.expand_shape" &&
      n.opName != "tensor.collapse_shape")
    return false;
  for (const NodeAccess &a : n.accesses) {
    const GraphTensor &t = graph.tensors[a.tensor];
    if (a.readsValue() && t.producer < 0 && t.isParameter)
      return parameterTasks[a.tensor].wholeEverywhere;
  }
  return false;
}

Simulator::SlotLayouts
Simulator::lazyGradientLayouts(const LazyGradient &lazy) {
  SlotLayouts permuted =
      slotLayouts(placement(lazy.reader), lazy.access, SlotKind::Gradients);
  for (layout::Layout &piece : permuted.pieces)
    for (std::optional<layout::Block> &block : piece.blocks)
      if (block) {
        layout::Block in;
        for (int dim : lazy.outputDim) {
          in.offsets.push_back(block->offsets[dim]);
          in.sizes.push_back(block->sizes[dim]);
        }
        block = std::move(in);
      }
  return permuted;
}

std::vector<std::pair<int, int>> Simulator::disjointSliceReaders(int producer,
                                                                 int tensor) {
  std::vector<std::pair<int, int>> readers;
  std::vector<Box> regions;
  for (int c : consumersOf[producer]) {
    const OpNode &reader = graph.nodes[c];
    if (!reader.needsBackward)
      continue;
    for (size_t a = 0; a < reader.accesses.size(); ++a) {
      if (reader.accesses[a].tensor != tensor ||
          !reader.accesses[a].readsValue())
        continue;
      if (reader.opName != "tensor.extract_slice" ||
          lazyGradients[c].reader >= 0)
        return {};
      // The part of the tensor the slice reads: its tasks' boxes' span.
      const Placement &p = placement(c);
      Box region;
      for (size_t t = 0; t < p.devices.size(); ++t) {
        Box box = p.box(t, a).toBox();
        if (region.empty()) {
          region = box;
          continue;
        }
        for (size_t d = 0; d < box.size(); ++d) {
          region[d].first = std::min(region[d].first, box[d].first);
          region[d].second = std::max(region[d].second, box[d].second);
        }
      }
      for (const Box &other : regions)
        if (overlapVolume({region.data(), region.size()},
                          {other.data(), other.size()}) > 0)
          return {};
      regions.push_back(std::move(region));
      readers.emplace_back(c, static_cast<int>(a));
    }
  }
  if (readers.size() < 2)
    return {};
  std::sort(readers.begin(), readers.end());
  return readers;
}

std::vector<std::pair<int, int>> Simulator::addendsSummedAtFirst(int producer,
                                                                 int tensor) {
  if (!placement(producer).replicated || lazyGradients[producer].reader >= 0)
    return {};
  std::vector<std::pair<int, int>> readers;
  for (int c : consumersOf[producer]) {
    const OpNode &reader = graph.nodes[c];
    if (!reader.needsBackward)
      continue;
    for (size_t a = 0; a < reader.accesses.size(); ++a)
      if (reader.accesses[a].tensor == tensor &&
          reader.accesses[a].readsValue())
        readers.emplace_back(c, static_cast<int>(a));
  }
  std::sort(readers.begin(), readers.end());
  const GraphTensor &t = graph.tensors[tensor];
  const layout::Layout *first = nullptr;
  bool twoLayouts = false, complete = false;
  for (size_t r = 0; r < readers.size(); ++r) {
    auto [c, a] = readers[r];
    const Placement &p = placement(c);
    // A contraction other than the last reader accumulates the sum so far
    // in place; a lazy transpose's gradient is its reader's.
    if (p.replicated || lazyGradients[c].reader >= 0 ||
        (r + 1 < readers.size() && isContraction(graph.nodes[c].opClass)))
      return {};
    const SlotLayouts &gradients = slotLayouts(p, a, SlotKind::Gradients);
    if (gradients.pieces.size() != 1)
      return {};
    const layout::Layout &mine = gradients.pieces[0];
    if (std::all_of(mine.blocks.begin(), mine.blocks.end(),
                    [&](const std::optional<layout::Block> &block) {
                      return block && block->volume() == t.numElements();
                    }))
      return {};
    complete |= !mine.partial;
    if (!first)
      first = &mine;
    else
      twoLayouts |= !sameLayout(*first, mine);
  }
  if (!twoLayouts || !complete)
    return {};
  return readers;
}

} // namespace soap

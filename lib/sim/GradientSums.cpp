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
#include <map>

namespace soap {

bool Simulator::viewOfWholeOperands(int node) {
  const OpNode &n = graph.nodes[node];
  if (!isView(n))
    return false;
  bool any = false;
  for (const NodeAccess &a : n.accesses) {
    const GraphTensor &t = graph.tensors[a.tensor];
    // A view's result is an access of its own (a reshape's is unread).
    if (!a.readsValue() || t.producer == node)
      continue;
    any = true;
    bool whole = t.producer < 0 ? !t.isParameter ||
                                      parameterTasks[a.tensor].wholeEverywhere
                                : !graph.nodes[t.producer].splat &&
                                      (placement(t.producer).replicated ||
                                       viewOfWholeOperands(t.producer));
    if (!whole)
      return false;
  }
  return any;
}

bool Simulator::sharesAdjointCopies(int node) const {
  int first = -1;
  for (const NodeAccess &a : graph.nodes[node].accesses) {
    int producer = graph.tensors[a.tensor].producer;
    if (!a.gradientIsAdjoint || producer < 0 || producer == node)
      continue;
    if (first >= 0 && producer != first)
      return true;
    first = producer;
  }
  return false;
}

std::vector<std::pair<int, int>> Simulator::wholeAdjointReaders(int node) {
  const OpNode &n = graph.nodes[node];
  // A slice's backward inserts into zeros, which each device makes in its
  // blocks alone: it follows its config.
  if (!isView(n) || n.opName == "tensor.extract_slice" ||
      placement(node).replicated)
    return {};
  for (const NodeAccess &a : n.accesses) {
    // A view's result is an access of its own (a reshape's is unread).
    if (graph.tensors[a.tensor].producer != node)
      continue;
    std::vector<std::pair<int, int>> readers =
        gradientReadersOf(node, a.tensor);
    for (auto [r, access] : readers)
      if (!placement(r).replicated || lazyGradients[r].reader >= 0)
        return {};
    return readers;
  }
  return {};
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

std::vector<std::vector<int>>
Simulator::gradientSumIn(const std::vector<GradientAddend> &addends,
                         const layout::Layout &target,
                         const layout::TensorShape &shape, bool zerosElsewhere,
                         TaskKey &base, std::vector<std::vector<int>> &groups) {
  int numDevices = machine.numDevices();
  // As the partitioner's materializeSum: addends in one layout add up
  // where they are; one of several pieces moves alone.
  std::vector<GradientAddend> moves;
  for (const GradientAddend &addend : addends) {
    auto same = moves.end();
    if (addend.pieces.size() == 1)
      same = std::find_if(moves.begin(), moves.end(),
                          [&](const GradientAddend &g) {
                            return g.pieces.size() == 1 &&
                                   sameLayout(*g.pieces[0], *addend.pieces[0]);
                          });
    if (same == moves.end()) {
      moves.push_back(addend);
      continue;
    }
    for (int d = 0; d < numDevices; ++d)
      same->madeBy[0][d].insert(same->madeBy[0][d].end(),
                                addend.madeBy[0][d].begin(),
                                addend.madeBy[0][d].end());
  }
  std::vector<std::vector<int>> at(numDevices);
  for (const GradientAddend &group : moves) {
    std::vector<std::vector<int>> ready;
    if (group.pieces.size() == 1 && sameLayout(*group.pieces[0], target)) {
      ready = group.madeBy[0];
    } else {
      std::vector<layout::Layout> pieces;
      for (const layout::Layout *piece : group.pieces)
        pieces.push_back(*piece);
      ready = addPlanTasks(
          planFor(shape, pieces, target, zerosElsewhere),
          /*forward=*/false, base,
          [&](int piece, int device) { return group.madeBy[piece][device]; },
          shape.elementBytes, groups);
      ++base[3];
    }
    for (int d = 0; d < numDevices; ++d)
      at[d].insert(at[d].end(), ready[d].begin(), ready[d].end());
  }
  return at;
}

const Simulator::SlotLayouts &Simulator::readerGradients(int reader, int access,
                                                         SlotLayouts &storage) {
  const LazyGradient &lazy = lazyGradients[reader];
  if (lazy.reader < 0)
    return slotLayouts(placement(reader), access, SlotKind::Gradients);
  storage = lazyGradientLayouts(lazy);
  return storage;
}

std::vector<std::pair<int, int>>
Simulator::gradientReadersOf(int producer, int tensor) const {
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
  return readers;
}

std::vector<std::pair<int, int>> Simulator::disjointSliceReaders(int producer,
                                                                 int tensor) {
  std::vector<std::pair<int, int>> readers =
      gradientReadersOf(producer, tensor);
  std::vector<Box> regions;
  for (auto [c, a] : readers) {
    if (graph.nodes[c].opName != "tensor.extract_slice" ||
        lazyGradients[c].reader >= 0)
      return {};
    Box region = placement(c).region(a);
    for (const Box &other : regions)
      if (overlapVolume({region.data(), region.size()},
                        {other.data(), other.size()}) > 0)
        return {};
    regions.push_back(std::move(region));
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
  std::vector<std::pair<int, int>> readers =
      gradientReadersOf(producer, tensor);
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
    // Several tasks on a device: complete parts that move alone (the
    // partitioner's materializeSum), in no layout of their own.
    if (gradients.pieces.size() != 1) {
      if (std::any_of(gradients.pieces.begin(), gradients.pieces.end(),
                      [](const layout::Layout &piece) {
                        return piece.partial.has_value();
                      }))
        return {};
      twoLayouts = true;
      continue;
    }
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

bool Simulator::accumulatesInPlace(int node, int access) {
  const OpNode &n = graph.nodes[node];
  const NodeAccess &read = n.accesses[access];
  if (read.isDestination)
    return false; // its gradient is the result's adjoint itself
  if (n.opClass == OpClass::Matmul)
    return true;
  if (n.opName != "linalg.conv_2d_nchw_fchw" || access != 0)
    return false;
  // A forward split along its output rows or columns or its window runs
  // each task's part of the input gradient (soap.transposed_config), which
  // the partitioner does not accumulate into.
  const Placement &p = placement(node);
  if (!p.replicated) {
    const std::vector<int64_t> &degrees = current.configs[node].degrees;
    if (degrees.size() == 7 &&
        (degrees[2] > 1 || degrees[3] > 1 || degrees[5] > 1 || degrees[6] > 1))
      return false;
  }
  // The input gradient is the convolution's result only where the
  // windows read every row and column (else it goes into zeros).
  const GraphTensor &tensor = graph.tensors[read.tensor];
  Box region = p.region(access);
  for (size_t d = 0; d < region.size(); ++d)
    if (region[d].first != 0 || region[d].second != tensor.shape[d] - 1)
      return false;
  return true;
}

bool Simulator::sameConfig(int a, int b) {
  const Placement &x = placement(a), &y = placement(b);
  if (x.replicated || y.replicated)
    return x.replicated == y.replicated;
  const ParallelConfig &u = current.configs[a], &v = current.configs[b];
  return u.degrees == v.degrees && u.devices == v.devices;
}

bool Simulator::configsInterleave(
    const std::vector<std::pair<int, int>> &readers) {
  std::vector<int> runs;
  for (auto [node, access] : readers) {
    if (!runs.empty() && sameConfig(runs.back(), node))
      continue;
    for (int earlier : runs)
      if (sameConfig(earlier, node))
        return true;
    runs.push_back(node);
  }
  return false;
}

std::vector<std::pair<int, int>> Simulator::inPlaceChain(int producer,
                                                         int tensor) {
  if (lazyGradients[producer].reader >= 0)
    return {};
  std::vector<std::pair<int, int>> readers =
      gradientReadersOf(producer, tensor);
  if (readers.size() < 2)
    return {};
  // Program order first, for the configs' runs.
  std::sort(readers.begin(), readers.end());
  for (size_t r = 0; r < readers.size(); ++r)
    if (lazyGradients[readers[r].first].reader >= 0 ||
        (r > 0 && readers[r].first == readers[r - 1].first))
      return {};
  if (configsInterleave(readers))
    return {};
  std::reverse(readers.begin(), readers.end());
  auto gradientsOf = [&](size_t r) -> const SlotLayouts & {
    return slotLayouts(placement(readers[r].first), readers[r].second,
                       SlotKind::Gradients);
  };
  bool inPlace = false;
  size_t lastInPlace = 0;
  std::vector<bool> started = joinsStartedSum(readers);
  for (size_t r = 0; r < readers.size(); ++r) {
    auto [c, a] = readers[r];
    // Several tasks on a device give several pieces, each task's init
    // the sum so far in its piece's blocks (partial sums of a split
    // reduction: every task reads the init, the first along the
    // reduction adds it; see chainedGradientSum).
    if (started[r] && accumulatesInPlace(c, a)) {
      inPlace = true;
      lastInPlace = r;
    }
  }
  if (!inPlace)
    return {};
  // A replicated producer's backward work takes a sum of several layouts
  // where the first addend is (addendsSummedAtFirst); not modeled here.
  if (placement(producer).replicated && lastInPlace + 1 < readers.size())
    for (size_t r = lastInPlace; r < readers.size(); ++r)
      if (gradientsOf(r).pieces.size() != 1 ||
          !sameLayout(gradientsOf(r).pieces[0],
                      gradientsOf(lastInPlace).pieces[0]))
        return {};
  return readers;
}

/// Per reader of `chain`, which sum its gradient joins: its erased copy's
/// position (NodeAccess::viaCopyBefore) where the copy has several readers
/// in the chain, or -1 for the value's own. (A copy's one reader's gradient
/// is the copy's adjoint, which the training step adds to the value's, a
/// contraction's by accumulating it in place, as if it read the value.)
static std::vector<int> sumKeys(const OpGraph &graph,
                                const std::vector<std::pair<int, int>> &chain) {
  std::map<int, int> readers;
  std::vector<int> keys;
  for (auto [node, access] : chain) {
    keys.push_back(graph.nodes[node].accesses[access].viaCopyBefore);
    ++readers[keys.back()];
  }
  for (int &key : keys)
    if (key < 0 || readers[key] < 2)
      key = -1;
  return keys;
}

/// The copies' sums (keys >= 0) of `open` (by key) that the backward
/// pass has reached before the reader `node` (program order: the copy
/// comes before `node`; every copy for a null reader), latest copy first.
template <typename Sums>
static std::vector<int> copiesReached(const Sums &open, int node) {
  std::vector<int> reached;
  for (auto it = open.rbegin(); it != open.rend(); ++it)
    if (it->first >= 0 && (node < 0 || node < it->first))
      reached.push_back(it->first);
  return reached;
}

std::vector<bool> Simulator::joinsStartedSum(
    const std::vector<std::pair<int, int>> &chain) const {
  std::map<int, size_t> addends; // per sum
  std::vector<bool> started;
  auto reach = [&](int node) {
    for (int key : copiesReached(addends, node)) {
      addends[-1] += addends[key];
      addends.erase(key);
    }
  };
  std::vector<int> keys = sumKeys(graph, chain);
  for (size_t r = 0; r < chain.size(); ++r) {
    reach(chain[r].first);
    size_t &n = addends[keys[r]];
    started.push_back(n > 0);
    ++n;
  }
  return started;
}

std::vector<std::vector<std::vector<int>>>
Simulator::chainedGradientSum(const std::vector<std::pair<int, int>> &chain,
                              int producer, const SlotLayouts &target,
                              std::vector<std::vector<int>> &groups) {
  int numDevices = machine.numDevices();
  const GraphTensor &tensor = graph.tensors[graph.nodes[chain.front().first]
                                                .accesses[chain.front().second]
                                                .tensor];
  layout::TensorShape shape{tensor.shape, tensor.elementBytes};
  // The gradient so far, in the backward pass's order, and the reader
  // whose gradient it is alone, where that is the reader's adjoint itself:
  // what its reshards for the reader's other producers made are pieces of
  // it too (PlanCache::gradientCopies). One such sum for the value and one
  // per erased identity copy its readers read through, which joins the
  // value's when the backward pass reaches the copy (joinsStartedSum).
  struct Sum {
    std::vector<GradientAddend> addends;
    int adjointOf = -1;
  };
  std::map<int, Sum> sums;
  Sum *current = &sums[-1];
  auto reach = [&](int node) {
    for (int key : copiesReached(sums, node)) {
      Sum &own = sums[-1], &copy = sums[key];
      own.adjointOf = own.addends.empty() ? copy.adjointOf : -1;
      for (GradientAddend &addend : copy.addends)
        own.addends.push_back(std::move(addend));
      sums.erase(key);
    }
  };
  TaskKey base{3, producer, 0, 0, 0, 0};
  auto sumIn = [&](const layout::Layout &to, int reader) {
    base[2] = reader;
    std::vector<GradientAddend> &sum = current->addends;
    const std::vector<PlanCache::Copy> *copies =
        current->adjointOf >= 0 ? &plans->gradientCopies[current->adjointOf]
                                : nullptr;
    if (copies && !copies->empty() && sum.size() == 1 &&
        !(sum[0].pieces.size() == 1 && sameLayout(*sum[0].pieces[0], to))) {
      // Planned from every piece of the value, as the partitioner plans.
      const GradientAddend &adjoint = sum[0];
      std::vector<layout::Layout> pieces;
      for (const layout::Layout *piece : adjoint.pieces)
        pieces.push_back(*piece);
      size_t own = pieces.size();
      for (const PlanCache::Copy &copy : *copies)
        pieces.push_back(copy.layout);
      std::vector<std::vector<int>> ready = addPlanTasks(
          planFor(shape, pieces, to, /*zerosElsewhere=*/false, own),
          /*forward=*/false, base,
          [&](int piece, int device) {
            return static_cast<size_t>(piece) < own
                       ? adjoint.madeBy[piece][device]
                       : (*copies)[piece - own].madeBy[device];
          },
          shape.elementBytes, groups);
      ++base[3];
      return ready;
    }
    return gradientSumIn(sum, to, shape, /*zerosElsewhere=*/true, base, groups);
  };
  std::vector<int> keys = sumKeys(graph, chain);
  for (size_t r = 0; r < chain.size(); ++r) {
    auto [c, a] = chain[r];
    reach(c);
    current = &sums[keys[r]];
    std::vector<GradientAddend> &sum = current->addends;
    const SlotLayouts &gradients =
        slotLayouts(placement(c), a, SlotKind::Gradients);
    GradientAddend mine;
    for (size_t k = 0; k < gradients.pieces.size(); ++k) {
      mine.pieces.push_back(&gradients.pieces[k]);
      mine.madeBy.emplace_back(numDevices);
      for (int d = 0; d < numDevices; ++d)
        if (int u = gradients.task[k][d]; u >= 0)
          mine.madeBy[k][d].push_back(nodeTasks[c].bwd[u]);
    }
    // The contraction's init is the sum so far, each task's in its own
    // layout (the partitioner materializes the init slot by slot).
    if (!sum.empty() && accumulatesInPlace(c, a)) {
      // Tasks whose blocks an earlier task's init already brought take
      // it from there (the partitioner keeps what a reshard made).
      std::vector<std::pair<layout::Layout, std::vector<std::vector<int>>>>
          brought;
      for (size_t k = 0; k < mine.pieces.size(); ++k) {
        layout::Layout blocks = *mine.pieces[k];
        blocks.partial.reset();
        blocks.tasks.clear();
        // A sum so far that holds partial sums or parts in the blocks of
        // a split reduction's tasks is added where it lies (the
        // partitioner's accumulatingInit and embeddedInit).
        if (mine.pieces[k]->partial && sum.size() == 1 &&
            sum[0].pieces.size() == 1 &&
            layout::initAddsLocally(*sum[0].pieces[0], blocks)) {
          for (int d = 0; d < numDevices; ++d)
            if (blocks.blocks[d])
              mine.madeBy[k][d].insert(mine.madeBy[k][d].end(),
                                       sum[0].madeBy[0][d].begin(),
                                       sum[0].madeBy[0][d].end());
          continue;
        }
        auto same =
            std::find_if(brought.begin(), brought.end(), [&](const auto &b) {
              return b.first.blocks == blocks.blocks;
            });
        if (same == brought.end()) {
          brought.emplace_back(blocks, sumIn(blocks, c));
          same = std::prev(brought.end());
        }
        const std::vector<std::vector<int>> &init = same->second;
        for (int d = 0; d < numDevices; ++d)
          mine.madeBy[k][d].insert(mine.madeBy[k][d].end(), init[d].begin(),
                                   init[d].end());
      }
      sum.clear();
    }
    current->adjointOf =
        sum.empty() && graph.nodes[c].accesses[a].gradientIsAdjoint ? c : -1;
    sum.push_back(std::move(mine));
  }
  reach(-1);
  current = &sums[-1];
  std::vector<GradientAddend> &sum = current->addends;
  // A piece of the producer that what an earlier piece's steps made holds
  // takes it from there (the partitioner keeps it as a piece of the
  // gradient): one addend moves once.
  std::vector<std::vector<std::vector<int>>> ready;
  std::vector<PlanCache::Copy> made;
  for (const layout::Layout &piece : target.pieces) {
    auto from = std::find_if(made.begin(), made.end(), [&](const auto &copy) {
      return layout::contains(copy.layout, piece);
    });
    if (from != made.end()) {
      ready.push_back(from->madeBy);
      continue;
    }
    ready.push_back(sumIn(piece, chain.front().first));
    if (sum.size() != 1 ||
        (sum[0].pieces.size() == 1 && sameLayout(*sum[0].pieces[0], piece)))
      continue;
    std::vector<layout::Layout> pieces;
    for (const layout::Layout *p : sum[0].pieces)
      pieces.push_back(*p);
    if (const layout::Layout *copy = layout::communicatedLayout(
            planFor(shape, pieces, piece, /*zerosElsewhere=*/true)))
      made.push_back({*copy, ready.back()});
  }
  return ready;
}

} // namespace soap

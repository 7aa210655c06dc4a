//===- Reshards.cpp - the communication of the simulator's edges ---------===//
//
// Each producer/consumer edge moves its tensor as lib/layout's reshard
// planner says, exactly as the partitioner emits it: the steps become
// collective tasks and point-to-point transfers, in the forward pass and,
// for the gradient, in the backward pass.
//
//===----------------------------------------------------------------------===//

#include "SimulatorTasks.h"

#include <array>
#include <functional>
#include <optional>
#include <tuple>

namespace soap {

static bool sameBox(BoxRef a, BoxRef b) {
  return a.rank == b.rank && std::equal(a.first, a.first + a.rank, b.first);
}

/// Whether an edge's data stays where it is: every consumer task reads
/// exactly a block its device produced (the producer task's index in
/// `producerOf[u]`: planReshard gives no step), and, for the gradient,
/// no two consumer tasks read the same elements (no partial sums) and
/// every producer task's block is exactly one consumer task's on its device
/// (`consumerOf[s]`).
bool Simulator::sameBlocksOnSameDevices(const Placement &pp, size_t pa,
                                        const Placement &cp, size_t ca,
                                        bool backward,
                                        std::vector<int> &producerOf,
                                        std::vector<int> &consumerOf) {
  auto local = [](const Placement &from, size_t fa, const Placement &to,
                  size_t ta, size_t t) {
    for (size_t s = 0; s < from.devices.size(); ++s)
      if (from.devices[s] == to.devices[t] &&
          sameBox(from.box(s, fa), to.box(t, ta)))
        return static_cast<int>(s);
    return -1;
  };
  producerOf.assign(cp.devices.size(), -1);
  for (size_t u = 0; u < cp.devices.size(); ++u)
    if ((producerOf[u] = local(pp, pa, cp, ca, u)) < 0)
      return false;
  if (!backward)
    return true;
  for (size_t u = 0; u < cp.devices.size(); ++u)
    for (size_t v = u + 1; v < cp.devices.size(); ++v)
      if (overlapVolume(cp.box(u, ca), cp.box(v, ca)) > 0)
        return false;
  consumerOf.assign(pp.devices.size(), -1);
  for (size_t s = 0; s < pp.devices.size(); ++s)
    if ((consumerOf[s] = local(cp, ca, pp, pa, s)) < 0)
      return false;
  return true;
}

/// The parts of an op's result whose gradients its backward work reads
/// separately: a tensor.pad's interior (its input's part; the padding's
/// gradient is not needed), each differentiated input's part of a
/// tensor.concat (its gradient is one slice per input). None for other
/// ops (their blocks whole).
static std::vector<layout::Block> gradientParts(const OpGraph &graph,
                                                int node) {
  const OpNode &n = graph.nodes[node];
  bool pad = n.opName == "tensor.pad";
  if (!pad && n.opName != "tensor.concat")
    return {};
  std::vector<layout::Block> parts;
  for (const NodeAccess &access : n.accesses) {
    if (access.role != AccessRole::Read)
      continue;
    const GraphTensor &input = graph.tensors[access.tensor];
    bool active =
        (input.isParameter && input.producer < 0) ||
        (input.producer >= 0 && graph.nodes[input.producer].needsBackward);
    if (!pad && !active)
      continue;
    // The input's elements are where the index is the loop less a constant.
    layout::Block part;
    for (size_t d = 0; d < access.indices.size(); ++d) {
      const IndexExpr &index = access.indices[d];
      if (!index.isLinear || index.terms.size() != 1 ||
          index.terms[0].loop != d || index.terms[0].coefficient != 1 ||
          d >= input.shape.size())
        return {};
      part.offsets.push_back(-index.constant);
      part.sizes.push_back(input.shape[d]);
    }
    parts.push_back(std::move(part));
    if (pad)
      break;
  }
  return parts;
}

bool Simulator::initStaysLocal(int producer, size_t pa, int consumer,
                               size_t ca) {
  const Placement &pp = placement(producer);
  const Placement &cp = placement(consumer);
  if (pp.replicated || cp.replicated || !cp.splitsReduction)
    return false;
  const SlotLayouts &produced = slotLayouts(pp, pa, SlotKind::Produced);
  if (produced.pieces.size() != 1)
    return false;
  const SlotLayouts &read = slotLayouts(cp, ca, SlotKind::Blocks);
  return std::all_of(read.pieces.begin(), read.pieces.end(),
                     [&](const layout::Layout &blocks) {
                       return layout::initAddsLocally(produced.pieces[0],
                                                      blocks);
                     });
}

void Simulator::buildEdge(int edgeId) {
  auto [producer, consumer] = edgeEnds[edgeId];
  const OpNode &pn = graph.nodes[producer];
  const OpNode &cn = graph.nodes[consumer];
  const Placement &pp = placement(producer);
  const Placement &cp = placement(consumer);
  EdgeTasks &edge = edges[edgeId];
  edge = EdgeTasks();
  std::vector<std::vector<int>> groupsOfEdge;
  std::vector<int> producerOf, consumerOf;
  fwdPairs.clear();
  bwdPairs.clear();
  bool backward = options.training && pn.needsBackward && cn.needsBackward;
  int numDevices = machine.numDevices();
  // A splat is rebuilt where each reader needs it: nothing moves.
  for (size_t ca = 0; !pn.splat && ca < cn.accesses.size(); ++ca) {
    const NodeAccess &access = cn.accesses[ca];
    const GraphTensor &tensor = graph.tensors[access.tensor];
    if (tensor.producer != producer || !access.readsValue())
      continue;
    size_t pa = definingAccess(pn, access.tensor);
    if (pa == pn.accesses.size())
      continue;
    const NodeTasks &made = nodeTasks[producer];
    auto producedBy = [&](int s) { return made.madeBy(pa, s); };
    // What the producer's tasks write: partial sums that this reader's
    // reshard combines, or blocks (complete once a split reduction's
    // all-reduce ran).
    const SlotLayouts &produced = slotLayouts(pp, pa, SlotKind::Produced);
    bool partial = !produced.pieces.empty() && produced.pieces[0].partial;
    // A lazily transposed gradient (lazyGradients): nothing on the edge to
    // the transpose's reader; the transpose's producer takes it from that
    // reader.
    const LazyGradient &lazy = lazyGradients[consumer];
    bool gradientHere = backward && lazyGradients[producer].reader !=
                                        static_cast<int>(consumer);
    bool viaReader = gradientHere && lazy.reader >= 0;
    // Readers of which one accumulates the sum so far of the gradient in
    // place: the whole sum is planned on the first reader's edge
    // (chainedGradientSum).
    std::vector<std::pair<int, int>> chain =
        gradientHere && !viaReader && gradientParts(graph, producer).empty()
            ? inPlaceChain(producer, access.tensor)
            : std::vector<std::pair<int, int>>{};
    // The gradient of an init the consumer accumulates into is its
    // result's adjoint, which the producer's backward work takes from
    // where the result's one reader put it (adjointReaders).
    std::pair<int, int> adjoint =
        adjointReaders[consumer].first != -1 && gradientHere && !viaReader &&
                access.isDestination &&
                gradientReadersOf(producer, access.tensor).size() == 1
            ? adjointReaders[consumer]
            : std::make_pair(-1, -1);
    bool fromAdjoint = adjoint.first >= 0;
    // The loss's seed: nothing moves.
    bool seeded = adjoint.first == kSeedAdjoint;
    // The gradient comes from the consumer's own backward tasks.
    bool ownGradient = gradientHere && !viaReader && !fromAdjoint && !seeded;
    // A gather whose gradient runs whole on its devices reads the whole
    // gradient of its output there (Placement::wholeScatter), which moves
    // even where the forward blocks stay.
    bool wholeGradient = gradientHere && pp.wholeScatter;
    SlotLayouts wholeBlocks;
    if (wholeGradient)
      wholeBlocks = wholeOnDevices(pp, pa);
    // The producer's blocks whose gradient its backward work reads.
    auto gradientTarget = [&]() -> const SlotLayouts & {
      return wholeGradient ? wholeBlocks
                           : slotLayouts(pp, pa, SlotKind::Blocks);
    };
    bool local = !partial && sameBlocksOnSameDevices(
                                 pp, pa, cp, ca, ownGradient && !wholeGradient,
                                 producerOf, consumerOf);
    // A view of operands whole on every device (a parameter kept whole, a
    // replicated op's result): each reader takes its blocks where it runs
    // (the partitioner runs the view whole everywhere), after the view's
    // work on that device.
    // Each consumer task reads what the producer's tasks on its device
    // made.
    auto fromOwnDevice = [&] {
      for (size_t u = 0; u < cp.devices.size(); ++u)
        for (size_t s = 0; s < pp.devices.size(); ++s)
          if (pp.devices[s] == cp.devices[u])
            fwdPairs.emplace_back(u, producedBy(static_cast<int>(s)));
    };
    bool fromWhole = !local && viewOfWholeOperands(producer);
    if (fromWhole) {
      fromOwnDevice();
      if (!gradientHere)
        continue;
    }
    // A split reduction's tasks that each take their part of the init
    // where they run: nothing moves.
    bool initLocal = !local && !fromWhole && access.isDestination &&
                     initStaysLocal(producer, pa, consumer, ca);
    if (initLocal)
      fromOwnDevice();
    if (local) {
      for (size_t u = 0; u < producerOf.size(); ++u)
        fwdPairs.emplace_back(u, producedBy(producerOf[u]));
      if (ownGradient && chain.empty() && !wholeGradient)
        for (size_t s = 0; s < consumerOf.size(); ++s)
          bwdPairs.emplace_back(s, nodeTasks[consumer].bwd[consumerOf[s]]);
      if (!viaReader && !fromAdjoint && chain.empty() && !wholeGradient)
        continue;
    }
    layout::TensorShape shape{tensor.shape, tensor.elementBytes};
    if (!local && !fromWhole && !initLocal) {
      // The reshards lib/layout plans, as the partitioner emits them: the
      // consumer's blocks of each slot from what the producer's tasks wrote
      // (`produced` above) ...
      const SlotLayouts &read = slotLayouts(cp, ca, SlotKind::Blocks);
      std::vector<PlanCache::Copy> &copies = plans->copies[producer][pa];
      auto producedIn = [&](int piece, int device) -> std::vector<int> {
        size_t own = produced.pieces.size();
        if (static_cast<size_t>(piece) >= own)
          return copies[piece - own].madeBy[device];
        int s = produced.task[piece][device];
        return s < 0 ? std::vector<int>{} : std::vector<int>{producedBy(s)};
      };
      std::vector<layout::Layout> withCopies;
      for (size_t k = 0; k < read.pieces.size(); ++k) {
        // The producer's pieces, then the copies earlier readers made (a
        // vector is built only when there are copies).
        if (!copies.empty()) {
          withCopies = produced.pieces;
          for (const PlanCache::Copy &copy : copies)
            withCopies.push_back(copy.layout);
        }
        const layout::ReshardPlan &plan =
            planFor(shape, copies.empty() ? produced.pieces : withCopies,
                    read.pieces[k], /*zerosElsewhere=*/false,
                    /*firstCopy=*/produced.pieces.size());
        TaskKey base{2,
                     consumer,
                     producer,
                     static_cast<int32_t>(ca),
                     static_cast<int32_t>(k),
                     0};
        std::vector<std::vector<int>> ready =
            addPlanTasks(plan, /*forward=*/true, base, producedIn,
                         tensor.elementBytes, groupsOfEdge);
        // What the steps made stays for the next readers.
        if (const layout::Layout *made = layout::communicatedLayout(plan))
          copies.push_back({*made, ready});
        for (int d = 0; d < numDevices; ++d)
          if (int u = read.task[k][d]; u >= 0)
            for (int id : ready[d])
              fwdPairs.emplace_back(u, id);
      }
    }
    if (!gradientHere || seeded)
      continue;
    if (!chain.empty()) {
      if (chain.front() == std::make_pair(consumer, static_cast<int>(ca))) {
        const SlotLayouts &target = gradientTarget();
        std::vector<std::vector<std::vector<int>>> ready =
            chainedGradientSum(chain, producer, target, groupsOfEdge);
        for (size_t k = 0; k < ready.size(); ++k)
          for (int d = 0; d < numDevices; ++d)
            if (int s = target.task[k][d]; s >= 0)
              for (int id : ready[k][d])
                bwdPairs.emplace_back(s, id);
      }
      continue;
    }
    // ... and the gradient from the consumer's blocks (partial sums where
    // its tasks read the same elements; zeros where it reads nothing) back
    // to the producer's; through a lazy transpose, from its reader's blocks
    // permuted.
    SlotLayouts permuted;
    // Slices of disjoint parts of the tensor: their gradients, zero
    // elsewhere, add up without moving (the partitioner's
    // addDisjointParts), and the producer's blocks come from all their
    // pieces at once, on the first slice's edge.
    std::vector<std::pair<int, int>> slices =
        viaReader ? std::vector<std::pair<int, int>>{}
                  : disjointSliceReaders(producer, access.tensor);
    if (!slices.empty() &&
        slices.front() != std::make_pair(consumer, static_cast<int>(ca)))
      continue;
    SlotLayouts joined;
    std::vector<int> pieceReader;
    for (auto [c, a] : slices) {
      const SlotLayouts &theirs =
          slotLayouts(placement(c), a, SlotKind::Gradients);
      for (size_t k = 0; k < theirs.pieces.size(); ++k) {
        joined.pieces.push_back(theirs.pieces[k]);
        joined.task.push_back(theirs.task[k]);
        pieceReader.push_back(c);
      }
    }
    const SlotLayouts &readerBlocks =
        fromAdjoint      ? slotLayouts(placement(adjoint.first), adjoint.second,
                                       SlotKind::Gradients)
        : slices.empty() ? readerGradients(consumer, ca, permuted)
                         : joined;
    // Beside a replicated reader's gradient (whole everywhere), the
    // training step's adjoint sum runs where a gradient of several tasks
    // on a device is, its pieces put together there (the partitioner reads
    // the sum's whole operand in that one's blocks): it moves as one block.
    std::optional<SlotLayouts> onHolders;
    if (!fromAdjoint && !viaReader && slices.empty() &&
        readerBlocks.pieces.size() > 1) {
      std::vector<std::pair<int, int>> readers =
          gradientReadersOf(producer, access.tensor);
      if (std::any_of(readers.begin(), readers.end(), [&](const auto &r) {
            return r.first != static_cast<int>(consumer) &&
                   placement(r.first).replicated;
          }))
        onHolders = joinedOnHolders(cp, ca, readerBlocks);
    }
    const SlotLayouts &gradients = onHolders ? *onHolders : readerBlocks;
    // A replicated producer's backward work has no config: readers'
    // gradients in several layouts add up where the first complete one is
    // (those of one layout where they are, the others moved there), and
    // the sum goes whole to each device, on the first reader's edge.
    // (Disjoint slices come first, as the partitioner's addDisjointParts
    // runs before its deferSum.)
    std::vector<std::pair<int, int>> summedAtFirst =
        slices.empty() ? addendsSummedAtFirst(producer, access.tensor)
                       : std::vector<std::pair<int, int>>{};
    if (!summedAtFirst.empty() &&
        summedAtFirst.front() != std::make_pair(consumer, static_cast<int>(ca)))
      continue;
    const layout::Layout *sumLayout = nullptr;
    std::vector<std::vector<int>> sumMadeBy(numDevices);
    if (!summedAtFirst.empty()) {
      // The target: the first complete gradient's layout; each group of
      // one layout adds up where it is, then moves there.
      std::vector<const SlotLayouts *> theirs;
      for (auto [c, a] : summedAtFirst) {
        theirs.push_back(&slotLayouts(placement(c), a, SlotKind::Gradients));
        if (!sumLayout && theirs.back()->pieces.size() == 1 &&
            !theirs.back()->pieces[0].partial)
          sumLayout = &theirs.back()->pieces[0];
      }
      std::vector<bool> done(summedAtFirst.size(), false);
      for (size_t r = 0; r < summedAtFirst.size(); ++r) {
        if (done[r])
          continue;
        const SlotLayouts &group = *theirs[r];
        // Per piece and device, the tasks that made it: a group of the
        // gradients of one layout, or one gradient of several pieces.
        std::vector<std::vector<std::vector<int>>> madeBy(
            group.pieces.size(), std::vector<std::vector<int>>(numDevices));
        for (size_t o = r; o < summedAtFirst.size(); ++o) {
          if (done[o] ||
              (o != r &&
               (group.pieces.size() != 1 || theirs[o]->pieces.size() != 1 ||
                !sameLayout(group.pieces[0], theirs[o]->pieces[0]))))
            continue;
          done[o] = true;
          const NodeTasks &made = nodeTasks[summedAtFirst[o].first];
          for (size_t k = 0; k < group.pieces.size(); ++k)
            for (int d = 0; d < numDevices; ++d)
              if (int u = theirs[o]->task[k][d]; u >= 0)
                madeBy[k][d].push_back(made.bwd[u]);
        }
        if (group.pieces.size() != 1 ||
            !sameLayout(group.pieces[0], *sumLayout))
          madeBy = {addPlanTasks(
              planFor(shape, group.pieces, *sumLayout,
                      /*zerosElsewhere=*/true),
              /*forward=*/false,
              TaskKey{3, producer, summedAtFirst[r].first,
                      summedAtFirst[r].second, -1, 0},
              [&](int piece, int device) { return madeBy[piece][device]; },
              tensor.elementBytes, groupsOfEdge)};
        for (int d = 0; d < numDevices; ++d)
          sumMadeBy[d].insert(sumMadeBy[d].end(), madeBy[0][d].begin(),
                              madeBy[0][d].end());
      }
    }
    // A replicated producer's backward work (no config) reads the slices'
    // summed gradient completed first where its pieces tile a layout
    // (SpmdPartitioner::completeLayout): each device's parts put together
    // where they are, then that layout moves.
    layout::Layout completedSum;
    if (!slices.empty() && pp.replicated) {
      completedSum =
          layout::completedZerosElsewhere(joined.pieces, tensor.shape);
      if (completedSum.blocks !=
          layout::Layout::everywhere(tensor.shape, numDevices).blocks) {
        sumMadeBy = addPlanTasks(
            planFor(shape, joined.pieces, completedSum,
                    /*zerosElsewhere=*/true),
            /*forward=*/false,
            TaskKey{3, producer, consumer, static_cast<int32_t>(ca), -2, 0},
            [&](int piece, int device) -> std::vector<int> {
              int u = joined.task[piece][device];
              return u < 0 ? std::vector<int>{}
                           : std::vector<int>{
                                 nodeTasks[pieceReader[piece]].bwd[u]};
            },
            tensor.elementBytes, groupsOfEdge);
        sumLayout = &completedSum;
      }
    }
    // Readers whose gradients are in one and the same layout add them
    // where they are (the training step's adjoint sums run where their
    // operands are; sums of partial sums stay partial): one reshard of the
    // sum, on the edge of the first of those readers, after the backward
    // tasks of all of them.
    std::vector<std::pair<const SlotLayouts *, int>> sharing;
    if (gradients.pieces.size() == 1 && !sumLayout && slices.empty()) {
      bool first = true;
      for (auto [c, a] : gradientReadersOf(producer, access.tensor)) {
        if (c == static_cast<int>(consumer) && a == static_cast<int>(ca))
          continue;
        const SlotLayouts &theirs =
            slotLayouts(placement(c), a, SlotKind::Gradients);
        if (theirs.pieces.size() != 1 ||
            !sameLayout(theirs.pieces[0], gradients.pieces[0]))
          continue;
        if (std::make_pair(c, a) <
            std::make_pair(static_cast<int>(consumer), static_cast<int>(ca)))
          first = false;
        sharing.emplace_back(&theirs, c);
      }
      if (!first)
        continue;
    }
    // A pad, reshape or concatenation whose result's readers are all
    // replicated has its adjoint whole on every device, and the partitioner
    // runs its backward view whole there: each producer task takes its
    // blocks where it runs, after the readers' backward work there.
    if (!sumLayout && slices.empty() && sharing.empty() && !viaReader &&
        !fromAdjoint && !onHolders && !wholeGradient) {
      std::vector<std::pair<int, int>> readers = wholeAdjointReaders(consumer);
      if (!readers.empty()) {
        for (size_t s = 0; s < pp.devices.size(); ++s) {
          int d = pp.devices[s];
          for (size_t u = 0; u < cp.devices.size(); ++u)
            if (cp.devices[u] == d)
              bwdPairs.emplace_back(s, nodeTasks[consumer].bwd[u]);
          for (auto [r, a] : readers) {
            const Placement &rp = placement(r);
            for (size_t u = 0; u < rp.devices.size(); ++u)
              if (rp.devices[u] == d)
                bwdPairs.emplace_back(s, nodeTasks[r].bwd[u]);
          }
        }
        continue;
      }
    }
    // ... to the blocks each producer task needs the gradient of (a pad's
    // backward slices its input's part: only that part moves; a
    // concatenation's slices each move their input's part).
    const SlotLayouts &written = gradientTarget();
    SlotLayouts parts;
    std::vector<layout::Block> regions = gradientParts(graph, producer);
    for (const layout::Block &region : regions)
      for (size_t k = 0; k < written.pieces.size(); ++k) {
        parts.pieces.push_back(written.pieces[k]);
        parts.task.push_back(written.task[k]);
        for (std::optional<layout::Block> &block : parts.pieces.back().blocks)
          if (block)
            block = block->intersect(region);
      }
    const SlotLayouts &blocks = regions.empty() ? written : parts;
    const NodeTasks &read_ = nodeTasks[fromAdjoint ? adjoint.first
                                       : viaReader ? lazy.reader
                                                   : consumer];
    auto gradientBy = [&](int piece, int device) -> std::vector<int> {
      std::vector<int> ids;
      if (int u = gradients.task[piece][device]; u >= 0)
        ids.push_back(slices.empty() ? read_.bwd[u]
                                     : nodeTasks[pieceReader[piece]].bwd[u]);
      for (auto [theirs, c] : sharing)
        if (int u = theirs->task[piece][device]; u >= 0)
          ids.push_back(nodeTasks[c].bwd[u]);
      return ids;
    };
    // A complete adjoint also comes from the copies the consumer's
    // backward work made of it, moved to its blocks of the result, as the
    // partitioner plans from every piece of a value.
    std::vector<layout::Layout> adjointPieces;
    std::vector<std::vector<std::vector<int>>> copyMadeBy;
    if (fromAdjoint && layout::holdsEverything(gradients.pieces, shape)) {
      size_t xa = 0;
      while (cn.accesses[xa].role != AccessRole::Write)
        ++xa;
      const SlotLayouts &result = slotLayouts(cp, xa, SlotKind::Blocks);
      adjointPieces = gradients.pieces;
      for (size_t k = 0; k < result.pieces.size(); ++k) {
        const layout::Layout *made = layout::communicatedLayout(
            planFor(shape, gradients.pieces, result.pieces[k],
                    /*zerosElsewhere=*/true));
        if (!made)
          continue;
        adjointPieces.push_back(*made);
        copyMadeBy.emplace_back(numDevices);
        for (int d = 0; d < numDevices; ++d)
          if (int u = result.task[k][d]; u >= 0)
            copyMadeBy.back()[d].push_back(nodeTasks[consumer].bwd[u]);
      }
      if (copyMadeBy.empty())
        adjointPieces.clear();
    }
    // A part that what an earlier part's steps made holds whole is sliced
    // from it (the partitioner keeps it as a piece of the gradient); so is
    // one that what the reshard of the consumer's adjoint for another of
    // its producers made holds, where the gradient is that adjoint itself
    // (PlanCache::gradientCopies).
    std::vector<PlanCache::Copy> partsMade;
    std::vector<PlanCache::Copy> *adjointCopies =
        cn.accesses[ca].gradientIsAdjoint && !sumLayout &&
                adjointPieces.empty() && slices.empty() && sharing.empty() &&
                !viaReader && !fromAdjoint && !onHolders
            ? &plans->gradientCopies[consumer]
            : nullptr;
    // A target no one copy holds is planned from every piece of the value,
    // those copies too (as the partitioner plans).
    if (adjointCopies && !adjointCopies->empty()) {
      adjointPieces = gradients.pieces;
      for (const PlanCache::Copy &copy : *adjointCopies) {
        adjointPieces.push_back(copy.layout);
        copyMadeBy.push_back(copy.madeBy);
      }
    }
    // Partial sums in several slots (a gradient that splits a reduction
    // with several tasks on a device) complete at the reader, block by
    // block on the devices that hold partials of it, as the partitioner
    // completes them after such an op (layout::completeSharedPartials);
    // then the complete blocks move.
    std::optional<layout::SharedCompletion> completion;
    if (!fromAdjoint && !viaReader && slices.empty() && !onHolders &&
        !sumLayout && sharing.empty() && adjointPieces.empty())
      completion = layout::completeSharedPartials(gradients.pieces);
    std::vector<std::vector<std::vector<int>>> completedBy;
    if (completion)
      completedBy = addCompletionTasks(
          *completion, shape,
          TaskKey{3, producer, consumer, static_cast<int32_t>(ca), 0, 0},
          gradientBy, groupsOfEdge);
    const std::vector<layout::Layout> &gradientPieces =
        completion ? completion->pieces : gradients.pieces;
    // The first copy in `copies` that holds `wanted`.
    auto holding = [](const std::vector<PlanCache::Copy> *copies,
                      const layout::Layout &wanted) -> const PlanCache::Copy * {
      if (copies)
        for (const PlanCache::Copy &copy : *copies)
          if (layout::contains(copy.layout, wanted))
            return &copy;
      return nullptr;
    };
    for (size_t k = 0; k < blocks.pieces.size(); ++k) {
      const layout::Layout &target = blocks.pieces[k];
      const PlanCache::Copy *from = holding(&partsMade, target);
      if (!from)
        from = holding(adjointCopies, target);
      // A gradient zero outside its pieces needs of the target only the
      // part inside them: a copy an earlier part's steps made of that part
      // serves too, with zeros for the rest (the partitioner plans from
      // every piece of the gradient, those copies too).
      bool fromNonzeroPart = false;
      if (!from && !sumLayout && adjointPieces.empty()) {
        from = holding(&partsMade, layout::nonzeroPart(target, gradientPieces));
        fromNonzeroPart = from != nullptr;
      }
      const layout::ReshardPlan &plan =
          from        ? planFor(shape, {from->layout}, target,
                                /*zerosElsewhere=*/fromNonzeroPart)
          : sumLayout ? planFor(shape, {*sumLayout}, target,
                                /*zerosElsewhere=*/true)
          : !adjointPieces.empty()
              ? planFor(shape, adjointPieces, target, /*zerosElsewhere=*/false)
              : planFor(shape, gradientPieces, target,
                        /*zerosElsewhere=*/true);
      size_t own = gradients.pieces.size();
      auto adjointBy = [&](int piece, int device) -> std::vector<int> {
        if (completion)
          return completedBy[piece][device];
        return static_cast<size_t>(piece) < own
                   ? gradientBy(piece, device)
                   : copyMadeBy[piece - own][device];
      };
      TaskKey base{3,
                   producer,
                   consumer,
                   static_cast<int32_t>(ca),
                   static_cast<int32_t>(k),
                   0};
      std::vector<std::vector<int>> ready = addPlanTasks(
          plan, /*forward=*/false, base,
          from ? SourceTask(
                     [&](int, int device) { return from->madeBy[device]; })
          : sumLayout
              ? SourceTask([&](int, int device) { return sumMadeBy[device]; })
              : SourceTask(adjointBy),
          tensor.elementBytes, groupsOfEdge);
      if (const layout::Layout *made = layout::communicatedLayout(plan);
          made && !from) {
        partsMade.push_back({*made, ready});
        if (adjointCopies)
          adjointCopies->push_back({*made, ready});
      }
      for (int d = 0; d < numDevices; ++d)
        if (int s = blocks.task[k][d]; s >= 0)
          for (int id : ready[d])
            bwdPairs.emplace_back(s, id);
    }
  }
  groupByTask(fwdPairs, cp.devices.size(), edge.fwdStart, edge.fwdDeps);
  groupByTask(bwdPairs, pp.devices.size(), edge.bwdStart, edge.bwdDeps);
  for (std::vector<int> &ids : groupsOfEdge)
    edge.groups.push_back(addGroup(std::move(ids)));
}

} // namespace soap

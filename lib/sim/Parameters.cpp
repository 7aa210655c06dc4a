//===- Parameters.cpp - the simulator's parameter synchronization --------===//
//
// Where each trained parameter's gradient goes, where the update runs, and
// where the next step finds the updated parameter, as the partitioned
// training step does it:
//
// - Readers whose gradients are partial sums or in one layout (data
//   parallelism, a Megatron split, every reader on one device): devices
//   that read the same region all-reduce its gradient, and each updates its
//   copy.
// - An embedding table under SGD that one gather reads, where no
//   all-reduce sums its gradient: --soap-lower-cpu's sparse-updates
//   applies the step inside the gather's scatter-add, each looked-up row
//   updated in place, so the update adds no work to the gather's backward.
// - One reader whose gradient the partitioner cannot update where it is
//   (a device computes two blocks that are not one box, or blocks of
//   different sizes: layout::combinedLayout, layout::isGridLayout, of
//   partial sums in several slots once completed where they are; or
//   blocks that leave part of it uncovered, zero there): the gradient goes
//   whole to every device, as lib/layout plans it, and each updates the
//   whole parameter, which stays whole everywhere.
// - Readers in different layouts, at least one of them complete (model
//   parallelism placing an RNN's time steps on several devices): the
//   gradient follows the training step's adjoint sums in the backward
//   pass's order. A contraction's gradient accumulates into the sum so
//   far, which first moves to the contraction's layout; any other
//   reader's gradient (partial sums too, in several pieces where tasks
//   share a device) is one more addend of a sum that the partitioner adds
//   where its reader needs it. The update reads it where its last
//   complete addend is, the first reader's layout unless that holds
//   partial sums; the parameter stays there across steps
//   (docs/partition.md, "Sharded state"), and the next step brings each
//   reader its blocks from there.
//
//===----------------------------------------------------------------------===//

#include "SimulatorTasks.h"

#include <algorithm>
#include <map>
#include <set>

namespace soap {

void Simulator::buildParameter(int tensorId) {
  parameterTasks[tensorId] = ParameterTasks();
  if (!buildOwnedParameter(tensorId) && !buildGatheredParameter(tensorId))
    buildSharedParameter(tensorId);
}

bool Simulator::buildGatheredParameter(int tensorId) {
  const std::vector<std::pair<int, int>> &readers = parameterReaders[tensorId];
  if (readers.size() != 1 || sparseSgdStep(tensorId))
    return false;
  auto [node, access] = gradientReader(readers[0].first, readers[0].second);
  const Placement &p = placement(node);
  if (p.replicated)
    return false;
  const GraphTensor &tensor = graph.tensors[tensorId];
  SlotLayouts permuted;
  const SlotLayouts &gradients =
      readerGradients(readers[0].first, readers[0].second, permuted);
  // Partial sums in several slots complete after the gradient op, block
  // by block where they are (layout::completeSharedPartials), as the
  // partitioner completes them; then the complete blocks decide.
  std::optional<layout::SharedCompletion> completion =
      layout::completeSharedPartials(gradients.pieces);
  const std::vector<layout::Layout> &pieces =
      completion ? completion->pieces : gradients.pieces;
  std::optional<layout::Layout> combined = layout::combinedLayout(pieces);
  if (combined && layout::isGridLayout(*combined, tensor.shape))
    return false;
  // Complete blocks (partial sums are synchronized as shared parameters
  // are); where they leave part of the parameter uncovered (a slice of a
  // position-embedding table), its gradient is zero there, and the
  // partitioner, finding no layout those blocks tile, makes it whole on
  // every device too.
  std::set<std::pair<std::vector<int64_t>, std::vector<int64_t>>> blocks;
  for (const layout::Layout &piece : pieces) {
    if (piece.partial)
      return false;
    for (const std::optional<layout::Block> &block : piece.blocks)
      if (block)
        blocks.insert({block->offsets, block->sizes});
  }
  int64_t covered = 0;
  for (const auto &[offsets, sizes] : blocks)
    covered += layout::Block{offsets, sizes}.volume();
  // Blocks that leave part of the parameter uncovered (zeros there) go
  // where the partitioner completes them: whole on every device unless
  // they tile a layout (one device holding them all: its own update).
  bool zerosElsewhere = covered < tensor.numElements();
  int numDevices = machine.numDevices();
  if (zerosElsewhere &&
      layout::completedZerosElsewhere(pieces, tensor.shape).blocks !=
          layout::Layout::everywhere(tensor.shape, numDevices).blocks)
    return false;
  // The update runs whole on every device, which the gradient reaches as
  // lib/layout plans it from the reader's tasks; the parameter stays whole
  // everywhere.
  layout::TensorShape shape{tensor.shape, tensor.elementBytes};
  std::vector<std::vector<int>> steps;
  auto gradientBy = [&](int piece, int device) {
    int t = gradients.task[piece][device];
    return t < 0 ? std::vector<int>{}
                 : std::vector<int>{nodeTasks[node].bwd[t]};
  };
  std::vector<std::vector<std::vector<int>>> completedBy;
  if (completion)
    completedBy =
        addCompletionTasks(*completion, shape, TaskKey{4, tensorId, 3, 0, 0, 0},
                           gradientBy, steps);
  const layout::ReshardPlan &plan = planFor(
      shape, pieces, layout::Layout::everywhere(tensor.shape, numDevices),
      zerosElsewhere);
  std::vector<std::vector<int>> ready = addPlanTasks(
      plan, /*forward=*/false, TaskKey{4, tensorId, 3, 0, 0, 0},
      [&](int piece, int device) {
        return completion ? completedBy[piece][device]
                          : gradientBy(piece, device);
      },
      tensor.elementBytes, steps);
  std::vector<int> updateIds;
  for (int d = 0; d < numDevices; ++d)
    updateIds.push_back(addUpdate(tensorId, 0, d, tensor.bytes(), ready[d]));
  steps.push_back(std::move(updateIds));
  ParameterTasks &sync = parameterTasks[tensorId];
  sync.keptBytes.assign(numDevices, tensor.bytes());
  sync.wholeEverywhere = true;
  for (std::vector<int> &ids : steps)
    if (int g = addGroup(std::move(ids)); g >= 0)
      sync.groups.push_back(g);
  return true;
}

void Simulator::buildSharedParameter(int tensorId) {
  // Every task that reads a region of the parameter holds a gradient for
  // that region; gradients of the tasks on one device add up locally (a
  // weight used at every time step), and devices that read the same region
  // all-reduce it once, unless every reader of the region runs whole
  // everywhere (a replicated op computes the same complete gradient on each
  // device).
  std::vector<int> allReduces, updates;
  const GraphTensor &tensor = graph.tensors[tensorId];
  int numDevices = machine.numDevices();
  std::map<Box, std::vector<std::pair<int, size_t>>> regions; // (node, task)
  for (auto [reader, readerAccess] : parameterReaders[tensorId]) {
    auto [node, access] = gradientReader(reader, readerAccess);
    const Placement &p = placement(node);
    for (size_t t = 0; t < p.devices.size(); ++t)
      if (!isEmpty(p.box(t, access)))
        regions[p.box(t, access).toBox()].emplace_back(node, t);
  }
  bool sparse = sparseSgdStep(tensorId);
  int region = 0;
  for (const auto &[box, readers] : regions) {
    int64_t bytes = boxVolume(box) * tensor.elementBytes;
    std::vector<int> devices;
    for (auto [node, t] : readers)
      devices.push_back(placements[node]->devices[t]);
    std::sort(devices.begin(), devices.end());
    devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
    // Replicated readers and gathers whose gradient runs whole on their
    // devices (Placement::wholeScatter) hold complete gradients.
    bool partialSums = std::any_of(readers.begin(), readers.end(),
                                   [&](const std::pair<int, size_t> &reader) {
                                     const Placement &p =
                                         *placements[reader.first];
                                     return !p.replicated && !p.wholeScatter;
                                   });
    int allReduce = -1;
    if (devices.size() > 1 && partialSums) {
      allReduce = newTask();
      Task &task = tasks[allReduce];
      task.kind = TaskKind::AllReduce;
      task.key = {4, tensorId, -1, region, 0, 0};
      task.bytes = bytes;
      task.groupSize = devices.size();
      task.members.append(devices.begin(), devices.end());
      task.duration =
          cost.collectiveTime(CollectiveKind::AllReduce, bytes, devices);
      for (LinkId link : machine.collectiveLinks(devices))
        task.resources.push_back(numDevices + link);
      occupyDevices(task, devices.data(), devices.data() + devices.size());
      for (auto [node, t] : readers)
        task.preds.push_back(nodeTasks[node].bwd[t]);
      allReduces.push_back(allReduce);
    }
    for (int device : devices) {
      std::vector<int> preds;
      if (allReduce >= 0) {
        preds.push_back(allReduce);
      } else {
        for (auto [node, t] : readers)
          if (placements[node]->devices[t] == device)
            preds.push_back(nodeTasks[node].bwd[t]);
      }
      updates.push_back(addUpdate(tensorId, region, device, bytes, preds,
                                  /*inScatter=*/sparse && allReduce < 0));
    }
    ++region;
  }
  parameterTasks[tensorId].stepInScatter = sparse && allReduces.empty();
  std::vector<int> &groupIds = parameterTasks[tensorId].groups;
  for (std::vector<int> *ids : {&allReduces, &updates})
    if (int g = addGroup(std::move(*ids)); g >= 0)
      groupIds.push_back(g);
  // A lazily transposed parameter stays where its updates ran (its one
  // reader, the transpose, reads other blocks): the regions, dimensions
  // permuted back, each on the devices that updated it.
  const std::vector<std::pair<int, int>> &readers = parameterReaders[tensorId];
  if (readers.size() != 1 || lazyGradients[readers[0].first].reader < 0)
    return;
  const std::vector<int> &outputDim = lazyGradients[readers[0].first].outputDim;
  std::vector<layout::Layout> held;
  for (const auto &[box, regionReaders] : regions) {
    layout::Block block;
    for (int dim : outputDim) {
      block.offsets.push_back(box[dim].first);
      block.sizes.push_back(box[dim].second - box[dim].first + 1);
    }
    layout::Layout kept;
    kept.blocks.resize(numDevices);
    for (auto [node, t] : regionReaders)
      kept.blocks[placements[node]->devices[t]] = block;
    held.push_back(std::move(kept));
  }
  std::vector<std::vector<int>> steps;
  readKeptParameter(tensorId, std::move(held), steps);
  for (std::vector<int> &ids : steps)
    if (int g = addGroup(std::move(ids)); g >= 0)
      groupIds.push_back(g);
}

void Simulator::readKeptParameter(int tensorId,
                                  std::vector<layout::Layout> held,
                                  std::vector<std::vector<int>> &steps) {
  // The next step reads the parameter from there, each reader its blocks
  // (at the start of the step: the previous step's update is done), and
  // later readers also from the copies earlier ones made.
  const GraphTensor &tensor = graph.tensors[tensorId];
  layout::TensorShape shape{tensor.shape, tensor.elementBytes};
  int numDevices = machine.numDevices();
  ParameterTasks &sync = parameterTasks[tensorId];
  std::vector<std::vector<std::vector<int>>> madeBy(
      held.size(), std::vector<std::vector<int>>(numDevices));
  const std::vector<std::pair<int, int>> &readers = parameterReaders[tensorId];
  size_t firstCopy = held.size();
  for (size_t r = 0; r < readers.size(); ++r) {
    auto [node, access] = readers[r];
    const SlotLayouts &read =
        slotLayouts(*placements[node], access, SlotKind::Blocks);
    // Each slot (several tasks on a device read one block each).
    for (size_t k = 0; k < read.pieces.size(); ++k) {
      const layout::ReshardPlan &plan = planFor(
          shape, held, read.pieces[k], /*zerosElsewhere=*/false, firstCopy);
      std::vector<std::vector<int>> ready = addPlanTasks(
          plan, /*forward=*/true,
          TaskKey{4, tensorId, 1, static_cast<int32_t>(r),
                  static_cast<int32_t>(k), 0},
          [&](int piece, int device) { return madeBy[piece][device]; },
          tensor.elementBytes, steps);
      if (const layout::Layout *made = layout::communicatedLayout(plan)) {
        held.push_back(*made);
        madeBy.push_back(ready);
      }
      for (int d = 0; d < numDevices; ++d)
        if (int u = read.task[k][d]; u >= 0)
          for (int id : ready[d])
            sync.forwardDeps.push_back({node, u, id});
    }
  }
}

bool Simulator::sparseSgdStep(int tensorId) const {
  const std::vector<std::pair<int, int>> &readers = parameterReaders[tensorId];
  if (cost.optimizer() != Optimizer::SGD || readers.size() != 1)
    return false;
  const OpNode &reader = graph.nodes[readers[0].first];
  return reader.isLookupTable(reader.accesses[readers[0].second]);
}

bool Simulator::movesElementsOnly(int node) const {
  const OpNode &n = graph.nodes[node];
  if (n.opClass != OpClass::DataMovement)
    return false;
  int64_t read = -1, written = -1;
  for (const NodeAccess &access : n.accesses) {
    int64_t elements = graph.tensors[access.tensor].numElements();
    if (access.role == AccessRole::Write) {
      if (written >= 0)
        return false;
      written = elements;
    } else if (access.readsValue() && !access.isDestination) {
      if (read >= 0)
        return false;
      read = elements;
    }
  }
  return read >= 0 && read == written;
}

int Simulator::syncGroupOf(int update) const {
  int group = 1;
  const TaskInts &preds = tasks[update].preds;
  std::vector<int> work(preds.begin(), preds.end());
  while (!work.empty()) {
    const Task &t = tasks[work.back()];
    work.pop_back();
    if (t.kind == TaskKind::AllReduce ||
        (t.kind == TaskKind::Collective &&
         t.collective == CollectiveKind::AllReduce))
      group = std::max(group, t.groupSize);
    else if (t.kind == TaskKind::Backward && movesElementsOnly(t.key[1]))
      work.insert(work.end(), t.preds.begin(), t.preds.end());
  }
  return group;
}

void Simulator::priceUpdate(int id) {
  Task &task = tasks[id];
  task.duration = task.inScatter ? 0
                                 : cost.updateTime(task.bytes, task.device,
                                                   syncGroupOf(id));
}

int Simulator::addUpdate(int tensorId, int region, int device, int64_t bytes,
                         const std::vector<int> &preds, bool inScatter) {
  int id = newTask();
  Task &task = tasks[id];
  task.kind = TaskKind::Update;
  task.key = {5, tensorId, -1, region, device, 0};
  task.bytes = bytes;
  task.device = device;
  task.resources = {device};
  task.inScatter = inScatter;
  // Priced when its group is sealed (priceUpdate), its predecessors linked.
  task.preds.append(preds.begin(), preds.end());
  return id;
}

bool Simulator::buildOwnedParameter(int tensorId) {
  const GraphTensor &tensor = graph.tensors[tensorId];
  const std::vector<std::pair<int, int>> &readers = parameterReaders[tensorId];
  int numDevices = machine.numDevices();
  // Each reader's gradient: one block per device, no partial sums, not
  // whole on every device (what the partitioner defers as adjoint sums);
  // in at least two layouts; one access per reader.
  // A lazily transposed parameter (its one reader a transpose) is kept
  // where its gradient is even in one layout: the transpose reads other
  // blocks.
  std::vector<const layout::Layout *> layouts;
  // Each lazy reader's permuted blocks, kept while `layouts` points in.
  std::vector<SlotLayouts> permuted(readers.size());
  // The gradients of readers with several tasks on a device.
  std::vector<const SlotLayouts *> multiPiece(readers.size(), nullptr);
  bool anyLazy = false, anyPartial = false;
  for (auto [reader, readerAccess] : readers) {
    auto [node, access] = gradientReader(reader, readerAccess);
    const Placement &p = placement(node);
    if (p.replicated ||
        (!layouts.empty() && reader == readers[layouts.size() - 1].first))
      return false;
    anyLazy |= lazyGradients[reader].reader >= 0;
    const SlotLayouts &gradients =
        readerGradients(reader, readerAccess, permuted[layouts.size()]);
    // Several tasks on a device (pieces): an addend of partial sums, not
    // a place to add nor a product's init (a product's only as the last
    // reader, whose gradient starts the sum: checked below).
    if (gradients.pieces.size() != 1) {
      if (lazyGradients[reader].reader >= 0 ||
          (isContraction(graph.nodes[node].opClass) &&
           layouts.size() + 1 < readers.size()) ||
          !gradients.pieces[0].partial)
        return false;
      anyPartial = true;
      multiPiece[layouts.size()] = &gradients;
      layouts.push_back(&gradients.pieces[0]);
      continue;
    }
    const layout::Layout &mine = gradients.pieces[0];
    // Partial sums (a product that splits its reduction, an op that reads
    // the parameter along a split loop it does not index): an addend, or
    // the init a product accumulates into; the update runs where a
    // complete addend is (below).
    if (mine.partial) {
      if (lazyGradients[reader].reader >= 0 ||
          (layouts.empty() && isContraction(graph.nodes[node].opClass)))
        return false;
      anyPartial = true;
    } else if (std::all_of(mine.blocks.begin(), mine.blocks.end(),
                           [&](const std::optional<layout::Block> &block) {
                             return block &&
                                    block->volume() == tensor.numElements();
                           })) {
      return false;
    }
    layouts.push_back(&mine);
  }
  if (!anyLazy &&
      std::all_of(layouts.begin(), layouts.end(), [&](const layout::Layout *l) {
        return l->blocks == layouts.front()->blocks;
      }))
    return false;
  // Readers whose configs interleave (a config comes back after another):
  // a contraction's gradient accumulates into the chain of its own config
  // alone, and the chains are added last, in the order they began
  // (autodiff::GradientBuilder::interleaved).
  bool interleaved = configsInterleave(readers);
  if (interleaved && anyPartial)
    return false;
  // Whether reader r's gradient, a contraction's, accumulates into the
  // sum of the later readers' (the training step makes that sum its init).
  auto accumulatesIntoSum = [&](size_t r) {
    int node = gradientReader(readers[r].first, readers[r].second).first;
    return !interleaved && r + 1 < readers.size() &&
           isContraction(graph.nodes[node].opClass);
  };
  // The sum ends with the addends after the last product that
  // accumulates in place, and that product's: one of them complete.
  bool completeAddend = false;
  for (size_t r = readers.size(); r-- > 0;) {
    if (accumulatesIntoSum(r))
      completeAddend = false;
    completeAddend |= !layouts[r]->partial;
  }
  if (!completeAddend)
    return false;

  ParameterTasks &sync = parameterTasks[tensorId];
  layout::TensorShape shape{tensor.shape, tensor.elementBytes};
  std::vector<std::vector<int>> steps;
  // The gradient so far, in the backward pass's order.
  using Addend = GradientAddend;
  std::vector<Addend> sum;
  TaskKey base{4, tensorId, 0, 0, 0, 0};
  auto sumIn = [&](const layout::Layout &target) {
    return gradientSumIn(sum, target, shape, /*zerosElsewhere=*/false, base,
                         steps);
  };
  std::vector<Addend> chains;
  std::vector<int> chainNode;
  for (size_t r = readers.size(); r-- > 0;) {
    auto [node, access] = gradientReader(readers[r].first, readers[r].second);
    const Placement &p = *placements[node];
    Addend mine{{layouts[r]}, {std::vector<std::vector<int>>(numDevices)}};
    if (const SlotLayouts *pieces = multiPiece[r]) {
      mine.pieces.clear();
      mine.madeBy.clear();
      for (size_t k = 0; k < pieces->pieces.size(); ++k) {
        mine.pieces.push_back(&pieces->pieces[k]);
        mine.madeBy.emplace_back(numDevices);
        for (int d = 0; d < numDevices; ++d)
          if (int u = pieces->task[k][d]; u >= 0)
            mine.madeBy[k][d].push_back(nodeTasks[node].bwd[u]);
      }
    } else {
      for (size_t t = 0; t < p.devices.size(); ++t)
        mine.madeBy[0][p.devices[t]].push_back(nodeTasks[node].bwd[t]);
    }
    if (interleaved && isContraction(graph.nodes[node].opClass)) {
      size_t c = 0;
      while (c < chains.size() && !sameConfig(chainNode[c], node))
        ++c;
      if (c == chains.size()) {
        chains.push_back(std::move(mine));
        chainNode.push_back(node);
        continue;
      }
      // The product's init is the chain so far, in its own layout.
      for (size_t t = 0; t < p.devices.size(); ++t)
        for (int id : chains[c].madeBy[0][p.devices[t]])
          sync.backwardDeps.push_back({node, static_cast<int>(t), id});
      chains[c].madeBy = std::move(mine.madeBy);
      continue;
    }
    // A contraction's gradient accumulates into the sum so far, which
    // moves to it first; any other reader's gradient is one more addend.
    if (accumulatesIntoSum(r)) {
      // A product that splits its reduction reads the init in its blocks,
      // where it stays when each task adds its part (initAddsLocally).
      layout::Layout blocks = *layouts[r];
      blocks.partial.reset();
      blocks.tasks.clear();
      std::vector<std::vector<int>> init =
          layouts[r]->partial && sum.size() == 1 && sum[0].pieces.size() == 1 &&
                  layout::initAddsLocally(*sum[0].pieces[0], blocks)
              ? sum[0].madeBy[0]
              : sumIn(blocks);
      for (size_t t = 0; t < p.devices.size(); ++t)
        for (int id : init[p.devices[t]])
          sync.backwardDeps.push_back({node, static_cast<int>(t), id});
      sum.clear();
    }
    sum.push_back(std::move(mine));
  }
  for (Addend &chain : chains)
    sum.push_back(std::move(chain));
  // The update reads the sum where its last complete addend is (the first
  // reader's layout unless readers interleave or it holds partial sums:
  // the partitioner's lastCompleteLayout), where the next step starts
  // with the parameter.
  auto complete = std::find_if(sum.rbegin(), sum.rend(), [](const Addend &a) {
    return a.pieces.size() == 1 && !a.pieces[0]->partial;
  });
  const layout::Layout target = *complete->pieces[0];
  std::vector<std::vector<int>> atTarget = sumIn(target);
  std::vector<int> updates(numDevices, -1), updateIds;
  for (int d = 0; d < numDevices; ++d)
    if (target.blocks[d]) {
      updates[d] = addUpdate(tensorId, 0, d,
                             target.blocks[d]->volume() * tensor.elementBytes,
                             atTarget[d]);
      updateIds.push_back(updates[d]);
    }
  steps.push_back(std::move(updateIds));

  if (layout::keptAcrossSteps(target)) {
    sync.keptBytes.assign(numDevices, 0);
    for (int d = 0; d < numDevices; ++d)
      if (target.blocks[d])
        sync.keptBytes[d] = target.blocks[d]->volume() * tensor.elementBytes;
    readKeptParameter(tensorId, {target}, steps);
  } else {
    // Returned whole on every device at the end of the step.
    const layout::ReshardPlan &plan = planFor(
        shape, {target}, layout::Layout::everywhere(tensor.shape, numDevices),
        /*zerosElsewhere=*/false);
    addPlanTasks(
        plan, /*forward=*/true, TaskKey{4, tensorId, 2, 0, 0, 0},
        [&](int, int device) {
          return updates[device] < 0 ? std::vector<int>{}
                                     : std::vector<int>{updates[device]};
        },
        tensor.elementBytes, steps);
  }
  for (std::vector<int> &ids : steps)
    if (int g = addGroup(std::move(ids)); g >= 0)
      sync.groups.push_back(g);
  return true;
}

} // namespace soap

//===- Memory.cpp - what each device holds as the step runs ---------------===//
//
// Memory from liveness, in the partitioned program's order: every rank
// runs the ops' forward work in graph order, then their backward work in
// reverse, then the optimizer's updates, and frees each buffer after its
// last use (the CPU lowering's deallocations). Per device, a buffer lives
// over a range of those points:
//
//   - state, the whole step: every argument, as the step's argument type
//     has it (a trained parameter's block where the partitioner keeps it
//     in its gradients' layout, or its part where the readers split it
//     regularly over all devices; else the whole tensor, even where
//     nothing reads it, as inputs and labels always are); a
//     trained parameter twice (the step's argument and its result) with
//     its optimizer state twice;
//   - an op's output on a device, from its forward work to its last use:
//     the backward work of the first reader whose backward reads it again
//     (OpGraph::keepsForBackward: a ReLU's input, a matmul's operand where
//     the other carries a gradient, not a bias add's) and does not get it
//     through a collective there, else the last reader's forward work, or just
//     before it where that reader takes the buffer over (its only reader: an op
//     that accumulates into it, an elementwise op that writes its result in its
//     place); outputs nothing reads (the loss), to the end. Views (reshapes,
//     slices) hold nothing: their readers read what they view; nor do
//     transposing or broadcasting copies that only products read (directly or
//     through other such copies: the CPU lowering folds them into the products,
//     which read the source through the composed map);
//   - the gradient of an op's output, from the backward work of its last
//     reader that has some to the op's own backward work;
//   - a parameter's gradient where devices synchronize it (another device
//     reads an overlapping region), from the backward work of its last
//     reader to the updates, which all-reduce them one by one in argument
//     order, each in place (the CPU lowering's reduceInPlaceWhereInputsDie);
//     unsynchronized gradients go into the update in place, and an SGD
//     step of a gathered table goes into the gather's scatter (no gradient
//     buffer: sparseSgdStep); a chain of products that the CPU lowering
//     merges into one (mergedChain below) from the merged product on, the
//     products' operands held until then;
//   - data received for a reader (transfers), from the reader's forward
//     work to its backward work where that keeps it (else to its forward
//     work);
//     gradients received, from the reader's to the producer's backward.
//
// A reshard's collectives hold their results on each member (an
// all-gather's gathered block, a reduce-scatter's share) from the reader's
// forward work to its backward work where that keeps the operand (else
// over its forward work), or from its backward work to the producer's for
// a gradient: the partitioned program keeps the collective's result for
// the backward ops that read the operand again, and the producer's block
// serves the collective alone on that device.
//
//===----------------------------------------------------------------------===//

#include "SimulatorTasks.h"

#include "soap/cost/CostModel.h"

#include <algorithm>
#include <iterator>

namespace soap {

static bool isViewOp(const OpNode &node) {
  static const char *const kViews[] = {
      "tensor.expand_shape", "tensor.collapse_shape", "tensor.extract_slice",
      "tensor.cast", "tensor.reshape"};
  return std::find(std::begin(kViews), std::end(kViews), node.opName) !=
         std::end(kViews);
}

Simulator::MemoryPlan &Simulator::memoryPlan() {
  if (memoryPlanCache)
    return *memoryPlanCache;
  memoryPlanCache = std::make_unique<MemoryPlan>();
  MemoryPlan &plan = *memoryPlanCache;
  int numNodes = static_cast<int>(graph.nodes.size());
  size_t numTensors = graph.tensors.size();
  auto hasBackward = [&](int node) {
    return options.training && graph.nodes[node].needsBackward;
  };
  // A view's operand and result (whatever their roles: a reshape reads
  // and writes nothing) are one buffer.
  std::vector<int> root(numTensors);
  for (size_t t = 0; t < numTensors; ++t)
    root[t] = static_cast<int>(t);
  plan.isView.assign(numNodes, 0);
  // A transposing or broadcasting copy that only products read, directly
  // or through other such copies, is folded into them (the products read
  // its source through the composed map): a view too.
  const std::vector<std::vector<int>> &readers = consumersOf;
  plan.foldedUntil.assign(numNodes, -1);
  for (int n = numNodes - 1; n >= 0; --n)
    if (graph.nodes[n].relayoutCopy && !readers[n].empty() &&
        std::all_of(readers[n].begin(), readers[n].end(), [&](int c) {
          return graph.nodes[c].opClass == OpClass::Matmul ||
                 plan.foldedUntil[c] >= 0;
        }))
      plan.foldedUntil[n] = readers[n].back();
  for (int n = 0; n < numNodes; ++n) {
    const OpNode &node = graph.nodes[n];
    if (!isViewOp(node) && plan.foldedUntil[n] < 0)
      continue;
    int in = -1, out = -1;
    for (const NodeAccess &access : node.accesses) {
      bool result = graph.tensors[access.tensor].producer == n;
      if (result && out < 0)
        out = access.tensor;
      else if (!result && in < 0)
        in = access.tensor;
    }
    if (in < 0 || out < 0)
      continue;
    plan.isView[n] = 1;
    root[out] = root[in];
  }
  // Each buffer's readers (views' readers included): the last; whether
  // its only reader may take it over (an accumulation into it, or an
  // elementwise op that writes a tensor of its size in its place:
  // writeIntoDyingInputs); those with backward work that read it again;
  // the last with backward work (where its gradient starts).
  for (std::vector<int> *v : {&plan.lastRead, &plan.lastBackward})
    v->assign(numTensors, -1);
  plan.savedReaders.assign(numTensors, {});
  std::vector<int> reads(numTensors, 0), accumulations(numTensors, 0);
  plan.takenOver.assign(numTensors, 0);
  for (int c = 0; c < numNodes; ++c) {
    const OpNode &node = graph.nodes[c];
    if (plan.isView[c])
      continue;
    for (const NodeAccess &access : node.accesses) {
      int t = root[access.tensor];
      if (access.role != AccessRole::Read || graph.tensors[t].producer < 0 ||
          graph.tensors[t].producer == c)
        continue;
      plan.lastRead[t] = std::max(plan.lastRead[t], c);
      ++reads[t];
      accumulations[t] += access.isDestination;
      plan.takenOver[t] =
          access.isDestination ||
          (node.opClass == OpClass::Elementwise && !access.savedForBackward &&
           std::any_of(node.accesses.begin(), node.accesses.end(),
                       [&](const NodeAccess &w) {
                         return w.role == AccessRole::Write &&
                                graph.tensors[w.tensor].bytes() ==
                                    graph.tensors[t].bytes();
                       }));
      if (!hasBackward(c))
        continue;
      plan.lastBackward[t] = std::max(plan.lastBackward[t], c);
      if (graph.keepsForBackward(
              c, static_cast<int>(&access - node.accesses.data())))
        plan.savedReaders[t].emplace_back(
            c, graph.tensors[access.tensor].producer);
    }
  }
  // A buffer that several ops accumulate into is theirs, one copy each
  // (the CPU lowering's unshareInits fills one per reader): it holds
  // nothing past its own point.
  for (size_t t = 0; t < numTensors; ++t) {
    bool perReader = reads[t] > 1 && accumulations[t] == reads[t];
    if (perReader)
      plan.lastRead[t] = graph.tensors[t].producer + 1; // taken over at once
    if (reads[t] != 1)
      plan.takenOver[t] = perReader;
  }
  // Arguments some op reads or views (empty tensors and constants are
  // no arguments).
  plan.argSlot.assign(numTensors, -1);
  for (const OpNode &node : graph.nodes)
    for (const NodeAccess &access : node.accesses) {
      int t = access.tensor;
      const GraphTensor &tensor = graph.tensors[t];
      if (tensor.producer >= 0 || !(tensor.isParameter || tensor.isInput) ||
          access.role == AccessRole::Write || plan.argSlot[t] >= 0)
        continue;
      plan.argSlot[t] = static_cast<int>(plan.argTensor.size());
      plan.argTensor.push_back(t);
      plan.argRangeAt.push_back(plan.argRanges);
      plan.argRanges += graph.tensors[t].shape.size();
    }
  return plan;
}

bool Simulator::anyReshardTask(
    int edge, const std::function<bool(const Task &)> &pred) const {
  for (int g : edges[edge].groups)
    for (int id : groups[g].tasks)
      if (pred(tasks[id]))
        return true;
  return false;
}

namespace {
bool isMember(const TaskInts &members, int device) {
  return std::find(members.begin(), members.end(), device) != members.end();
}
} // namespace

bool Simulator::communicatesFrom(int producer, int device,
                                 bool gradient) const {
  // Keys (Reshards.cpp): 2 a forward edge's steps, 3 a gradient edge's.
  int kind = gradient ? 3 : 2;
  auto moves = [&](const Task &task) {
    if (task.key[0] % 8 != kind)
      return false;
    if (task.kind == TaskKind::Collective)
      return isMember(task.members, device);
    return (task.kind == TaskKind::Transfer ||
            task.kind == TaskKind::GradTransfer) &&
           (gradient ? task.dst : task.src) == device;
  };
  return std::any_of(consumerEdges[producer].begin(),
                     consumerEdges[producer].end(),
                     [&](int e) { return anyReshardTask(e, moves); });
}

bool Simulator::readsThroughCollective(int producer, int reader,
                                       int device) const {
  auto collective = [&](const Task &task) {
    return task.kind == TaskKind::Collective && isMember(task.members, device);
  };
  return std::any_of(
      producerEdges[reader].begin(), producerEdges[reader].end(), [&](int e) {
        return edgeEnds[e].first == producer && anyReshardTask(e, collective);
      });
}

void Simulator::accountMemory(std::vector<MemoryPoint> *timeline) {
  MemoryPlan &plan = memoryPlan();
  int numNodes = static_cast<int>(graph.nodes.size());
  int numDevices = machine.numDevices();
  // Points: forward of op i is i, its backward 2N - 1 - i, the updates 2N.
  int numPoints = 2 * numNodes + 1;
  auto forwardAt = [](int node) { return node; };
  auto backwardAt = [&](int node) { return 2 * numNodes - 1 - node; };
  int updatesAt = 2 * numNodes;
  size_t stride = memoryStride();
  // From what transfers brought (kept up to date as they come and go).
  std::vector<int64_t> &diff = memoryScratch;
  diff = accounts->received;
  auto hold = [&](int device, int from, int to, int64_t bytes) {
    diff[device * stride + from] += bytes;
    diff[device * stride + to + 1] -= bytes;
  };
  bool training = options.training;
  auto hasBackward = [&](int node) {
    return training && graph.nodes[node].needsBackward;
  };

  size_t numSlots = plan.argTensor.size();
  plan.box.resize(plan.argRanges * numDevices);
  plan.reads.assign(numSlots * numDevices, 0);
  plan.lastReader.assign(numSlots * numDevices, -1);
  plan.gradient.assign(numSlots * numDevices, 0);
  auto boxAt = [&](int slot, int device) {
    size_t rank = graph.tensors[plan.argTensor[slot]].shape.size();
    return plan.box.data() + plan.argRangeAt[slot] * numDevices + device * rank;
  };

  for (int n = 0; n < numNodes; ++n) {
    const OpNode &node = graph.nodes[n];
    const Placement &p = placement(n);
    for (size_t t = 0; t < p.devices.size(); ++t)
      for (size_t a = 0; a < node.accesses.size(); ++a) {
        const NodeAccess &access = node.accesses[a];
        const GraphTensor &tensor = graph.tensors[access.tensor];
        int device = p.devices[t];
        BoxRef box = p.box(t, a);
        if (tensor.producer < 0) {
          // An argument (a view of it reads nothing, but holds it too).
          int slot = plan.argSlot[access.tensor];
          if (access.role == AccessRole::Write || slot < 0)
            continue;
          size_t k = static_cast<size_t>(slot) * numDevices + device;
          Range *held = boxAt(slot, device);
          for (size_t d = 0; d < box.rank; ++d)
            held[d] = plan.reads[k]
                          ? Range{std::min(held[d].first, box.first[d].first),
                                  std::max(held[d].second, box.first[d].second)}
                          : box.first[d];
          plan.reads[k] = 1;
          if (hasBackward(n))
            plan.lastReader[k] = std::max(plan.lastReader[k], n);
          continue;
        }
        if (tensor.producer != n || (access.role != AccessRole::Write &&
                                     access.role != AccessRole::Unread))
          continue;
        if (plan.isView[n]) {
          // A folded copy that a reshard moves is made after all: its
          // block serves the reshard over its readers' forward work; its
          // gradient, where a reshard brings it, over the backward work.
          int last = plan.foldedUntil[n];
          if (last < 0)
            continue;
          int64_t bytes = boxVolume(box) * tensor.elementBytes;
          if (communicatesFrom(n, device, /*gradient=*/false))
            hold(device, forwardAt(n), forwardAt(last), bytes);
          if (hasBackward(n) && communicatesFrom(n, device, /*gradient=*/true))
            hold(device, backwardAt(last), backwardAt(n), bytes);
          continue;
        }
        int id = access.tensor;
        int end = numPoints - 1; // nothing reads it: a result
        // The first reader whose backward work reads this device's block
        // again; a reader that reads it through a collective on this
        // device reads the collective's result again (accountReceived),
        // and the block serves its forward work only.
        int saved = -1;
        for (auto [reader, from] : plan.savedReaders[id])
          if (!readsThroughCollective(from, reader, device)) {
            saved = reader;
            break;
          }
        if (saved >= 0)
          end = backwardAt(saved);
        else if (plan.lastRead[id] >= 0)
          end = std::max(
              forwardAt(n),
              forwardAt(plan.lastRead[id]) -
                  (plan.takenOver[id] && plan.savedReaders[id].empty() ? 1
                                                                       : 0));
        int64_t bytes = boxVolume(box) * tensor.elementBytes;
        hold(device, forwardAt(n), end, bytes);
        if (hasBackward(n))
          hold(device,
               plan.lastBackward[id] >= 0 ? backwardAt(plan.lastBackward[id])
                                          : backwardAt(n),
               backwardAt(n), bytes);
      }
  }

  // A parameter's gradient on a device as a chain of products that the CPU
  // lowering merges into one (mergeAccumulatingProducts; through guards,
  // gatherAccumulationChains first): every reader there a product
  // (linalg.matmul, one task there, the parameter read directly), two or
  // more, all on the same devices, each worth merging (its operands,
  // K (M + N) elements, at most twice its M x N block: worthMerging). The
  // merged product runs at the last product's backward work where the
  // products run on every device, else (in guards) before the sum's first
  // reader: right after the last product where the device sends its sum
  // at once (`sentAtOnce`: to the device that keeps the parameter), else
  // at the updates (its all-reduce or its update). Each product's operands
  // (its other input, its output's gradient) wait for it there, where they
  // are also concatenated. Holds those and returns the point, or -1.
  auto mergedChain = [&](int tensorId, int device, bool sentAtOnce) -> int {
    const std::vector<int> *devices = nullptr;
    struct Product {
      int node;
      int64_t operandBytes;
    };
    std::vector<Product> products;
    for (auto [reader, access] : parameterReaders[tensorId]) {
      const Placement &p = placement(reader);
      auto task = std::find(p.devices.begin(), p.devices.end(), device);
      if (task == p.devices.end())
        continue;
      const OpNode &node = graph.nodes[reader];
      if (node.opName != "linalg.matmul" || p.replicated ||
          lazyGradients[reader].reader >= 0 ||
          std::find(task + 1, p.devices.end(), device) != p.devices.end() ||
          (devices && *devices != p.devices))
        return -1;
      devices = &p.devices;
      BoxRef param = p.box(task - p.devices.begin(), access);
      if (param.rank != 2)
        return -1;
      // Ranges are inclusive.
      int64_t m = param.first[0].second - param.first[0].first + 1;
      int64_t n = param.first[1].second - param.first[1].first + 1;
      // The gradient's reduction: the loops the parameter does not index.
      int64_t k = 1;
      for (size_t loop = 0; loop < p.shard.size(); ++loop)
        if (std::none_of(node.accesses[access].indices.begin(),
                         node.accesses[access].indices.end(),
                         [&](const IndexExpr &index) {
                           return index.singleLoop() == loop;
                         }))
          k *= p.shard[loop];
      if (k * (m + n) > 2 * m * n)
        return -1;
      int64_t bytes = 0;
      for (size_t a = 0; a < node.accesses.size(); ++a) {
        const NodeAccess &other = node.accesses[a];
        if (static_cast<int>(a) != access &&
            ((other.role == AccessRole::Read && !other.isDestination) ||
             other.role == AccessRole::Write))
          bytes += boxVolume(p.box(task - p.devices.begin(), a)) *
                   graph.tensors[other.tensor].elementBytes;
      }
      products.push_back({reader, bytes});
    }
    if (products.size() < 2)
      return -1;
    int first = numNodes;
    for (const Product &product : products)
      first = std::min(first, product.node);
    int at = static_cast<int>(devices->size()) == numDevices ? backwardAt(first)
             : sentAtOnce ? std::min(backwardAt(first) + 1, updatesAt)
                          : updatesAt;
    int64_t concatenated = 0;
    for (const Product &product : products) {
      concatenated += product.operandBytes;
      if (backwardAt(product.node) < at)
        hold(device, backwardAt(product.node) + 1, at, product.operandBytes);
    }
    hold(device, at, at, concatenated);
    return at;
  };

  // State and parameter gradients. Every rank holds every argument: a
  // parameter whose readers' gradients are summed in one layout it stays in
  // across steps (buildOwnedParameter), a block of that layout; else its
  // part where the readers split it regularly over all devices (the
  // partitioner then keeps a trained parameter's state split), else the
  // whole tensor (the step's argument type: inputs and labels always), even
  // on devices that do not read it.
  int64_t stateCopies =
      training ? 2 * optimizerStateCopies(cost.optimizer()) : 0;
  for (size_t slot = 0; slot < numSlots; ++slot) {
    const GraphTensor &tensor = graph.tensors[plan.argTensor[slot]];
    size_t rank = tensor.shape.size();
    const char *reads = plan.reads.data() + slot * numDevices;
    const int *lastReaders = plan.lastReader.data() + slot * numDevices;
    bool split =
        std::all_of(reads, reads + numDevices, [](char r) { return r != 0; });
    bool differ = false;
    const Range *first = boxAt(slot, 0);
    for (int d = 1; d < numDevices && split; ++d) {
      const Range *other = boxAt(slot, d);
      for (size_t i = 0; i < rank; ++i) {
        split &= other[i].second - other[i].first ==
                 first[i].second - first[i].first;
        differ |= other[i].first != first[i].first;
      }
    }
    // The last reader with backward work on any device (the first to add
    // to the gradient), or -1.
    int lastReader = *std::max_element(lastReaders, lastReaders + numDevices);
    bool updated = training && tensor.isParameter && lastReader >= 0;
    // Only trained state stays split across steps (inputs arrive whole).
    split &= differ && updated;
    int64_t copies = updated ? 2 + stateCopies : 1;
    const ParameterTasks &sync = parameterTasks[plan.argTensor[slot]];
    const std::vector<int64_t> &kept = sync.keptBytes;
    // The step's argument type: one block's (a device that holds none gets
    // a buffer of that type too, unused).
    int64_t keptType =
        kept.empty() ? 0 : *std::max_element(kept.begin(), kept.end());
    for (int d = 0; d < numDevices; ++d) {
      BoxRef mine{boxAt(slot, d), rank};
      int64_t bytes = !kept.empty() ? keptType
                      : split       ? boxVolume(mine) * tensor.elementBytes
                                    : tensor.bytes();
      hold(d, 0, numPoints - 1, bytes * copies);
      if (!updated)
        continue;
      // A parameter kept where its gradients are summed: a device that
      // holds a block of it holds that block of the sum, from the backward
      // work of the last reader (the first to add to it) to its update; a
      // device that only reads it, what it adds (its part), from its last
      // reader's backward work on (until the updates: the sum may take it
      // earlier).
      if (!kept.empty()) {
        int64_t gradient = kept[d] ? kept[d]
                           : lastReaders[d] >= 0
                               ? boxVolume(mine) * tensor.elementBytes
                               : 0;
        if (gradient == 0)
          continue;
        int merged = mergedChain(plan.argTensor[slot], d,
                                 /*sentAtOnce=*/kept[d] == 0);
        if (merged < updatesAt)
          hold(d,
               merged >= 0 ? merged
                           : backwardAt(kept[d] ? lastReader : lastReaders[d]),
               updatesAt - 1, gradient);
        plan.gradient[slot * numDevices + d] = gradient;
        continue;
      }
      // An SGD step in a gather's scatter has no gradient buffer.
      if (lastReaders[d] < 0 || sync.stepInScatter)
        continue;
      int merged = mergedChain(plan.argTensor[slot], d, /*sentAtOnce=*/false);
      // Devices that read overlapping regions all-reduce the gradient at
      // the updates; elsewhere the update takes it in place.
      bool synchronized = false;
      for (int o = 0; o < numDevices && !synchronized; ++o)
        synchronized = o != d && reads[o] &&
                       overlapVolume(mine, BoxRef{boxAt(slot, o), rank}) > 0;
      if (!synchronized)
        continue;
      int64_t gradient = boxVolume(mine) * tensor.elementBytes;
      // A merged chain's sum from its merged product on (at the updates:
      // the updates' hold below alone).
      if (merged < updatesAt)
        hold(d, merged < 0 ? backwardAt(lastReaders[d]) : merged, updatesAt - 1,
             gradient);
      plan.gradient[slot * numDevices + d] = gradient;
    }
  }
  // At the updates, the all-reduces run one by one in argument order, each
  // in its gradient's buffer (the gradient dies there), which is freed
  // once its update ran: the most they hold is every gradient, before the
  // first.
  for (int d = 0; d < numDevices; ++d) {
    int64_t gradients = 0;
    for (size_t slot = 0; slot < numSlots; ++slot)
      gradients += plan.gradient[slot * numDevices + d];
    hold(d, updatesAt, updatesAt, gradients);
  }

  // Running sums: the peak per device, and the timeline when asked for.
  Accounts &acc = *accounts;
  acc.memory.assign(numDevices, 0);
  if (timeline) {
    timeline->assign(numPoints, {});
    for (int n = 0; n < numNodes; ++n) {
      const OpNode &node = graph.nodes[n];
      std::string name = node.opName;
      if (!node.location.empty())
        name += " (" + node.location + ")";
      (*timeline)[forwardAt(n)].what = "forward " + name;
      (*timeline)[backwardAt(n)].what = "backward " + name;
    }
    (*timeline)[updatesAt].what = "updates";
    for (MemoryPoint &point : *timeline)
      point.bytes.assign(numDevices, 0);
  }
  for (int d = 0; d < numDevices; ++d) {
    int64_t live = 0, peak = 0;
    for (int i = 0; i < numPoints; ++i) {
      live += diff[d * stride + i];
      peak = std::max(peak, live);
      if (timeline)
        (*timeline)[i].bytes[d] = live;
    }
    acc.memory[d] = peak;
  }
}

void Simulator::accountReceived(const Task &task, int sign) {
  // Keys (Reshards.cpp): a forward edge's (2) names its consumer, then its
  // producer; a gradient edge's (3) its producer, then its consumer. What
  // a reader receives of a parameter (4, key[2] == 1) is the reader's (the
  // key[3]-th); a gradient sum's move (4, 0) lands where the sum is kept
  // (accountMemory holds it there), and a result returned whole (4, 2; 7)
  // is the step's result type (state).
  if (task.intermediate)
    return;
  int numNodes = static_cast<int>(graph.nodes.size());
  size_t stride = memoryStride();
  auto backwardAt = [&](int node) { return 2 * numNodes - 1 - node; };
  // What a reader receives for its `access`-th operand: until its forward
  // work is done, or its backward work where that keeps the operand.
  auto readerSpan = [&](int reader, int access) {
    const OpNode &node = graph.nodes[reader];
    bool saved = options.training && node.needsBackward &&
                 (access < 0 || graph.keepsForBackward(reader, access));
    return std::pair<int, int>{reader, saved ? backwardAt(reader) : reader};
  };
  std::pair<int, int> span;
  switch (task.key[0] % 8) {
  case 2:
    span = readerSpan(task.key[1], task.key[3]);
    break;
  case 3:
    span = {backwardAt(task.key[2]), backwardAt(task.key[1])};
    break;
  case 4: {
    if (task.key[2] != 1)
      return;
    auto [reader, access] = parameterReaders[task.key[1]][task.key[3]];
    span = readerSpan(reader, access);
    break;
  }
  default:
    return;
  }
  // Each device that receives: a transfer's target, a collective's members
  // (each with its part of the result).
  auto receive = [&](int device, int64_t bytes) {
    std::vector<int64_t> &received = accounts->received;
    received[device * stride + span.first] += sign * bytes;
    received[device * stride + span.second + 1] -= sign * bytes;
  };
  if (task.kind != TaskKind::Collective) {
    receive(task.dst, task.bytes);
    return;
  }
  // A collective's result for a reader is its operand there, kept for its
  // backward work as a received block is (the producer's block serves the
  // collective alone: accountMemory).
  int64_t bytes = task.collective == CollectiveKind::ReduceScatter
                      ? task.bytes / std::max(task.groupSize, 1)
                      : task.bytes;
  for (int device : task.members)
    receive(device, bytes);
}

std::vector<MemoryPoint> Simulator::memoryTimeline() {
  std::vector<MemoryPoint> timeline;
  accountMemory(&timeline);
  return timeline;
}

} // namespace soap

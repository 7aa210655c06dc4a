//===- Memory.cpp - what each device holds as the step runs ---------------===//
//
// Memory from liveness, in the partitioned program's order: every rank
// runs the ops' forward work in graph order, then their backward work in
// reverse, then the optimizer's updates, and frees each buffer after its
// last use (the CPU lowering's deallocations). Per device, a buffer lives
// over a range of those points:
//
//   - state, the whole step: every argument, as the step's argument type
//     has it (the device's part where the readers split it regularly over
//     all devices, else the whole tensor, even where nothing reads it); a
//     trained parameter twice (the step's argument and its result) with
//     its optimizer state twice;
//   - an op's output on a device, from its forward work to its last use:
//     the backward work of the first reader whose backward reads it again
//     (NodeAccess::savedForBackward: a ReLU's or a matmul's input, not a
//     bias add's), else the last reader's forward work, or just before it
//     where that reader takes the buffer over (its only reader: an op that
//     accumulates into it, an elementwise op that writes its result in its
//     place); outputs nothing reads (the loss), to the end. Views
//     (reshapes, slices) hold nothing: their readers read what they view;
//   - the gradient of an op's output, from the backward work of its last
//     reader that has some to the op's own backward work;
//   - a parameter's gradient where devices synchronize it (another device
//     reads an overlapping region), from the backward work of its last
//     reader to the updates, which all-reduce them one by one in argument
//     order (each result buffer on top of the gradients not yet reduced);
//     unsynchronized gradients go into the update in place;
//   - data received for a reader (transfers), from the reader's forward
//     work to its backward work (or to its forward work when it has none);
//     gradients received, from the reader's to the producer's backward.
//
// Collectives' result buffers are not counted yet (a reshard by all_gather
// or all_to_all holds its result like a transfer does).
//
//===----------------------------------------------------------------------===//

#include "SimulatorTasks.h"

#include "soap/cost/CostModel.h"

#include <algorithm>

namespace soap {

void Simulator::accountMemory(std::vector<MemoryPoint> *timeline) {
  int numNodes = static_cast<int>(graph.nodes.size());
  int numDevices = machine.numDevices();
  // Points: forward of op i is i, its backward 2N - 1 - i, the updates 2N.
  int numPoints = 2 * numNodes + 1;
  auto forwardAt = [](int node) { return node; };
  auto backwardAt = [&](int node) { return 2 * numNodes - 1 - node; };
  int updatesAt = 2 * numNodes;
  size_t stride = static_cast<size_t>(numPoints) + 1;
  std::vector<int64_t> &diff = memoryScratch;
  diff.assign(stride * numDevices, 0);
  auto hold = [&](int device, int from, int to, int64_t bytes) {
    diff[device * stride + from] += bytes;
    diff[device * stride + to + 1] -= bytes;
  };
  bool training = options.training;
  auto hasBackward = [&](int node) {
    return training && graph.nodes[node].needsBackward;
  };

  // Arguments: per tensor and device, the bounding box of what it reads,
  // and the last reader with backward work (for parameter gradients).
  struct Held {
    int device;
    Box box;
    int lastReader;
  };
  std::vector<std::vector<Held>> args(graph.tensors.size());
  // Views (reshapes, slices) have no buffer of their own in the program:
  // they stand for the tensor they view, whose readers theirs are.
  size_t numTensors = graph.tensors.size();
  std::vector<int> &root = memoryReaders[0];
  root.resize(numTensors);
  for (size_t t = 0; t < numTensors; ++t)
    root[t] = static_cast<int>(t);
  auto viewed = [&](const OpNode &node) -> std::pair<int, int> {
    static const char *const kViews[] = {
        "tensor.expand_shape", "tensor.collapse_shape", "tensor.extract_slice",
        "tensor.cast", "tensor.reshape"};
    if (std::find(std::begin(kViews), std::end(kViews), node.opName) ==
        std::end(kViews))
      return {-1, -1};
    // Its operand and its result (whatever their roles: a reshape reads
    // and writes nothing).
    int in = -1, out = -1;
    for (const NodeAccess &access : node.accesses) {
      bool result = graph.tensors[access.tensor].producer ==
                    static_cast<int>(&node - graph.nodes.data());
      if (result && out < 0)
        out = access.tensor;
      else if (!result && in < 0)
        in = access.tensor;
    }
    return {in, out};
  };
  for (int n = 0; n < numNodes; ++n)
    if (auto [in, out] = viewed(graph.nodes[n]); in >= 0 && out >= 0)
      root[out] = root[in];
  // Per buffer (a root tensor an op produces): its last reader, how many
  // reads it has, whether its only reader may take the buffer over (an
  // accumulation into it, or an elementwise op that writes a tensor of its
  // size in its place: writeIntoDyingInputs), the first reader with
  // backward work that keeps it for that work, and the last reader with
  // backward work (where its gradient starts).
  std::vector<int> &lastRead = memoryReaders[1], &firstSaved = memoryReaders[2],
                   &lastBackward = memoryReaders[3], &reads = memoryReaders[4],
                   &takenOver = memoryReaders[5];
  for (std::vector<int> *v : {&lastRead, &firstSaved, &lastBackward})
    v->assign(numTensors, -1);
  reads.assign(numTensors, 0);
  takenOver.assign(numTensors, 0);
  for (int c = 0; c < numNodes; ++c) {
    const OpNode &node = graph.nodes[c];
    if (viewed(node).first >= 0)
      continue;
    for (const NodeAccess &access : node.accesses) {
      int t = root[access.tensor];
      if (access.role != AccessRole::Read || graph.tensors[t].producer < 0 ||
          graph.tensors[t].producer == c)
        continue;
      lastRead[t] = std::max(lastRead[t], c);
      ++reads[t];
      takenOver[t] =
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
      lastBackward[t] = std::max(lastBackward[t], c);
      if (access.savedForBackward && (firstSaved[t] < 0 || c < firstSaved[t]))
        firstSaved[t] = c;
    }
  }
  for (int n = 0; n < numNodes; ++n) {
    const OpNode &node = graph.nodes[n];
    const Placement &p = placement(n);
    bool isView = viewed(node).first >= 0;
    for (size_t t = 0; t < p.devices.size(); ++t)
      for (size_t a = 0; a < node.accesses.size(); ++a) {
        const NodeAccess &access = node.accesses[a];
        const GraphTensor &tensor = graph.tensors[access.tensor];
        int device = p.devices[t];
        BoxRef box = p.box(t, a);
        if (tensor.producer < 0) {
          if (access.role != AccessRole::Read)
            continue;
          std::vector<Held> &held = args[access.tensor];
          auto it = std::find_if(held.begin(), held.end(), [&](const Held &h) {
            return h.device == device;
          });
          if (it == held.end()) {
            held.push_back({device, box.toBox(), -1});
            it = held.end() - 1;
          } else {
            for (size_t d = 0; d < box.rank; ++d) {
              it->box[d].first = std::min(it->box[d].first, box.first[d].first);
              it->box[d].second =
                  std::max(it->box[d].second, box.first[d].second);
            }
          }
          if (hasBackward(n))
            it->lastReader = std::max(it->lastReader, n);
          continue;
        }
        if (tensor.producer != n || isView ||
            (access.role != AccessRole::Write &&
             access.role != AccessRole::Unread))
          continue;
        int id = access.tensor;
        int end = numPoints - 1; // nothing reads it: a result
        if (firstSaved[id] >= 0)
          end = backwardAt(firstSaved[id]);
        else if (lastRead[id] >= 0)
          end = std::max(forwardAt(n),
                         forwardAt(lastRead[id]) -
                             (reads[id] == 1 && takenOver[id] ? 1 : 0));
        int64_t bytes = boxVolume(box) * tensor.elementBytes;
        hold(device, forwardAt(n), end, bytes);
        if (hasBackward(n))
          hold(device,
               lastBackward[id] >= 0 ? backwardAt(lastBackward[id])
                                     : backwardAt(n),
               backwardAt(n), bytes);
      }
  }

  // State and parameter gradients. Every rank holds every argument: its
  // part where the readers split it regularly over all devices (the
  // partitioner then keeps a trained parameter's state split), else the
  // whole tensor (the step's argument type), even on devices that do not
  // read it.
  int64_t stateCopies =
      training ? 2 * optimizerStateCopies(cost.optimizer()) : 0;
  // Per device, the synchronized gradients in update order (arguments').
  std::vector<std::vector<int64_t>> gradients(numDevices);
  for (size_t id = 0; id < args.size(); ++id) {
    const std::vector<Held> &held = args[id];
    if (held.empty())
      continue;
    const GraphTensor &tensor = graph.tensors[id];
    bool split = static_cast<int>(held.size()) == numDevices;
    bool differ = false;
    for (const Held &h : held) {
      for (size_t d = 0; d < h.box.size() && split; ++d) {
        const Range &r = h.box[d], &f = held.front().box[d];
        split &= r.second - r.first == f.second - f.first;
        differ |= r.first != f.first;
      }
    }
    split &= differ;
    int lastReader = -1;
    for (const Held &h : held)
      lastReader = std::max(lastReader, h.lastReader);
    bool updated = training && tensor.isParameter && lastReader >= 0;
    int64_t copies = updated ? 2 + stateCopies : 1;
    for (int d = 0; d < numDevices; ++d) {
      auto it = std::find_if(held.begin(), held.end(),
                             [&](const Held &h) { return h.device == d; });
      int64_t bytes =
          split ? boxVolume(it->box) * tensor.elementBytes : tensor.bytes();
      hold(d, 0, numPoints - 1, bytes * copies);
      if (!updated || it == held.end() || it->lastReader < 0)
        continue;
      // Devices that read overlapping regions all-reduce the gradient at
      // the updates; elsewhere the update takes it in place.
      bool synchronized =
          std::any_of(held.begin(), held.end(), [&](const Held &other) {
            return other.device != d &&
                   overlapVolume(BoxRef{it->box.data(), it->box.size()},
                                 BoxRef{other.box.data(), other.box.size()}) >
                       0;
          });
      if (!synchronized)
        continue;
      int64_t gradient = boxVolume(it->box) * tensor.elementBytes;
      hold(d, backwardAt(it->lastReader), updatesAt - 1, gradient);
      gradients[d].push_back(gradient);
    }
  }
  // At the updates, each all-reduce's result joins the gradients not yet
  // reduced (each is freed once its update ran).
  for (int d = 0; d < numDevices; ++d) {
    int64_t remaining = 0, peak = 0;
    for (auto g = gradients[d].rbegin(); g != gradients[d].rend(); ++g) {
      remaining += *g;
      peak = std::max(peak, remaining + *g);
    }
    hold(d, updatesAt, updatesAt, peak);
  }

  // Data received for a reader, and gradients received for a producer.
  for (size_t e = 0; e < edges.size(); ++e) {
    auto [producer, consumer] = edgeEnds[e];
    for (int g : edges[e].groups)
      for (int id : groups[g].tasks) {
        const Task &task = tasks[id];
        if (task.kind == TaskKind::Transfer)
          hold(task.dst, forwardAt(consumer),
               hasBackward(consumer) ? backwardAt(consumer)
                                     : forwardAt(consumer),
               task.bytes);
        else if (task.kind == TaskKind::GradTransfer)
          hold(task.dst, backwardAt(consumer), backwardAt(producer),
               task.bytes);
      }
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

std::vector<MemoryPoint> Simulator::memoryTimeline() {
  std::vector<MemoryPoint> timeline;
  accountMemory(&timeline);
  return timeline;
}

} // namespace soap

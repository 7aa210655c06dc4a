//===- Sums.cpp - adjoint sums added where their reader needs them --------===//
//
// An adjoint sum of gradients in different layouts (the readers of one
// value on different devices) is not computed where it stands
// (SpmdPartitioner::deferSum): whoever reads it brings each addend to the
// boxes it reads and adds them there (DistValue::addends), as the
// simulator's gradient edges price it.
//
//===----------------------------------------------------------------------===//

#include "SpmdPartitioner.h"

#include <numeric>

using namespace mlir;
using namespace soap;
using namespace soap::partition;

Value SpmdPartitioner::onDevices(ArrayRef<int64_t> devices, Type type,
                                 function_ref<Value()> build, Location loc) {
  if (static_cast<int64_t>(devices.size()) == numDevices)
    return build();
  auto guard = OnDevicesOp::create(b, loc, TypeRange{type},
                                   b.getDenseI64ArrayAttr(devices));
  OpBuilder::InsertionGuard insertion(b);
  b.setInsertionPointToStart(&guard.getBody().emplaceBlock());
  YieldOp::create(b, loc, build());
  return guard.getResult(0);
}

Value SpmdPartitioner::addLocally(Operation *sumOp, Value x, Value y,
                                  ArrayRef<int64_t> devices, Location loc) {
  auto type = cast<RankedTensorType>(x.getType());
  return onDevices(
      devices, type,
      [&] {
        auto generic = cast<linalg::GenericOp>(sumOp);
        IRMapping mapping;
        mapping.map(generic.getDpsInputs()[0], x);
        mapping.map(generic.getDpsInputs()[1], y);
        mapping.map(generic.getDpsInits()[0],
                    tensor::EmptyOp::create(b, loc, type.getShape(),
                                            type.getElementType()));
        Operation *local = b.clone(*sumOp, mapping);
        local->getResult(0).setType(type);
        return local->getResult(0);
      },
      loc);
}

bool SpmdPartitioner::onlyPartialSums(ArrayRef<Value> addends,
                                      DistValue *pieces) const {
  if (addends.empty())
    return false;
  for (Value addend : addends) {
    auto found = dist.find(addend);
    if (found == dist.end())
      return false;
    const DistValue &value = found->second;
    if (value.rebuiltByReaders() || value.spread || value.zerosElsewhere ||
        !value.addends.empty() || value.pieces.empty())
      return false;
    if (value.slotSums) {
      // One complete value, wherever it is: one partial sum, counted once.
      const Piece *piece = onlyProducedPiece(value);
      if (!piece || piece->partial)
        return false;
      if (pieces) {
        Piece once = *piece;
        once.partial = ReductionKind::sum;
        once.tasks.assign(numDevices, 0);
        pieces->pieces.push_back(std::move(once));
      }
      continue;
    }
    for (const Piece &piece : value.pieces) {
      if (piece.derived)
        continue;
      if (piece.partial != ReductionKind::sum)
        return false;
      if (pieces)
        pieces->pieces.push_back(piece);
    }
  }
  return true;
}

void SpmdPartitioner::allReducePartialSums(Value original, Location loc) {
  auto type = cast<RankedTensorType>(original.getType());
  DistValue partials;
  if (!onlyPartialSums(dist[original].addends, &partials)) {
    materializeSum(original, everywhere(type), loc, /*realize=*/true);
    return;
  }
  DeviceBoxes target(numDevices);
  SmallVector<int64_t> group, tasks(numDevices, -1);
  for (const Piece &piece : partials.pieces)
    for (auto [device, box] : llvm::enumerate(piece.boxes))
      if (box && !target[device]) {
        target[device] = wholeBox(type);
        tasks[device] = 0;
        group.push_back(device);
      }
  llvm::sort(group);
  SmallVector<int> ids(partials.pieces.size());
  std::iota(ids.begin(), ids.end(), 0);
  Value whole = universalGather(partials, ids, type, loc, group);
  DistValue &sum = dist[original];
  sum.pieces = {
      Piece{whole, std::move(target), std::move(tasks), std::nullopt}};
  sum.addends.clear();
  sum.sums.clear();
  sum.sumOp = nullptr;
}

Value SpmdPartitioner::materializeSum(Value original, const DeviceBoxes &target,
                                      Location loc, bool realize) {
  auto finish = [&](const Piece &piece) {
    if (realize) {
      DistValue &value = dist[original];
      value.pieces = {piece};
      value.addends.clear();
      value.sums.clear();
      value.sumOp = nullptr;
    }
    return piece.local;
  };
  for (const Piece &sum : dist[original].sums)
    if (sum.boxes == target)
      return finish(Piece(sum));
  SmallVector<Value> addends = dist[original].addends;
  Operation *sumOp = dist[original].sumOp;
  auto holdersOf = [](const DeviceBoxes &boxes) {
    SmallVector<int64_t> devices;
    for (auto [device, box] : llvm::enumerate(boxes))
      if (box)
        devices.push_back(device);
    return devices;
  };
  // Addends in one layout add up where they are, then move once. An
  // addend without one layout (several tasks per device) moves alone.
  std::vector<std::pair<std::optional<Piece>, SmallVector<Value>>> groups;
  for (Value addend : addends) {
    std::optional<Piece> piece = layoutOf(addend);
    auto same = groups.end();
    if (piece)
      same = llvm::find_if(groups, [&](const auto &group) {
        return group.first && sameLayout(*group.first, *piece);
      });
    if (same == groups.end())
      groups.push_back({std::move(piece), {addend}});
    else
      same->second.push_back(addend);
  }
  Value result;
  for (auto &[piece, members] : groups) {
    Value source = members.front();
    if (members.size() > 1) {
      Value local = piece->local;
      for (Value member : llvm::drop_begin(members))
        local = addLocally(sumOp, local, layoutOf(member)->local,
                           holdersOf(piece->boxes), loc);
      // The group's sum, keyed by its local value, to be moved like any
      // distributed value.
      source = local;
      dist[source].pieces.push_back(
          Piece{local, piece->boxes, piece->tasks, piece->partial});
    }
    Value moved = materialize(source, target, loc);
    result = result ? addLocally(sumOp, result, moved, holdersOf(target), loc)
                    : moved;
  }
  SmallVector<int64_t> tasks(numDevices, -1);
  for (int64_t device : holdersOf(target))
    tasks[device] = 0;
  Piece sum{result, target, std::move(tasks), std::nullopt};
  dist[original].sums.push_back(sum);
  return finish(sum);
}

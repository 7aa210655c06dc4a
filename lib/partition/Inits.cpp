//===- Inits.cpp - the inits of ops that split their reductions ----------===//
//
// An op that splits a reduction loop writes partial results on several
// devices; its init (a bias broadcast, the sum so far of an accumulated
// gradient) is added by the tasks at the start of each split loop, or,
// where the init already lies in the op's blocks as partial sums or as
// parts that tile them, by every task where it runs, with nothing moved
// (the simulator's rule: layout::initAddsLocally).
//
//===----------------------------------------------------------------------===//

#include "SpmdPartitioner.h"

#include "Reductions.h"

#include "soap/layout/Layout.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace soap;
using namespace soap::partition;

/// The local value of `init` when it holds partial results of `kind` in
/// exactly the `boxes` the op's tasks write, one distinct partial on each
/// of those devices and none elsewhere: each device then adds its own
/// partial into its task's, and the sum over the devices stays right (a
/// weight's gradient accumulated over an RNN's time steps needs no
/// all_reduce per step). Null otherwise.
Value SpmdPartitioner::accumulatingInit(Value init, const DeviceBoxes &boxes,
                                        ReductionKind kind) {
  auto found = dist.find(init);
  if (found == dist.end() || found->second.rebuiltByReaders() ||
      found->second.pieces.empty())
    return nullptr;
  const Piece &piece = found->second.pieces.front();
  if (piece.partial != kind ||
      !layout::initAddsLocally(layoutOfPiece(piece), layoutOfBoxes(boxes)))
    return nullptr;
  return piece.local;
}

/// The local value of `init` for an op whose split reduction loops make
/// several devices write partial results of one block, when `init` is
/// split so that the parts those devices hold tile their block: each
/// device puts its part into the identity of `kind` at the part's place,
/// and the partial results then combine to the init plus the op's result
/// without moving the init (a gradient accumulated into by a product that
/// is reduce-scattered afterwards). Null otherwise.
Value SpmdPartitioner::embeddedInit(Value init, const DeviceBoxes &boxes,
                                    ReductionKind kind, Location loc) {
  auto found = dist.find(init);
  if (found == dist.end() || found->second.rebuiltByReaders() ||
      found->second.zerosElsewhere)
    return nullptr;
  const Piece *piece = onlyProducedPiece(found->second);
  if (!piece || piece->partial || !piece->local)
    return nullptr;
  if (!layout::initAddsLocally(layoutOfPiece(*piece), layoutOfBoxes(boxes)))
    return nullptr;
  // Where every part is its block, the init needs no embedding.
  DeviceBoxes parts(numDevices);
  const Box *anyBlock = nullptr, *anyPart = nullptr;
  bool moves = false;
  for (int64_t device = 0; device < numDevices; ++device) {
    if (!boxes[device])
      continue;
    parts[device] = piece->boxes[device];
    anyBlock = &*boxes[device];
    anyPart = &*parts[device];
    moves |= !(*parts[device] == *boxes[device]);
  }
  if (!moves)
    return nullptr;
  auto blockType = RankedTensorType::get(
      anyBlock->sizes, cast<RankedTensorType>(init.getType()).getElementType());
  Value identity = identityFilled(b, loc, blockType, kind);
  SmallVector<OpFoldResult> sizes,
      strides(anyPart->sizes.size(), b.getIndexAttr(1));
  for (int64_t size : anyPart->sizes)
    sizes.push_back(b.getIndexAttr(size));
  return tensor::InsertSliceOp::create(
      b, loc, piece->local, identity,
      offsetsOf(parts, &boxes, blockType.getRank(), loc), sizes, strides);
}

//===- Layout.h - distributed tensor layouts and the reshard planner -*- C++
//-*-===//
//
// A distributed tensor's layout says, for every device, which block of the
// tensor it holds (nothing, a part, or the whole) and whether the blocks are
// partial results that still need a combination (partial sums of a split
// reduction). Splits along several dimensions (2-D grids), replicas, device
// subsets and any device order are all blocks on devices.
//
// planReshard is the one place that decides how a tensor moves from the
// layouts it is held in to the layout a consumer reads: a list of steps
// (kind, device groups, dimension, bytes). The partitioner emits exactly
// those steps and the simulator prices exactly those steps.
//
// Plain C++: no MLIR types, so it is unit-tested alone.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_LAYOUT_LAYOUT_H
#define SOAP_LAYOUT_LAYOUT_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace soap::layout {

/// A box of a tensor: an offset and a size per dimension.
struct Block {
  std::vector<int64_t> offsets, sizes;

  static Block whole(const std::vector<int64_t> &shape);
  int64_t volume() const;
  bool contains(const Block &inner) const;
  /// Whether the two blocks share an element.
  bool overlaps(const Block &other) const;
  /// The common part of the two blocks; none when they do not meet.
  std::optional<Block> intersect(const Block &other) const;
  /// Grows this block to the smallest box around it and `other`.
  void extendTo(const Block &other);
  bool operator==(const Block &other) const {
    return offsets == other.offsets && sizes == other.sizes;
  }
  bool operator!=(const Block &other) const { return !(*this == other); }
  std::string str() const;
};

/// How partial results combine (in the order of soap::ReductionKind).
enum class Combine { Sum, Max, Min, Mean };
const char *combineName(Combine combine);

/// What every device holds of one distributed tensor.
struct Layout {
  /// Per device (the index is the device): the block it holds, none when it
  /// holds nothing.
  std::vector<std::optional<Block>> blocks;
  /// Set when the blocks hold partial results of this combination: the
  /// value of a block is the combination of the partials of distinct tasks.
  std::optional<Combine> partial;
  /// Per device, when partial: which partial it holds (equal ids are copies
  /// of one partial, counted once).
  std::vector<int64_t> tasks;

  int numDevices() const { return static_cast<int>(blocks.size()); }
  /// The devices that hold something, in increasing order.
  std::vector<int> holders() const;
  std::string str() const;

  /// The whole tensor on each of `devices` (of `numDevices`).
  static Layout whole(const std::vector<int64_t> &shape, int numDevices,
                      const std::vector<int> &devices);
  /// The whole tensor on every one of `numDevices` devices.
  static Layout everywhere(const std::vector<int64_t> &shape, int numDevices);
  /// `shape` split into `group.size()` equal parts along `dim`: part i on
  /// device group[i]; nothing elsewhere.
  static Layout split(const std::vector<int64_t> &shape, int numDevices,
                      int dim, const std::vector<int> &group);
};

/// Whether two partial layouts' task ids (per device, as Layout::tasks)
/// say the same copies: two devices hold copies of one partial in `a`
/// exactly when they do in `b`. Partial sums in such layouts (and equal
/// blocks) add up where they are, whichever tasks made them.
template <typename TasksA, typename TasksB>
bool sameCopies(const TasksA &a, const TasksB &b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t j = i + 1; j < a.size(); ++j)
      if ((a[i] == a[j]) != (b[i] == b[j]))
        return false;
  return true;
}

/// A tensor's global shape and element size.
struct TensorShape {
  std::vector<int64_t> shape;
  int64_t elementBytes = 4;
  int64_t bytes() const;
  int64_t bytes(const Block &block) const {
    return block.volume() * elementBytes;
  }
};

/// The kinds of reshard steps.
enum class StepKind {
  /// Each device takes its target block out of what it holds.
  Slice,
  /// The partials of each group combine; every member ends with the
  /// combination of its block.
  AllReduce,
  /// The partials of the group (whole blocks) combine and the i-th of
  /// group-size equal parts along `dim` stays on the i-th member.
  ReduceScatter,
  /// The members of each group hold the equal parts, in group order, of one
  /// range along `dim`; each ends with all of them.
  AllGather,
  /// The members of the group hold equal parts, in group order, of one
  /// range along `fromDim`; the i-th member ends with the i-th of equal
  /// parts along `dim` and all of that range along `fromDim`.
  AllToAll,
  /// `root` sends its block to every other member of the group.
  Broadcast,
  /// Point-to-point transfers of blocks between devices, each device then
  /// assembling its target block from what it holds and what it received.
  SendRecv,
  /// SendRecv whose devices keep their own block and receive only the
  /// rims their neighbours hold (a window op split along a spatial
  /// dimension).
  HaloExchange,
  /// Each device combines the partial results of `pieces` it holds (the
  /// tasks of a split reduction that share a device), each of one block
  /// per device: one partial layout, a distinct partial per device (a
  /// complete one where no other device holds the block). No traffic.
  LocalSum,
  /// Partial results in blocks that overlap without being equal (the
  /// input gradient of a window op split along a spatial dimension: each
  /// task's rows and its halo): each device starts its target block from
  /// the combination's identity and combines into it the parts of each
  /// distinct partial that fall in it, its own where it holds them, the
  /// others sent point to point (`transfers`); only the overlaps move.
  SendRecvCombine,
  /// The fallback for partial results in an irregular layout: every device
  /// writes what it is responsible for into a tensor of the combination's
  /// identity, and an all-reduce over all devices combines the whole
  /// tensor.
  AllReduceWhole,
};
const char *stepKindName(StepKind kind);

/// One part of a device's target block in a SendRecv or HaloExchange:
/// `block` (global coordinates) from device `from` to device `to`, out of
/// the plan's piece `piece` (-1: out of the previous step's result). A part
/// the device already holds has from == to: a local copy, no traffic.
struct Transfer {
  int from = -1, to = -1;
  int piece = 0;
  Block block;
};

/// One step of a reshard.
struct Step {
  StepKind kind = StepKind::Slice;
  /// Collectives: the device groups, each in part order; groups are
  /// disjoint and run at once.
  std::vector<std::vector<int>> groups;
  int dim = -1;     ///< AllGather, ReduceScatter; AllToAll: the new split
  int fromDim = -1; ///< AllToAll: the split it starts from
  int root = -1;    ///< Broadcast
  Combine combine = Combine::Sum;
  /// SendRecv and HaloExchange: every part of every target block.
  std::vector<Transfer> transfers;
  /// LocalSum, AllReduceWhole: the pieces it combines.
  std::vector<int> pieces;
  /// Collectives: the bytes of one group's collective as
  /// Machine::collectiveCost counts them (all-reduce and reduce-scatter:
  /// each member's input; all-gather: the gathered output; broadcast: the
  /// root's buffer; all-to-all: each member's send buffer); AllReduceWhole:
  /// the whole tensor. SendRecv: the bytes of the transfers between
  /// devices.
  int64_t bytes = 0;
  /// What every device holds after this step.
  Layout result;

  std::string str() const;
};

/// How a tensor held as `pieces` becomes `target`.
struct ReshardPlan {
  /// The piece the first step reads, or holds the target when there is
  /// no step (-1: several, as the first step's transfers or pieces say).
  /// Every later step reads the result of the one before.
  int piece = 0;
  std::vector<Step> steps;

  /// One line per step.
  std::string str() const;
};

/// The step whose result readers reuse as a copy of the value: the last
/// one that moves elements between devices (not a local slice, nor
/// transfers that all stay on their device, as a block cut out of what a
/// collective left, zeros around it); where none does, the last one that
/// is not a local slice (a block assembled from the pieces a device
/// holds); -1 when every step is a local slice.
int communicatedStep(const ReshardPlan &plan);

/// The result of communicatedStep; none when it is -1.
const Layout *communicatedLayout(const ReshardPlan &plan);

/// Plans how `tensor`, held as `pieces` (copies in different layouts; at
/// least one), reaches `target` (non-partial; devices without a block need
/// nothing). Every piece must have target.numDevices() devices. Preference:
/// a piece that already holds the target (no step), a local slice, each
/// device's block copied out of whichever complete piece holds it there,
/// the collective that fits (reduce-scatter, grouped all-reduce,
/// all-to-all, all-gather along one dimension per step, broadcast),
/// point-to-point transfers of exactly the blocks that are missing, and
/// only for partial results no regular collective fits, AllReduceWhole. Readers
/// of one range of a tensor (a slice) that would need point-to-point transfers
/// get the collective of the whole range along the dimensions they all read
/// alike, then a local slice, when one fits; readers that all read one range
/// along some dimensions (a pad's interior) get that range alone
/// re-split, each device slicing it out of its piece first, when that
/// moves less (or as much without point-to-point transfers); partial
/// results read in part are reduce-scattered whole along the split
/// dimension, then sliced. A collective that gathers blocks its readers
/// then slice, when the readers together read all it gathered (a re-split
/// in another device order), gives way to point-to-point transfers of the
/// missing blocks where those move fewer bytes. A single piece that holds
/// every element leaves no zeros elsewhere.
///
/// With `zerosElsewhere`, elements that no piece holds are zeros that need
/// no transfer (a gradient: a reader that reads part of a tensor
/// contributes nothing to the rest).
ReshardPlan planReshard(const TensorShape &tensor,
                        const std::vector<Layout> &pieces, const Layout &target,
                        bool zerosElsewhere = false);

/// planReshard from `pieces`, of which those from `firstCopy` on are copies
/// that earlier readers' reshards made of the others (each holds what they
/// hold in its blocks). A copy that overlaps the pieces it was made from
/// without holding the target leaves no transfer plan (a block would come
/// from two sources) but the whole tensor's all-reduce; then the plan from
/// the pieces before `firstCopy` alone, when that needs no all-reduce of
/// the whole and moves at most half of the tensor (the all-reduce leaves
/// the whole tensor on every device, for the reader's other tasks and
/// later readers to slice): the init of a convolution's second
/// input-gradient task, taken from a gradient whose first task's init made
/// a copy. Piece numbers in the plan are `pieces`' own. The partitioner
/// and the simulator plan a value with copies through this one function.
ReshardPlan planReshardBesideCopies(const TensorShape &tensor,
                                    const std::vector<Layout> &pieces,
                                    size_t firstCopy, const Layout &target,
                                    bool zerosElsewhere = false);

/// True when the distinct blocks of a complete layout tile the whole
/// tensor (copies aside): it leaves no zeros elsewhere.
bool holdsEverything(const Layout &layout, const TensorShape &tensor);
/// The same for the pieces of one value together (a value whose tasks on
/// one device hold several blocks).
bool holdsEverything(const std::vector<Layout> &pieces,
                     const TensorShape &tensor);

/// True when every device with a block in `target` holds exactly that
/// block in `held`, as a complete (non-partial) value.
bool covers(const Layout &held, const Layout &target);
/// True when every device with a block in `target` holds a complete block
/// that contains it in `held`.
bool contains(const Layout &held, const Layout &target);

/// The pieces of one value as one block per device, as the partitioner
/// completes a value that an op without a config reads
/// (SpmdPartitioner::completedLayoutOf): a device's complete blocks that
/// tile one box make that box, a device's partial sums of one box (every
/// piece partial) that box, now complete. None when a device's blocks
/// leave holes in their box, differ as partial sums, or the pieces mix
/// partial and complete blocks.
std::optional<Layout> combinedLayout(const std::vector<Layout> &pieces);

/// Whether an elementwise op without a config runs where `held` is (the
/// partitioner's planFromOperands): the holders' blocks are of one size
/// that divides `shape` and cover every block of the grid that size makes.
/// Otherwise it runs whole on every device, its operands gathered there.
bool isGridLayout(const Layout &held, const std::vector<int64_t> &shape);

/// Where the pieces of a value that is zero outside them become one
/// complete block per device with the least movement, as the partitioner
/// completes such a value for an op without a config (a gradient of a
/// slice): each holder's smallest box around its blocks, whole along the
/// dimensions where every holder's box has the same range, when those
/// boxes are of one size, disjoint and cover `shape`; otherwise the whole
/// tensor on every device.
Layout completedZerosElsewhere(const std::vector<Layout> &pieces,
                               const std::vector<int64_t> &shape);

/// What a reader of a value that is zero outside `pieces` needs of
/// `target`: each block cut to the smallest box around every block of the
/// pieces (none where it misses that box). A copy that holds this much
/// serves the reader with zeros for the rest (a strided convolution's input
/// gradient, nonzero only in the rows the convolution reads).
Layout nonzeroPart(const Layout &target, const std::vector<Layout> &pieces);

/// Complete pieces of one value (an op with several tasks on a device: a
/// piece per slot of its tasks) regrouped so that piece k holds each
/// device's k-th distinct block in order of offsets (a block a device holds
/// in several pieces, a copy, once): a grouping that does not depend on
/// the order of the op's tasks. A gradient op orders its tasks as its own
/// loops run, the simulator as the forward op's do; both group the blocks
/// so before planning from them.
struct Regrouping {
  std::vector<Layout> pieces;
  /// [piece of `pieces`][device]: the piece of the input that holds the
  /// block there, or -1.
  std::vector<std::vector<int>> from;
};
/// The regrouping of `pieces`; the pieces as they are (from[k][d] == k)
/// when any is partial.
Regrouping canonicalPieces(const std::vector<Layout> &pieces);

/// Partial sums of an op with several tasks on a device, in several pieces
/// (one per slot of its tasks), completed where they are as the
/// partitioner does after such an op (SpmdPartitioner::
/// completeSharedPartials): each distinct block on the devices that hold
/// partials of it, added up on each device, then one all-reduce over those
/// devices.
struct SharedCompletion {
  struct Group {
    Block block;
    /// The devices that hold partials of the block, in increasing order:
    /// the all-reduce's group (none when only one device holds some).
    std::vector<int> devices;
    /// (piece, device) of every partial of the block.
    std::vector<std::pair<int, int>> partials;
  };
  /// In order of first appearance (piece by piece, device by device).
  std::vector<Group> groups;
  /// The complete value: the pieces' blocks, each device's once, grouped
  /// as canonicalPieces groups them.
  std::vector<Layout> pieces;
  /// [piece of `pieces`][device]: the group whose block it is, or -1.
  std::vector<std::vector<int>> groupOf;
};

/// The completion of `pieces` (at least two, every one partial) where any
/// two of their blocks are equal or disjoint; none otherwise (overlapping
/// windows' partials, which their readers combine).
std::optional<SharedCompletion>
completeSharedPartials(const std::vector<Layout> &pieces);

/// Whether training state updated in `held` stays there across steps (the
/// partitioner's soap.shard, the simulator's parameter readers at the
/// start of the next step): complete blocks of one shape on the devices
/// that hold one, either a split (over every device or a subset of them)
/// or the whole tensor on some devices and nothing on the others.
/// Otherwise the step returns the state whole on every device.
bool keptAcrossSteps(const Layout &held);

/// Whether an op that splits a reduction and writes `blocks` (one slot of
/// its tasks) takes its init, held as `init`, where each task runs, with
/// nothing moved (the partitioner's accumulatingInit and embeddedInit):
/// partial sums in exactly those blocks, one distinct partial on each of
/// their devices, each adding its own; or complete parts inside each
/// task's block that tile the block of each group of tasks writing one
/// block, each put into the reduction's identity.
bool initAddsLocally(const Layout &init, const Layout &blocks);

/// Whether a gather's gradient (a scatter-add of what the gather's output
/// gradient and indices say into a table-sized sum) that a split would
/// leave as partial sums of the table on its devices runs whole on each of
/// them instead, on those reads brought there whole: when the table
/// (`tableBytes`) is larger than the reads (`readBytes`, every tensor the
/// scatter reads, whole), gathering them moves less than all-reducing the
/// partial tables (an embedding table's gradient under data parallelism),
/// and every device holds the complete gradient. The partitioner
/// (SpmdPartitioner::partitionScatterAdd) and the simulator
/// (Placement::wholeScatter) decide by it alike.
bool scatterRunsWhole(int64_t tableBytes, int64_t readBytes);

} // namespace soap::layout

#endif // SOAP_LAYOUT_LAYOUT_H

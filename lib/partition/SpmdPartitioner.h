//===- SpmdPartitioner.h - the SPMD partitioner's state -------*- C++ -*-===//
//
// Private to lib/partition: the SPMD partitioner and its distributed values.
// Spmd.cpp is the driver: it walks the step and hands each op to its
// PartitionableOpInterface::partition, which picks one of the rewrites the
// partitioner offers (soap/Dialect/SpmdRewriter.h): SpmdLoops.cpp (linalg
// ops by their plans, SpmdPlans.cpp; scatter-adds) or SpmdViews.cpp
// (reshapes, slices, pads, concatenations, lazy transposes). Ops with no
// partitioned form run whole everywhere. Reshard.cpp moves values between
// the layouts ops read, as lib/layout's reshard planner says; Sums.cpp adds
// adjoint sums of gradients in different layouts where their reader needs
// them.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_LIB_PARTITION_SPMDPARTITIONER_H
#define SOAP_LIB_PARTITION_SPMDPARTITIONER_H

#include "soap/Dialect/Gather.h"
#include "soap/Dialect/SoapDialect.h"
#include "soap/Dialect/SpmdRewriter.h"
#include "soap/layout/Layout.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"

#include <numeric>
#include <optional>

namespace soap::partition {

struct ScatterAddNest; // soap/Partition/ScatterLoops.h

using namespace mlir;

/// A block of a tensor: an offset and a size per dimension.
struct Box {
  SmallVector<int64_t> offsets, sizes;
  bool operator==(const Box &other) const {
    return offsets == other.offsets && sizes == other.sizes;
  }
  int64_t volume() const {
    int64_t n = 1;
    for (int64_t size : sizes)
      n *= size;
    return n;
  }
  /// Whether every element of `inner` is in this box.
  bool contains(const Box &inner) const {
    for (size_t d = 0; d < sizes.size(); ++d)
      if (inner.offsets[d] < offsets[d] ||
          inner.offsets[d] + inner.sizes[d] > offsets[d] + sizes[d])
        return false;
    return true;
  }
  /// Whether this box and `other` share an element.
  bool meets(const Box &other) const {
    for (size_t d = 0; d < sizes.size(); ++d)
      if (offsets[d] >= other.offsets[d] + other.sizes[d] ||
          other.offsets[d] >= offsets[d] + sizes[d])
        return false;
    return true;
  }
  /// Grows this box to the smallest one that also holds `other`.
  void extendTo(const Box &other) {
    for (size_t d = 0; d < sizes.size(); ++d) {
      int64_t lo = std::min(offsets[d], other.offsets[d]);
      int64_t hi =
          std::max(offsets[d] + sizes[d], other.offsets[d] + other.sizes[d]);
      offsets[d] = lo;
      sizes[d] = hi - lo;
    }
  }
};

/// Per device: the box it holds or reads (none: nothing).
using DeviceBoxes = SmallVector<std::optional<Box>>;

/// One local SSA value of a distributed tensor (the same type on every
/// rank) and what it holds on each device.
struct Piece {
  Value local;
  DeviceBoxes boxes;
  /// The task each device computed (-1: none); tells copies of one partial
  /// result apart from different partial results.
  SmallVector<int64_t> tasks;
  std::optional<ReductionKind> partial;
  /// A re-split copy of the value (an all_to_all or a reduce_scatter of
  /// the piece its producer wrote): kept so that every consumer that reads
  /// this layout reuses it, but never combined with the producer's pieces
  /// and invisible to the choice of plans (layoutOf).
  bool derived = false;
};

/// A tensor of the global program in the partitioned one.
struct DistValue {
  SmallVector<Piece> pieces;
  /// A tensor.empty, a fill of one, or a splat constant: rebuilt at
  /// whatever shape a consumer needs instead of moved.
  Operation *splat = nullptr;
  /// A linalg.transpose without a config: each consumer transposes the
  /// part of the input it reads, so that a transposed weight is never
  /// copied whole and the CPU lowering can fold the transpose into a
  /// contraction.
  linalg::TransposeOp transpose;
  /// An insertion into zeros without a config that a convolution with a
  /// config reads (the training step's spread of an adjoint for the input
  /// gradient): each device spreads the part of the adjoint its block
  /// needs, so that the adjoint moves, not its spread (the simulator's
  /// backward task reads the adjoint). See isLazySpread.
  tensor::InsertSliceOp spread;
  /// A copy without a config that permutes and reverses dimensions, read
  /// as a convolution's filter (the training step's flipped filter of an
  /// input gradient): each device copies the part it reads from the
  /// input's block that part comes from, so that a sharded filter is not
  /// gathered (the simulator's backward task reads the forward's filter
  /// block). See flippedCopy.
  linalg::GenericOp flip;
  /// A slice without a config at stride 1 that only ops with configs read
  /// (the training step's trim of a strided convolution's input to the
  /// rows and columns its windows reach, for the filter gradient): each
  /// reader takes its blocks from the source's at the slice's offsets, so
  /// that what the forward pass brought is read again, not gathered. See
  /// isLazyTrim.
  tensor::ExtractSliceOp trim;
  /// Whether each reader rebuilds the part it reads from another value
  /// (a splat, a transpose, a flip or a trim) instead of reading pieces.
  bool rebuiltByReaders() const { return splat || transpose || flip || trim; }
  /// Elements no piece holds are zeros: the gradient of a slice (an
  /// insert_slice of its blocks into zeros), or a sum of such gradients
  /// of disjoint slices. Only materialize reads such a value (planning with
  /// lib/layout's zerosElsewhere, as the simulator's gradient edges do);
  /// before any other rewrite sees it, it is made whole (normalize).
  bool zerosElsewhere = false;
  /// A sum that no op has computed yet: an adjoint sum of gradients in
  /// different layouts (the readers of one value on different devices).
  /// Whoever reads it brings each addend to the boxes it reads and adds
  /// them there, once (materialize); addends in one layout are added where
  /// they are first. This is what the simulator's gradient edges price:
  /// each reader's gradient moves to where the value's producer needs it.
  /// `sumOp` is one of the adds, cloned for the local adds; `sums` are
  /// the blocks computed so far (a reader whose tasks share a device reads
  /// several).
  SmallVector<Value> addends;
  Operation *sumOp = nullptr;
  SmallVector<Piece, 1> sums;
  /// Complete only because the op that wrote it added the partial sums of
  /// its tasks that share a device (completeSharedPartials): as an addend
  /// of an adjoint sum, it is one of partial sums, as the simulator counts
  /// a reader with several tasks on a device.
  bool slotSums = false;
};

/// The one piece the value has besides re-split copies (the piece its
/// producer wrote, or a whole copy made from several).
const Piece *onlyProducedPiece(const DistValue &value);
/// Whether the value is held in pieces its producer wrote (one, or
/// several when its tasks share a device) and none is a partial result.
bool hasOnlyComplete(const DistValue &value);
/// Whether two pieces hold the same blocks on the same devices, alike
/// complete or partial sums, copies of one partial on the same devices
/// (layout::sameCopies): values in them add up where they are.
bool sameLayout(const Piece &a, const Piece &b);

/// How an op runs: degrees per loop, and for each slot the task of every
/// device (-1: the device skips the slot).
struct Plan {
  SmallVector<int64_t> degrees;
  SmallVector<SmallVector<int64_t>> slots;
};

/// The loops of a linalg op as the partitioner sees them.
struct LinalgLoops {
  SmallVector<int64_t> sizes;
  SmallVector<utils::IteratorType> iterators;
  SmallVector<AffineMap> maps; // one per operand
  /// A gather's table and lookup loops (after the op's own loops in
  /// `sizes` and `iterators`, soap/Dialect/Gather.h).
  std::optional<GatherLookup> gather;
};

/// The box of the whole tensor.
Box wholeBox(RankedTensorType type);
/// The region a tensor.extract_slice with static offsets, sizes and
/// strides reads of its source: from its first element to its last.
Box sliceRegion(tensor::ExtractSliceOp extract);

/// The boxes of a transpose's result given its input's: result dimension i
/// is input dimension perm[i].
DeviceBoxes transposedBoxes(const DeviceBoxes &input, ArrayRef<int64_t> perm);

/// The task grid coordinates of `task` (row-major, last loop fastest).
SmallVector<int64_t> coordinatesOf(ArrayRef<int64_t> degrees, int64_t task);

/// Slots from a device per task (a config's devices): a device's k-th task
/// runs in slot k. Failure when a device is not one of the `numDevices` or
/// the devices are not one per task of `degrees`, with why in `why`.
FailureOr<Plan> planForTasks(ArrayRef<int64_t> degrees,
                             ArrayRef<int64_t> devices, int64_t numDevices,
                             std::string *why = nullptr);

/// The box of an operand that a task reads through `map`: the local
/// tensor's index i is the global index i + offset, so that the op keeps
/// its maps on local loops that start at 0. None when the task's loops do
/// not read one box (a split loop read backwards, a non-affine index).
std::optional<Box> accessBox(AffineMap map, ArrayRef<int64_t> loopSizes,
                             ArrayRef<int64_t> degrees, int64_t task,
                             ArrayRef<int64_t> shape);

/// A tensor type's shape and element size as lib/layout takes them.
layout::TensorShape tensorShapeOf(RankedTensorType type);
/// The boxes of each device as a lib/layout layout (complete blocks).
layout::Layout layoutOfBoxes(const DeviceBoxes &boxes);
/// Whether two of the boxes that tasks write, each slot's on its devices,
/// overlap: their results are then partial sums (an input gradient's
/// halos, parts of a split window: TransposedConv.cpp).
bool tasksOverlap(ArrayRef<DeviceBoxes> slots);
/// A piece's boxes, and its partial sums, as a lib/layout layout.
layout::Layout layoutOfPiece(const Piece &piece);
/// The blocks of a lib/layout layout as boxes (its partial sums aside).
DeviceBoxes boxesOfLayout(const layout::Layout &layout);

/// The elements a task reads through `map`, in global coordinates (the
/// region the simulator prices: lowest to highest index per dimension).
/// None when an index is not affine or leaves `shape`; with `clip`, the
/// part inside `shape` (a concatenation's input), none when it is empty.
std::optional<Box> regionOf(AffineMap map, ArrayRef<int64_t> loopSizes,
                            ArrayRef<int64_t> degrees, int64_t task,
                            ArrayRef<int64_t> shape, bool clip = false);

/// True when every device that needs a box holds exactly that box in
/// `piece`, complete (not partial sums).
bool covers(const Piece &piece, const DeviceBoxes &target);

/// The insertion into zeros that writes `value` (offsets and strides
/// static, the destination a zero fill, no dimension dropped), if any.
tensor::InsertSliceOp insertionIntoZeros(Value value);

/// True when `insert` is a spread that stays lazy (DistValue::spread): no
/// config, static offsets and strides, no dimension dropped, a zero fill
/// as destination, and one reader, an input of a convolution with a
/// config (not a transposed one, which spreads its own blocks) or of a
/// generic with a config that reads it through a window (i + d * k: the
/// training step's input gradient of a depthwise convolution).
bool isLazySpread(tensor::InsertSliceOp insert);

/// True when `extract` is a slice that stays lazy (DistValue::trim): no
/// config, static offsets and sizes, unit strides, no dimension dropped,
/// and every reader a linalg op with a config or a lazy transpose
/// (DistValue::transpose).
bool isLazyTrim(tensor::ExtractSliceOp extract);

/// How a flipped copy (DistValue::flip) reads its input: per input
/// dimension, the result dimension it runs along and whether reversed.
struct FlipDims {
  SmallVector<int64_t> resultDim;
  SmallVector<bool> reversed;
};

/// The dimensions of `op` when it is a flipped copy that stays lazy: no
/// config, a linalg.generic of parallel loops whose body yields its one
/// input, read through a permutation whose results may be reversed
/// (`size - 1 - d`), written through the identity, with one reader, a
/// convolution's filter.
std::optional<FlipDims> flippedCopy(Operation *op);

/// True when `op` reads none of its inputs' values, only their shapes (the
/// count of a batch norm's divisor): it runs where its result is needed,
/// with local stand-ins for its inputs, and nothing moves for them (the
/// simulator's AccessRole::Shape).
bool readsOnlyShapesOfInputs(linalg::LinalgOp op);

class SpmdPartitioner : public SpmdRewriter {
public:
  SpmdPartitioner(func::FuncOp function, int64_t numDevices)
      : function(function), numDevices(numDevices), b(function.getContext()) {}

  LogicalResult run();

  // The rewrites ops choose from (PartitionableOpInterface::partition).
  LogicalResult partitionLoops(Operation *op) override;
  LogicalResult partitionReshape(Operation *op) override;
  LogicalResult partitionPassThrough(Operation *op) override;
  LogicalResult partitionConcat(Operation *op) override;
  LogicalResult partitionByConfig(Operation *op) override;
  /// partitionByConfig's rewrite; fails, changing nothing, when it cannot
  /// follow the config.
  LogicalResult followConfig(Operation *op);
  /// followConfig for an insertion into a value that is not zeros (a max
  /// pool's gradient, one window offset after the other) whose config
  /// splits only dimensions the insertion covers whole: each device inserts
  /// its block of the source into its block of the destination.
  LogicalResult followInsertAlongWholeDims(tensor::InsertSliceOp insert,
                                           ConfigAttr config);
  /// partitionPassThrough for an insertion into zeros without a config:
  /// the source's pieces where they go, zero elsewhere. Fails, changing
  /// nothing, for any other op.
  LogicalResult embedIntoZeros(tensor::InsertSliceOp insert);
  /// An insertion into zeros at stride 1 that a strategy replicates (the
  /// gradient of a replicated slice): the source whole on every device,
  /// where it goes, zero elsewhere (DistValue::zerosElsewhere), so that a
  /// sum with the gradients of disjoint slices keeps the parts
  /// (addDisjointParts) and a reader takes its block's nonzero part from
  /// the copy on its own device, as the simulator's gradient edge from a
  /// replicated reader moves nothing. Fails, changing nothing, for any
  /// other op.
  LogicalResult replicateIntoZeros(tensor::InsertSliceOp insert);
  /// `build`'s value (built at the insertion point) computed on `devices`
  /// alone: inside a soap.on_devices guard of result type `type` unless
  /// they are all devices; the guard's result.
  Value onDevices(ArrayRef<int64_t> devices, Type type, Location loc,
                  llvm::function_ref<Value()> build);

private:
  // Plans.
  std::optional<LinalgLoops> loopNestOf(linalg::LinalgOp op);
  FailureOr<Plan> planFromConfig(linalg::LinalgOp op, const LinalgLoops &nest,
                                 ConfigAttr config, std::string &why);
  FailureOr<Plan> planFromConfig(ArrayRef<int64_t> loopSizes, ConfigAttr config,
                                 std::string &why);
  /// Where the value is once complete, one box per device: its layout,
  /// partial sums combined among the devices that hold them (several
  /// partial results on one device added there, blocks of several tasks on
  /// one device assembled there when they fill a box). None when it has no
  /// such layout.
  std::optional<Piece> completedLayoutOf(Value original);
  std::optional<Plan> planFromOperands(linalg::LinalgOp op,
                                       const LinalgLoops &nest);
  Plan replicatedPlan(unsigned numLoops) const;
  std::optional<std::string>
  checkPlan(linalg::LinalgOp op, const LinalgLoops &nest, const Plan &plan);

  // Rewriting.
  void partitionLinalg(linalg::LinalgOp op, const LinalgLoops &nest,
                       const Plan &plan);
  /// The complete pieces an op wrote with several tasks on a device (one
  /// per slot) regrouped as layout::canonicalPieces says: each device's
  /// k-th block in order of offsets in the k-th piece, so that what a
  /// gradient op writes is grouped as the simulator groups the forward
  /// op's gradient, whatever the order of the op's tasks. Nothing for
  /// partial pieces, values readers rebuild, or pieces of different local
  /// types.
  void regroupPieces(Value original, Location loc);
  /// The partial results of a split reduction whose tasks share devices
  /// (`pieces`, one per slot), completed right after the op as the
  /// simulator prices it: per output block, the devices whose tasks wrote
  /// it all_reduce their partials (a device that wrote it in several slots
  /// adds them first). Each slot keeps its boxes, less the copies of a
  /// block an earlier slot of the same device holds; slots left empty go.
  void completeSharedPartials(SmallVector<Piece> &pieces, ReductionKind kind,
                              Location loc);
  /// The part of `gather`'s table each device's task reads (`boxes`).
  LocalTable localTable(const GatherLookup &gather, const DeviceBoxes &boxes,
                        Location loc);
  /// Every tensor `op` reads (operands, values its regions capture) as a
  /// local value holding `targetOf(value, type)` on each device, except
  /// those `given` maps already; `moved` is set when one was not there
  /// already.
  FailureOr<IRMapping>
  localReads(Operation *op,
             function_ref<DeviceBoxes(Value, RankedTensorType)> targetOf,
             bool &moved, const IRMapping *given = nullptr);
  /// An elementwise sum of partial sums in one layout (an RNN bias
  /// gradient summed over the time steps) stays a partial sum: each device
  /// adds its own. Fails, changing nothing, for any other op.
  LogicalResult partitionPartialSum(linalg::LinalgOp op);
  /// An op with no partitioned form whose tensors some devices already
  /// hold whole, and the others not (a model-parallel embedding's gradient
  /// loop), runs whole on those devices alone, where the op it belongs to
  /// ran, instead of everywhere. Fails, changing nothing, otherwise.
  LogicalResult runOnHolders(Operation *op);
  /// `op` whole on each of `devices` alone (in a guard, unless they are
  /// every device; `devices` distinct), what it reads
  /// (operands, values its regions capture) brought there whole; its
  /// results whole there. runOnHolders's rewrite, and a scatter-add nest's
  /// whose gather ran as one task on one device.
  LogicalResult runWholeOnDevices(Operation *op, ArrayRef<int64_t> devices);
  /// `op` whole on every device, its operands brought there whole; counted
  /// for the pass's warning unless a strategy `chosen` it (soap.replicated).
  LogicalResult runReplicated(Operation *op, bool chosen = false);
  /// runReplicated for a static tensor.extract_slice: only the region it
  /// reads moves to every device, and each slices that (as the simulator
  /// prices the op's access). Failure when it reads the whole source.
  LogicalResult replicateSlice(tensor::ExtractSliceOp extract, bool chosen);
  /// An elementwise add of two values that are zero elsewhere and hold
  /// disjoint elements (the gradients of an LSTM's gate slices): the sum
  /// is both sets of pieces, with nothing computed or moved. Fails,
  /// changing nothing, for any other op.
  LogicalResult addDisjointParts(Operation *op);
  /// An unconfigured elementwise add of values in different layouts (or
  /// of such sums): its result becomes a sum of addends
  /// (DistValue::addends), computed where it is read. Fails, changing
  /// nothing, for any other op.
  LogicalResult deferSum(Operation *op);
  /// Whether every addend is held in partial sums alone (the gradients of
  /// a shared bias from readers that split its reduction), a sum of its
  /// tasks' (DistValue::slotSums) counting as one; with `pieces`, appends
  /// their pieces there as partial sums (copies readers made left out).
  bool onlyPartialSums(ArrayRef<Value> addends, DistValue *pieces) const;
  /// The sum `original` of partial sums alone (onlyPartialSums) for a
  /// reader without a config (a shared bias's update): each device adds
  /// what it holds, and one all-reduce over those devices makes it whole
  /// on each, as the simulator synchronizes a shared parameter's region.
  /// The value is that from then on. (Any other sum: whole everywhere.)
  void allReducePartialSums(Value original, Location loc);
  /// The sum `original` (DistValue::addends) in `target`; with `realize`,
  /// the value is that from then on (an ordinary value, no longer a sum).
  Value materializeSum(Value original, const DeviceBoxes &target, Location loc,
                       bool realize = false);
  /// `sumOp` (a plain add) on the local values `x` and `y` of one type, on
  /// `devices` only.
  Value addLocally(Operation *sumOp, Value x, Value y,
                   ArrayRef<int64_t> devices, Location loc);
  /// `build`'s result computed on `devices` only (a soap.on_devices guard
  /// unless that is every device).
  Value onDevices(ArrayRef<int64_t> devices, Type type,
                  function_ref<Value()> build, Location loc);
  /// Makes every operand of `op` that is zero elsewhere an ordinary value
  /// (whole on every device) unless `op` reads it through materialize
  /// alone (a linalg op with a config, as an input; with `viewsByConfig`,
  /// a tensor op with a config, which partitionByConfig normalizes only
  /// when it cannot follow the config).
  void normalizeOperands(Operation *op, bool viewsByConfig = true);
  /// `op` whole on `device`, its operands brought there whole.
  LogicalResult runWholeOn(Operation *op, int64_t device);
  DeviceBoxes completeLayout(const DistValue &value,
                             RankedTensorType type) const;
  LogicalResult partitionScatterAdd(scf::ForOp loop);
  /// A convolution's input gradient that carries its forward's config
  /// (soap.transposed_config): each device computes its forward task's
  /// part (TransposedConv.cpp), and the training step's insertion of it
  /// into the input's shape keeps those pieces. Fails, changing nothing,
  /// for any other op.
  LogicalResult partitionTransposedConv(Operation *op);
  /// The same for the input gradient of a generic that reads its input
  /// through windows (a depthwise convolution's: TransposedWindow.cpp).
  LogicalResult partitionTransposedWindow(Operation *op);
  /// The scatter-add nest `loop` (`nest`) when its forward gather splits
  /// the table's rows over the devices: each device scatters into its rows
  /// only.
  LogicalResult partitionScatterByRows(scf::ForOp loop,
                                       ScatterAddNest &nest);
  /// Returns every value whole, except the sharded results, which stay in
  /// their boxes; records the layouts (returnLayouts).
  void partitionReturn(func::ReturnOp op);

  // Distributed values.
  Value materialize(Value original, const DeviceBoxes &target, Location loc);
  /// materialize for a lazy flipped copy (DistValue::flip) of local type
  /// `localType`: each device copies its block from the input's block it
  /// comes from.
  Value materializeFlip(linalg::GenericOp flip, const DeviceBoxes &target,
                        RankedTensorType localType, Location loc);
  /// materialize for a lazy spread (DistValue::spread) of local type
  /// `localType`: each device spreads its block's part of the adjoint
  /// into zeros; when a block does not hold the spread dimensions whole,
  /// the whole spread is built where the target is and sliced.
  Value materializeSpread(tensor::InsertSliceOp spread,
                          const DeviceBoxes &target, RankedTensorType localType,
                          Location loc);
  /// Where the parts of `original` are when it has one layout: its piece,
  /// or for a lazy transpose its input's piece with permuted boxes (and no
  /// local value). None for splats and values in several pieces.
  std::optional<Piece> layoutOf(Value original);
  /// The layout of the last of `addends` that has one and is not partial
  /// nor a sum of its tasks' partial sums (DistValue::slotSums): where an
  /// adjoint sum is added for a reader without a config; none when no
  /// addend has.
  std::optional<Piece> lastCompleteLayout(ArrayRef<Value> addends);
  /// Gives a lazy transpose (DistValue::transpose) pieces of its own: each
  /// device transposes its parts of the input, so that ops which pass
  /// split dimensions through (reshapes, slices, concatenations) need no
  /// copy of the whole input. Contractions still read the lazy form.
  /// The new ops go before `user`, the first op that needs the pieces.
  /// (layoutOf gives the layout alone, without new ops.)
  void realizeTranspose(Value original, Operation *user);
  Value rebuildSplat(Operation *splat, RankedTensorType type, Location loc);
  Value accumulatingInit(Value init, const DeviceBoxes &boxes,
                         ReductionKind kind);
  Value embeddedInit(Value init, const DeviceBoxes &boxes, ReductionKind kind,
                     Location loc);
  /// Brings `original` to `target` by the steps lib/layout plans.
  Value reshard(Value original, const DeviceBoxes &target, Location loc);
  /// Emits one planned step on `current` (holding `held`), or fails when
  /// its result would not have one local type.
  FailureOr<Value> emitStep(DistValue &value, const layout::Step &step,
                            Value current, const DeviceBoxes &held,
                            RankedTensorType type, Location loc);
  /// A SendRecv or HaloExchange step: rounds of one part shape in which
  /// each device sends and receives at most one part, assembled into the
  /// target blocks.
  Value emitTransfers(DistValue &value, const layout::Step &step, Value current,
                      const DeviceBoxes &held, RankedTensorType localType,
                      Location loc);
  /// `inGroup` on the devices of `group`, `otherwise` elsewhere (where
  /// `result` has a block outside the group).
  Value onlyOn(ArrayRef<int64_t> group, const layout::Layout &result,
               Value inGroup, Value otherwise, Location loc);
  /// Per dimension, the offsets of each device (constants where all agree,
  /// else rank tables).
  SmallVector<OpFoldResult>
  offsetsPerDevice(ArrayRef<SmallVector<int64_t>> offsets, Location loc);
  /// `x (+) y` elementwise by the combination `kind` (local values of
  /// one type).
  Value combineLocally(Value x, Value y, ReductionKind kind, Location loc);
  /// The pieces `pieceIds` of `value` added into the whole tensor on each
  /// device that holds any (each partial result and each block once),
  /// then all-reduced over `group` (empty: all devices), which must hold
  /// every contributing device.
  Value universalGather(DistValue &value, ArrayRef<int> pieceIds,
                        RankedTensorType type, Location loc,
                        ArrayRef<int64_t> group = {});
  SmallVector<OpFoldResult> offsetsOf(const DeviceBoxes &target,
                                      const DeviceBoxes *held, int64_t rank,
                                      Location loc);
  /// `source` (holding `held` on each device; null: the whole tensor)
  /// sliced to the `target` box of each device.
  Value slice(Value source, const DeviceBoxes &target, const DeviceBoxes *held,
              Location loc);

  // Per-device constants.
  Value perDevice(ArrayRef<int64_t> values, Location loc);
  Value deviceIn(ArrayRef<bool> flags, Location loc);
  SmallVector<int64_t> allDevices() const {
    SmallVector<int64_t> all(numDevices);
    std::iota(all.begin(), all.end(), 0);
    return all;
  }
  DeviceBoxes everywhere(RankedTensorType type) const {
    return DeviceBoxes(numDevices, wholeBox(type));
  }

  func::FuncOp function;
  int64_t numDevices;
  OpBuilder b;
  Value rank;
  llvm::DenseMap<Value, DistValue> dist;
  /// Insertions into zeros of gradients that partitionTransposedConv
  /// handled: they keep the gradient's pieces.
  llvm::SmallPtrSet<Operation *, 4> embeddedGradients;
  /// The tag of the next point-to-point round (MPI tags stay small).
  int64_t nextTag = 1;

public:
  /// Training state kept sharded across steps: arguments that arrive as
  /// local shards (by argument index) and results returned as local shards
  /// (by result index), with the box each device holds.
  llvm::DenseMap<unsigned, DeviceBoxes> shardedArgs, shardedResults;
  /// Set by run(): where each returned value was before it was made whole
  /// (none where it had no single layout).
  SmallVector<std::optional<Piece>> returnLayouts;
  /// Warnings about configs not followed and ops run whole; off for a
  /// probing run.
  bool warn = true;

private:
  IRMapping plain; // values that are not tensors
  /// Ops that ran whole on every device although an operand was split or
  /// a config asked for something else, by op name.
  llvm::MapVector<StringRef, unsigned> replicatedOps;
  unsigned configsNotFollowed = 0;
  std::string firstNotFollowed;
};

} // namespace soap::partition

#endif // SOAP_LIB_PARTITION_SPMDPARTITIONER_H

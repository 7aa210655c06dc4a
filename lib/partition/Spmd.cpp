//===- Spmd.cpp - a training step partitioned by its #soap.config ---------===//
//
// Walks the function in order and rewrites every op into the local ops of
// the tasks its plan gives each device, keeping for every tensor a
// distributed value: local SSA values ("pieces", one per task slot) and,
// for each device, the box of the global tensor the piece holds there and
// whether it holds partial sums.
//
// Each op goes to its PartitionableOpInterface::partition, which picks one
// of the partitioner's rewrites (soap/Dialect/SpmdRewriter.h): a linalg op
// runs by its plan (SpmdPlans.cpp, SpmdLoops.cpp): from its #soap.config
// (degrees per loop, a device per task) or, without one, from the layout
// of its most split operand; reshapes, slices, pads and concatenations
// keep their operand's split (SpmdViews.cpp). Any other op runs whole on
// every device. Before an op, each
// operand is brought to the boxes the op's tasks read (through the
// operand's indexing map, halos included) by the steps lib/layout's reshard
// planner chooses (Reshard.cpp): nothing, a local slice, a collective over
// the device groups that hold the parts (all_reduce or reduce_scatter of
// partial sums, all_gather, all_to_all, broadcast), point-to-point
// transfers of only the missing parts (halos of a split window op, device
// subsets, another device order), and only for irregular partial sums an
// all_reduce of identity-padded pieces. What a collective made is kept for
// the value's other readers.
//
// Several tasks on one device run one after the other (one slot each);
// devices without a task in a slot skip it (soap.on_devices).
//
//===----------------------------------------------------------------------===//

#include "soap/Partition/Partition.h"

#include "RankTables.h"
#include "Reductions.h"
#include "SpmdPartitioner.h"
#include "soap/Partition/ScatterLoops.h"

#include "soap/Dialect/Gather.h"
#include "soap/Dialect/PartitionableInterface.h"
#include "soap/Dialect/SoapDialect.h"

#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/MapVector.h"

#include <map>
#include <numeric>

using namespace mlir;
using namespace soap;
using namespace soap::partition;

static constexpr llvm::StringLiteral kPass = "soap-partition";

/// The operands of `op` and the values its regions capture.
static SmallVector<Value> valuesRead(Operation *op) {
  SmallVector<Value> reads(op->getOperands());
  llvm::SetVector<Value> captured;
  getUsedValuesDefinedAbove(op->getRegions(), captured);
  reads.append(captured.begin(), captured.end());
  return reads;
}

FailureOr<IRMapping> SpmdPartitioner::localReads(
    Operation *op, function_ref<DeviceBoxes(Value, RankedTensorType)> targetOf,
    bool &moved, const IRMapping *given) {
  Location loc = op->getLoc();
  IRMapping mapping = plain;
  if (given)
    for (auto [from, to] : given->getValueMap())
      mapping.map(from, to);
  for (Value value : valuesRead(op)) {
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!type || mapping.contains(value))
      continue;
    if (!type.hasStaticShape())
      return op->emitError() << kPass << ": operand of type " << type
                             << " needs a static shape";
    DeviceBoxes target = targetOf(value, type);
    DistValue &distValue = dist[value];
    if (!distValue.rebuiltByReaders() && !distValue.spread &&
        llvm::none_of(distValue.pieces, [&](const Piece &piece) {
          return covers(piece, target);
        }))
      moved = true;
    mapping.map(value, materialize(value, target, loc));
  }
  return mapping;
}

LogicalResult SpmdPartitioner::runOnHolders(Operation *op) {
  if (isa<func::ReturnOp>(op) || op->getNumResults() == 0 ||
      !llvm::all_of(op->getResultTypes(), [](Type type) {
        auto tensor = dyn_cast<RankedTensorType>(type);
        return tensor && tensor.hasStaticShape();
      }))
    return failure();
  // The devices that hold every tensor the op reads whole; values that are
  // everywhere or rebuilt anywhere do not decide.
  SmallVector<bool> holds(numDevices, true);
  bool decided = false;
  for (Value value : valuesRead(op)) {
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!type)
      continue;
    auto found = dist.find(value);
    if (found == dist.end() || !type.hasStaticShape())
      return failure();
    if (found->second.splat)
      continue;
    std::optional<Piece> layout = layoutOf(value);
    // A reshape of a value in several complete pieces (the gradient an op
    // with several tasks on a device wrote): each device's pieces as the
    // box they tile, so that the reshape runs where they are, where the
    // op's backward work runs (the simulator's backward tasks read it
    // there).
    if (!layout && isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(op) &&
        !found->second.zerosElsewhere && found->second.addends.empty() &&
        hasOnlyComplete(found->second))
      layout = completedLayoutOf(value);
    if (!layout || layout->partial)
      return failure();
    if (covers(*layout, everywhere(type)))
      continue;
    Box whole = wholeBox(type);
    for (int64_t device = 0; device < numDevices; ++device)
      holds[device] = holds[device] && layout->boxes[device] &&
                      *layout->boxes[device] == whole;
    decided = true;
  }
  SmallVector<int64_t> holders;
  for (int64_t device = 0; device < numDevices; ++device)
    if (holds[device])
      holders.push_back(device);
  if (!decided || holders.empty())
    return failure();
  return runWholeOnDevices(op, holders);
}

LogicalResult SpmdPartitioner::runWholeOnDevices(Operation *op,
                                                 ArrayRef<int64_t> devices) {
  b.setInsertionPoint(op);
  bool moved = false;
  FailureOr<IRMapping> mapping = localReads(
      op,
      [&](Value, RankedTensorType type) {
        DeviceBoxes target(numDevices);
        for (int64_t device : devices)
          target[device] = wholeBox(type);
        return target;
      },
      moved);
  if (failed(mapping))
    return failure();
  Location loc = op->getLoc();
  // On every device it needs no guard (and stays beside its readers: the
  // CPU lowering's sparse-updates finds a table's update there).
  Operation *whole;
  if (static_cast<int64_t>(devices.size()) == numDevices) {
    whole = b.clone(*op, *mapping);
    whole->removeAttr(SoapDialect::getConfigAttrName());
  } else {
    OnDevicesOp guard = OnDevicesOp::create(b, loc, op->getResultTypes(),
                                            b.getDenseI64ArrayAttr(devices));
    OpBuilder::InsertionGuard insertion(b);
    b.setInsertionPointToStart(&guard.getBody().emplaceBlock());
    Operation *local = b.clone(*op, *mapping);
    local->removeAttr(SoapDialect::getConfigAttrName());
    YieldOp::create(b, loc, local->getResults());
    whole = guard;
  }
  for (auto [result, localResult] :
       llvm::zip(op->getResults(), whole->getResults())) {
    auto type = cast<RankedTensorType>(result.getType());
    DeviceBoxes boxes(numDevices);
    SmallVector<int64_t> tasks(numDevices, -1);
    for (int64_t device : devices) {
      boxes[device] = wholeBox(type);
      tasks[device] = 0;
    }
    dist[result].pieces.push_back(
        Piece{localResult, std::move(boxes), std::move(tasks), std::nullopt});
  }
  return success();
}

LogicalResult SpmdPartitioner::replicateSlice(tensor::ExtractSliceOp extract,
                                              bool chosen) {
  Value source = extract.getSource();
  RankedTensorType sourceType = extract.getSourceType();
  if (!sourceType.hasStaticShape() || !extract.getType().hasStaticShape() ||
      !dist.count(source) ||
      llvm::any_of(llvm::concat<const int64_t>(extract.getStaticOffsets(),
                                               extract.getStaticSizes(),
                                               extract.getStaticStrides()),
                   ShapedType::isDynamic))
    return failure();
  Box region = sliceRegion(extract);
  if (region == wholeBox(sourceType))
    return failure();
  DeviceBoxes target(numDevices, region);
  if (!chosen && !dist[source].splat &&
      llvm::none_of(dist[source].pieces, [&](const Piece &piece) {
        return llvm::all_of(piece.boxes, [&](const std::optional<Box> &box) {
          return box && box->contains(region);
        });
      }))
    ++replicatedOps[extract->getName().getStringRef()];
  Location loc = extract.getLoc();
  Value local = materialize(source, target, loc);
  auto attrs = [&](ArrayRef<int64_t> values) {
    return llvm::to_vector(llvm::map_range(
        values, [&](int64_t v) -> OpFoldResult { return b.getIndexAttr(v); }));
  };
  Value sliced = tensor::ExtractSliceOp::create(
      b, loc, extract.getType(), local,
      attrs(SmallVector<int64_t>(sourceType.getRank(), 0)),
      attrs(extract.getStaticSizes()), attrs(extract.getStaticStrides()));
  dist[extract.getResult()].pieces.push_back(
      Piece{sliced, everywhere(extract.getType()),
            SmallVector<int64_t>(numDevices, 0), std::nullopt});
  return success();
}

LogicalResult SpmdPartitioner::runReplicated(Operation *op, bool chosen) {
  b.setInsertionPoint(op);
  if (auto extract = dyn_cast<tensor::ExtractSliceOp>(op);
      extract && succeeded(replicateSlice(extract, chosen)))
    return success();
  // An op a strategy runs everywhere reads no data of operands its body
  // does not use (a batch norm's divisor, counted by a generic that reads
  // only its input's shape): an empty tensor of their shape stands in, as
  // the simulator moves none of them.
  llvm::SmallDenseSet<Value> unread;
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op); chosen && linalgOp)
    for (OpOperand &operand : linalgOp->getOpOperands())
      if (isa<RankedTensorType>(operand.get().getType()) &&
          !linalgOp.payloadUsesValueFromOperand(&operand) &&
          llvm::none_of(linalgOp->getOpOperands(), [&](OpOperand &other) {
            return other.get() == operand.get() &&
                   linalgOp.payloadUsesValueFromOperand(&other);
          }))
        unread.insert(operand.get());
  IRMapping stand;
  for (Value value : unread) {
    auto type = cast<RankedTensorType>(value.getType());
    stand.map(value, tensor::EmptyOp::create(b, op->getLoc(), type.getShape(),
                                             type.getElementType())
                         .getResult());
  }
  bool moved = false;
  FailureOr<IRMapping> mapping = localReads(
      op, [&](Value, RankedTensorType type) { return everywhere(type); }, moved,
      &stand);
  if (failed(mapping))
    return failure();
  if (moved && !chosen && !isa<func::ReturnOp>(op))
    ++replicatedOps[op->getName().getStringRef()];
  Operation *local = b.clone(*op, *mapping);
  local->removeAttr(SoapDialect::getConfigAttrName());
  local->removeAttr(SoapDialect::getReplicatedAttrName());
  for (auto [result, localResult] :
       llvm::zip(op->getResults(), local->getResults())) {
    auto type = dyn_cast<RankedTensorType>(result.getType());
    if (!type) {
      plain.map(result, localResult);
      continue;
    }
    dist[result].pieces.push_back(Piece{localResult, everywhere(type),
                                        SmallVector<int64_t>(numDevices, 0),
                                        std::nullopt});
  }
  return success();
}

void SpmdPartitioner::partitionReturn(func::ReturnOp op) {
  b.setInsertionPoint(op);
  SmallVector<Value> operands;
  returnLayouts.clear();
  for (auto [index, value] : llvm::enumerate(op.getOperands())) {
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!type) {
      returnLayouts.push_back(std::nullopt);
      operands.push_back(value);
      continue;
    }
    returnLayouts.push_back(layoutOf(value));
    auto sharded = shardedResults.find(index);
    operands.push_back(materialize(value,
                                   sharded != shardedResults.end()
                                       ? sharded->second
                                       : everywhere(type),
                                   op.getLoc()));
  }
  func::ReturnOp::create(b, op.getLoc(), operands);
}

LogicalResult SpmdPartitioner::run() {
  Block &entry = function.getBody().front();
  SmallVector<Operation *> originals;
  for (Operation &op : entry)
    originals.push_back(&op);
  b.setInsertionPointToStart(&entry);
  rank = RankOp::create(b, function.getLoc(), b.getIndexType());
  // A sharded argument gets a local twin right after it, which holds its
  // shard; the global one (whose type the rewriting reads) goes at the end.
  SmallVector<BlockArgument> globalArgs(entry.getArguments());
  SmallVector<BlockArgument> replaced;
  for (auto [original, argument] : llvm::enumerate(globalArgs))
    if (auto type = dyn_cast<RankedTensorType>(argument.getType())) {
      if (!type.hasStaticShape())
        return function.emitError()
               << kPass << ": argument " << original << " of type " << type
               << " needs a static shape";
      // Keyed by the original position (twins shift later arguments).
      auto sharded = shardedArgs.find(original);
      if (sharded == shardedArgs.end()) {
        dist[argument].pieces.push_back(
            Piece{argument, everywhere(type),
                  SmallVector<int64_t>(numDevices, 0), std::nullopt});
        continue;
      }
      unsigned index = argument.getArgNumber();
      const std::optional<Box> *held = llvm::find_if(
          sharded->second, [](const std::optional<Box> &box) { return box; });
      auto localType =
          RankedTensorType::get((*held)->sizes, type.getElementType());
      if (failed(function.insertArgument(index + 1, localType,
                                         function.getArgAttrDict(index),
                                         argument.getLoc())))
        return function.emitError()
               << kPass << ": cannot add the shard of argument " << index;
      dist[argument].pieces.push_back(
          Piece{function.getArgument(index + 1), sharded->second,
                SmallVector<int64_t>(numDevices, 0), std::nullopt});
      replaced.push_back(argument);
    }

  for (Operation *op : originals) {
    if (isRebuiltSplat(op)) {
      dist[op->getResult(0)].splat = op;
      continue;
    }
    if (auto transpose = dyn_cast<linalg::TransposeOp>(op);
        transpose && transpose.hasPureTensorSemantics() &&
        !op->hasAttr(SoapDialect::getConfigAttrName())) {
      dist[transpose->getResult(0)].transpose = transpose;
      continue;
    }
    if (flippedCopy(op)) {
      dist[op->getResult(0)].flip = cast<linalg::GenericOp>(op);
      continue;
    }
    if (auto insert = dyn_cast<tensor::InsertSliceOp>(op);
        insert && isLazySpread(insert)) {
      dist[insert.getResult()].spread = insert;
      continue;
    }
    if (auto extract = dyn_cast<tensor::ExtractSliceOp>(op);
        extract && isLazyTrim(extract)) {
      dist[extract.getResult()].trim = extract;
      continue;
    }
    if (op->hasAttr(SoapDialect::getReplicatedAttrName())) {
      // Whole on every device, as the strategy says.
      normalizeOperands(op);
      if (auto insert = dyn_cast<tensor::InsertSliceOp>(op);
          insert && succeeded(replicateIntoZeros(insert)))
        continue;
      // A loop nest reads on every device only what its loops read (the
      // rows a strided convolution reads), as the simulator places it.
      if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
        if (std::optional<LinalgLoops> nest = loopNestOf(linalgOp)) {
          partitionLinalg(linalgOp, *nest, replicatedPlan(nest->sizes.size()));
          continue;
        }
      if (failed(runReplicated(op, /*chosen=*/true)))
        return failure();
      continue;
    }
    // The pieces of an op with several tasks on a device, grouped alike
    // whatever the order of its tasks.
    auto regroup = [&] {
      b.setInsertionPoint(op);
      for (Value result : op->getResults())
        regroupPieces(result, op->getLoc());
    };
    if (succeeded(partitionTransposedConv(op)) ||
        succeeded(partitionTransposedWindow(op))) {
      regroup();
      continue;
    }
    if (succeeded(addDisjointParts(op)))
      continue;
    if (succeeded(deferSum(op)))
      continue;
    normalizeOperands(op);
    auto partitionable = dyn_cast<PartitionableOpInterface>(op);
    if (partitionable && succeeded(partitionable.partition(*this))) {
      regroup();
      continue;
    }
    if (!partitionable && isa<linalg::LinalgOp>(op))
      return op->emitError()
             << kPass << ": '" << op->getName()
             << "' has no PartitionableOpInterface: register SOAP's interface "
                "models (soap::registerSoap or "
                "soap::registerPartitionableExternalModels)";
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      partitionReturn(ret);
      continue;
    }
    if (auto loop = dyn_cast<scf::ForOp>(op);
        loop && succeeded(partitionScatterAdd(loop)))
      continue;
    if (succeeded(runOnHolders(op)))
      continue;
    if (failed(runReplicated(op)))
      return failure();
  }

  for (Operation *op : llvm::reverse(originals)) {
    op->dropAllUses();
    op->erase();
  }
  llvm::BitVector unused(function.getNumArguments());
  for (BlockArgument argument : replaced)
    unused.set(argument.getArgNumber());
  if (failed(function.eraseArguments(unused)))
    return function.emitError() << kPass << ": cannot drop global arguments";
  function.setType(FunctionType::get(
      function.getContext(), entry.getArgumentTypes(),
      entry.getTerminator()->getOperandTypes()));

  if (!warn)
    return success();
  if (configsNotFollowed)
    emitWarning(function.getLoc())
        << kPass << ": " << configsNotFollowed
        << " ops run whole on every device instead of following their "
           "#soap.config (first: "
        << firstNotFollowed << ")";
  if (!replicatedOps.empty()) {
    InFlightDiagnostic warning = emitWarning(function.getLoc());
    warning << kPass << ": ops without a partitioned form run whole on "
                        "every device, their split operands gathered first:";
    for (auto [name, count] : replicatedOps)
      warning << " " << name << " x" << count;
  }
  return success();
}

void SpmdPartitioner::regroupPieces(Value original, Location loc) {
  auto found = dist.find(original);
  if (found == dist.end())
    return;
  DistValue &value = found->second;
  if (value.pieces.size() < 2 || value.rebuiltByReaders() || value.spread ||
      value.zerosElsewhere || !value.addends.empty())
    return;
  std::vector<layout::Layout> layouts;
  for (const Piece &piece : value.pieces) {
    if (piece.partial || piece.derived ||
        piece.local.getType() != value.pieces.front().local.getType())
      return;
    layouts.push_back(layoutOfPiece(piece));
  }
  layout::Regrouping regrouped = layout::canonicalPieces(layouts);
  bool same = regrouped.pieces.size() == layouts.size();
  for (size_t k = 0; same && k < regrouped.pieces.size(); ++k)
    for (int64_t d = 0; d < numDevices; ++d)
      same &= regrouped.from[k][d] ==
              (layouts[k].blocks[d] ? static_cast<int>(k) : -1);
  if (same)
    return;
  SmallVector<Piece> pieces;
  for (auto [layout, from] : llvm::zip(regrouped.pieces, regrouped.from)) {
    Piece piece;
    piece.boxes = boxesOfLayout(layout);
    piece.tasks.assign(numDevices, -1);
    // The old pieces' values, each selected where it holds the block.
    for (int source = 0; source < static_cast<int>(value.pieces.size());
         ++source) {
      SmallVector<bool> flags;
      for (int64_t d = 0; d < numDevices; ++d)
        flags.push_back(from[d] == source);
      if (!llvm::is_contained(flags, true))
        continue;
      const Piece &old = value.pieces[source];
      for (int64_t d = 0; d < numDevices; ++d)
        if (flags[d] && d < static_cast<int64_t>(old.tasks.size()))
          piece.tasks[d] = old.tasks[d];
      piece.local = piece.local
                        ? arith::SelectOp::create(b, loc, deviceIn(flags, loc),
                                                  old.local, piece.local)
                              .getResult()
                        : old.local;
    }
    pieces.push_back(std::move(piece));
  }
  value.pieces = std::move(pieces);
}

/// The argument that result `result` of a training step updates: the
/// parameter or optimizer state of the same soap.role and soap.name.
static std::optional<unsigned> stateArgumentOf(func::FuncOp function,
                                               unsigned result) {
  auto role = function.getResultAttrOfType<StringAttr>(result, "soap.role");
  auto name = function.getResultAttrOfType<StringAttr>(result, "soap.name");
  if (!role || !name ||
      (role.getValue() != "param" && role.getValue() != "opt_state"))
    return std::nullopt;
  for (unsigned arg = 0; arg < function.getNumArguments(); ++arg)
    if (function.getArgAttrOfType<StringAttr>(arg, "soap.role") == role &&
        function.getArgAttrOfType<StringAttr>(arg, "soap.name") == name &&
        function.getArgumentTypes()[arg] == function.getResultTypes()[result])
      return arg;
  return std::nullopt;
}

LogicalResult soap::partitionByConfigs(func::FuncOp function,
                                       int64_t devices) {
  if (!function.getBody().hasOneBlock())
    return function.emitError()
           << kPass << ": the function must have a single block";
  // A probing run on a copy finds where each updated parameter and
  // optimizer state ends up; state in a layout worth keeping
  // (layout::keptAcrossSteps) then stays there across steps (the argument
  // arrives as the local part and the result leaves as one), instead of being
  // made whole at the end of every step and split again at the start of the
  // next.
  struct KeptState {
    unsigned arg, result;
    DeviceBoxes boxes;
  };
  SmallVector<KeptState> kept;
  // Keeping one state's layout can change where others end up (a weight
  // kept split along its rows splits the gradient of what it multiplies,
  // and with it an embedding table's gradient): probe again with what was
  // kept, until nothing more is.
  for (int round = 0; round < 3; ++round) {
    func::FuncOp probe = function.clone();
    SpmdPartitioner first(probe, devices);
    first.warn = false;
    for (const KeptState &state : kept) {
      first.shardedArgs[state.arg] = state.boxes;
      first.shardedResults[state.result] = state.boxes;
    }
    bool ok;
    {
      ScopedDiagnosticHandler silence(function.getContext(),
                                      [](Diagnostic &) { return success(); });
      ok = succeeded(first.run());
    }
    SmallVector<KeptState> next;
    if (ok)
      for (auto [result, returned] : llvm::enumerate(first.returnLayouts)) {
        std::optional<unsigned> arg = stateArgumentOf(function, result);
        if (arg && returned && !returned->partial &&
            layout::keptAcrossSteps(layoutOfBoxes(returned->boxes)))
          next.push_back(
              {*arg, static_cast<unsigned>(result), returned->boxes});
      }
    probe.erase();
    if (!ok || next.size() == kept.size())
      break; // what was kept stays kept: the same states
    kept = std::move(next);
  }
  // The driver initializes, saves and loads the whole tensor: each kept
  // argument and its result say which part of it every device holds (the
  // argument's type, which stateArgumentOf matched to the result's, is the
  // whole tensor's).
  Builder builder(function.getContext());
  SmallVector<DictionaryAttr> shardAttrs;
  SpmdPartitioner partitioner(function, devices);
  for (const KeptState &state : kept) {
    ArrayRef<int64_t> shape =
        cast<RankedTensorType>(function.getArgumentTypes()[state.arg])
            .getShape();
    SmallVector<int64_t> offsets, holders;
    for (auto [device, box] : llvm::enumerate(state.boxes)) {
      if (box)
        holders.push_back(device);
      SmallVector<int64_t> zeros(shape.size(), 0);
      ArrayRef<int64_t> at = box ? ArrayRef<int64_t>(box->offsets) : zeros;
      offsets.append(at.begin(), at.end());
    }
    SmallVector<NamedAttribute> fields = {
        builder.getNamedAttr("global_shape",
                             builder.getDenseI64ArrayAttr(shape)),
        builder.getNamedAttr("offsets", builder.getDenseI64ArrayAttr(offsets))};
    if (holders.size() != state.boxes.size())
      fields.push_back(builder.getNamedAttr(
          "holders", builder.getDenseI64ArrayAttr(holders)));
    shardAttrs.push_back(builder.getDictionaryAttr(fields));
    partitioner.shardedArgs[state.arg] = state.boxes;
    partitioner.shardedResults[state.result] = state.boxes;
  }
  if (failed(partitioner.run()))
    return failure();
  // A local slice of a strided window (an op's box, then its stride) is one
  // slice: bufferization then sees the insertion of a max-pool gradient's
  // window back where it was extracted as in place, instead of copying the
  // whole window each time.
  RewritePatternSet merges(function.getContext());
  tensor::populateMergeConsecutiveInsertExtractSlicePatterns(merges);
  walkAndApplyPatterns(function, std::move(merges));
  // What the merged slices read from is left unread: last first, so that a
  // chain of them goes.
  SmallVector<tensor::ExtractSliceOp> slices;
  function.walk([&](tensor::ExtractSliceOp slice) { slices.push_back(slice); });
  for (tensor::ExtractSliceOp slice : llvm::reverse(slices))
    if (slice->use_empty())
      slice->erase();
  for (auto [state, attr] : llvm::zip(kept, shardAttrs)) {
    function.setArgAttr(state.arg, SoapDialect::getShardAttrName(), attr);
    function.setResultAttr(state.result, SoapDialect::getShardAttrName(),
                           attr);
  }
  return success();
}

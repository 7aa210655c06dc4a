//===- ShardInterop.cpp - SOAP configs and upstream shard annotations -----===//

#include "soap/Partition/ShardInterop.h"

#include "RankTables.h"

#include "soap/Dialect/SoapDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/MapVector.h"

#include <numeric>

using namespace mlir;
using namespace soap;
using namespace soap::partition;

static constexpr llvm::StringLiteral kGridName = "soap_grid";

//===----------------------------------------------------------------------===//
// Export
//===----------------------------------------------------------------------===//

/// The loop an op is split along over all `numDevices` devices in order,
/// or why its config does not fit a 1-D grid.
static FailureOr<unsigned> gridLoop(linalg::LinalgOp op, ConfigAttr config,
                                    int64_t numDevices, std::string &why) {
  std::optional<unsigned> loop;
  for (auto [l, degree] : llvm::enumerate(config.getDegrees())) {
    if (degree == 1)
      continue;
    if (loop) {
      why = "it splits several loops";
      return failure();
    }
    loop = l;
  }
  if (!loop) {
    why = "it runs on one device";
    return failure();
  }
  if (*loop >= op.getNumLoops()) {
    why = "it splits the rows of a gather's table (a lookup loop)";
    return failure();
  }
  SmallVector<int64_t> inOrder(numDevices);
  std::iota(inOrder.begin(), inOrder.end(), 0);
  if (ArrayRef<int64_t>(inOrder) != config.getDevices()) {
    why = "its tasks are not on devices 0.." + std::to_string(numDevices - 1) +
          " in order";
    return failure();
  }
  for (AffineMap map : op.getIndexingMapsArray())
    for (AffineExpr expr : map.getResults())
      if (!isa<AffineDimExpr>(expr) && expr.isFunctionOfDim(*loop)) {
        why = "an operand is read through a window of the split loop (halo)";
        return failure();
      }
  return *loop;
}

LogicalResult soap::exportShardAnnotations(func::FuncOp function,
                                           int64_t numDevices) {
  auto module = function->getParentOfType<ModuleOp>();
  if (module.lookupSymbol(kGridName))
    return module.emitError() << "soap-export-shard: the module already has "
                                 "a symbol @"
                              << kGridName;
  MLIRContext *context = function.getContext();
  OpBuilder b(context);
  b.setInsertionPointToStart(module.getBody());
  shard::GridOp::create(b, function.getLoc(), kGridName,
                        b.getDenseI64ArrayAttr({numDevices}));
  auto gridRef = FlatSymbolRefAttr::get(context, kGridName);

  Block &entry = function.getBody().front();
  b.setInsertionPointToStart(&entry);
  Location loc = function.getLoc();
  // One sharding op per pattern of split dimensions, at the entry.
  std::map<SmallVector<bool>, Value> shardings;
  auto shardingFor = [&](ArrayRef<bool> split) -> Value {
    SmallVector<bool> key(split);
    if (key.empty())
      key.push_back(false);
    Value &slot = shardings[key];
    if (!slot) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&entry);
      SmallVector<shard::GridAxesAttr> axes;
      for (bool s : key)
        axes.push_back(s ? DenseI16ArrayAttr::get(context, {0})
                         : DenseI16ArrayAttr::get(context, {}));
      slot = shard::ShardingOp::create(b, loc, gridRef, axes).getResult();
    }
    return slot;
  };
  auto replicated = [&](RankedTensorType type) {
    return shardingFor(SmallVector<bool>(type.getRank(), false));
  };

  // Arguments and results are whole on every device.
  for (BlockArgument argument : entry.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(argument.getType());
    if (!type)
      continue;
    Value sharding = replicated(type);
    b.setInsertionPointAfterValue(sharding);
    auto annotated =
        shard::ShardOp::create(b, loc, type, argument, sharding, false);
    argument.replaceAllUsesExcept(annotated.getResult(), annotated);
  }
  Operation *terminator = entry.getTerminator();
  for (OpOperand &operand : terminator->getOpOperands()) {
    auto type = dyn_cast<RankedTensorType>(operand.get().getType());
    if (!type)
      continue;
    b.setInsertionPoint(terminator);
    operand.set(shard::ShardOp::create(b, loc, type, operand.get(),
                                       replicated(type), false));
  }

  llvm::MapVector<StringRef, unsigned> dropped;
  std::string firstWhy;
  SmallVector<Operation *> configured;
  function.walk([&](Operation *op) {
    if (op->hasAttr(SoapDialect::getConfigAttrName()))
      configured.push_back(op);
  });
  for (Operation *op : configured) {
    auto config =
        op->getAttrOfType<ConfigAttr>(SoapDialect::getConfigAttrName());
    op->removeAttr(SoapDialect::getConfigAttrName());
    auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
    std::string why = "it is not a linalg op";
    FailureOr<unsigned> loop =
        linalgOp ? gridLoop(linalgOp, config, numDevices, why)
                 : FailureOr<unsigned>(failure());
    if (failed(loop)) {
      ++dropped[op->getName().getStringRef()];
      if (firstWhy.empty())
        firstWhy = "'" + op->getName().getStringRef().str() + "': " + why;
      continue;
    }
    b.setInsertionPoint(op);
    for (OpOperand &operand : op->getOpOperands()) {
      auto type = dyn_cast<RankedTensorType>(operand.get().getType());
      if (!type)
        continue;
      AffineMap map = linalgOp.getMatchingIndexingMap(&operand);
      SmallVector<bool> split;
      for (AffineExpr expr : map.getResults())
        split.push_back(isa<AffineDimExpr>(expr) &&
                        cast<AffineDimExpr>(expr).getPosition() == *loop);
      Value sharding = shardingFor(split);
      operand.set(shard::ShardOp::create(b, op->getLoc(), type, operand.get(),
                                         sharding, true));
    }
  }
  if (!dropped.empty()) {
    InFlightDiagnostic warning = emitWarning(function.getLoc());
    warning << "soap-export-shard: configs that do not fit a 1-D grid of "
            << numDevices << " devices were dropped (first: " << firstWhy
            << "):";
    for (auto [name, count] : dropped)
      warning << " " << name << " x" << count;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Import
//===----------------------------------------------------------------------===//

LogicalResult soap::importShardAnnotations(func::FuncOp function) {
  auto module = function->getParentOfType<ModuleOp>();
  shard::GridOp grid;
  SmallVector<shard::ShardOp> annotations;
  WalkResult walk = function.walk([&](shard::ShardOp op) -> WalkResult {
    annotations.push_back(op);
    auto sharding = op.getSharding().getDefiningOp<shard::ShardingOp>();
    if (!sharding)
      return op.emitError() << "soap-import-shard: the sharding is not "
                               "defined by shard.sharding";
    auto found = module.lookupSymbol<shard::GridOp>(sharding.getGrid());
    if (!found)
      return sharding.emitError()
             << "soap-import-shard: no shard.grid @" << sharding.getGrid();
    if (grid && grid != found)
      return sharding.emitError() << "soap-import-shard: the function uses "
                                     "several grids; SOAP configs need one";
    grid = found;
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  if (!grid)
    return success();
  ArrayRef<int64_t> shape = grid.getShape();
  if (llvm::any_of(shape, ShapedType::isDynamic))
    return grid.emitError() << "soap-import-shard: the grid needs a static "
                               "shape";
  int64_t numDevices = 1;
  for (int64_t size : shape)
    numDevices *= size;

  MLIRContext *context = function.getContext();
  llvm::MapVector<StringRef, unsigned> skipped;
  std::string firstWhy;
  function.walk([&](linalg::LinalgOp op) {
    SmallVector<int64_t> loopSizes = op.getStaticLoopRanges();
    SmallVector<SmallVector<int16_t>> axesOfLoop(loopSizes.size());
    bool annotated = false;
    std::string why;
    for (OpOperand &operand : op->getOpOperands()) {
      auto annotation = operand.get().getDefiningOp<shard::ShardOp>();
      if (!annotation || !annotation.getAnnotateForUsers())
        continue;
      auto sharding =
          annotation.getSharding().getDefiningOp<shard::ShardingOp>();
      if (!sharding.getStaticHaloSizes().empty() ||
          !sharding.getStaticShardedDimsOffsets().empty() ||
          !sharding.getDynamicHaloSizes().empty() ||
          !sharding.getDynamicShardedDimsOffsets().empty()) {
        why = "a sharding with halos or explicit offsets";
        break;
      }
      annotated = true;
      AffineMap map = op.getMatchingIndexingMap(&operand);
      for (auto [dim, axes] :
           llvm::enumerate(sharding.getSplitAxes().getAxes())) {
        if (axes.empty())
          continue;
        auto expr = dim < map.getNumResults()
                        ? dyn_cast<AffineDimExpr>(map.getResult(dim))
                        : nullptr;
        if (!expr) {
          why = "a split dimension that is not indexed by one loop";
          break;
        }
        SmallVector<int16_t> list(axes.asArrayRef());
        SmallVector<int16_t> &slot = axesOfLoop[expr.getPosition()];
        if (!slot.empty() && slot != list) {
          why = "operands that split one loop differently";
          break;
        }
        slot = list;
      }
      if (!why.empty())
        break;
    }
    if (!annotated && why.empty())
      return;
    SmallVector<int64_t> degrees(loopSizes.size(), 1);
    if (why.empty())
      for (auto [l, axes] : llvm::enumerate(axesOfLoop)) {
        for (int16_t axis : axes)
          degrees[l] *= shape[axis];
        if (ShapedType::isDynamic(loopSizes[l]) ||
            loopSizes[l] % degrees[l] != 0)
          why = "a split that does not divide its loop";
      }
    if (!why.empty()) {
      ++skipped[op->getName().getStringRef()];
      if (firstWhy.empty())
        firstWhy = "'" + op->getName().getStringRef().str() + "': " + why;
      return;
    }
    // Task t's loop coordinates give grid coordinates (axes not used stay
    // at 0); its device is their row-major linear index.
    int64_t tasks = 1;
    for (int64_t degree : degrees)
      tasks *= degree;
    SmallVector<int64_t> devices;
    for (int64_t task = 0; task < tasks; ++task) {
      SmallVector<int64_t> gridCoords(shape.size(), 0);
      int64_t rest = task;
      for (int64_t l = static_cast<int64_t>(degrees.size()) - 1; l >= 0;
           --l) {
        int64_t coord = rest % degrees[l];
        rest /= degrees[l];
        for (int16_t axis : llvm::reverse(axesOfLoop[l])) {
          gridCoords[axis] = coord % shape[axis];
          coord /= shape[axis];
        }
      }
      int64_t device = 0;
      for (auto [axis, size] : llvm::enumerate(shape))
        device = device * size + gridCoords[axis];
      devices.push_back(device);
    }
    op->setAttr(SoapDialect::getConfigAttrName(),
                ConfigAttr::get(context, degrees, devices));
  });

  for (shard::ShardOp annotation : llvm::reverse(annotations)) {
    annotation.getResult().replaceAllUsesWith(annotation.getSrc());
    annotation.erase();
  }
  SmallVector<Operation *> unused;
  function.walk([&](shard::ShardingOp op) {
    if (op->use_empty())
      unused.push_back(op);
  });
  for (Operation *op : unused)
    op->erase();
  module->setAttr(SoapDialect::getNumDevicesAttrName(),
                  Builder(context).getI64IntegerAttr(numDevices));
  if (!skipped.empty()) {
    InFlightDiagnostic warning = emitWarning(function.getLoc());
    warning << "soap-import-shard: ops whose annotations have no SOAP "
               "config run replicated (first: "
            << firstWhy << "):";
    for (auto [name, count] : skipped)
      warning << " " << name << " x" << count;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Lowering shard collectives
//===----------------------------------------------------------------------===//

namespace {

/// A static grid: devices numbered row-major over its coordinates.
struct Grid {
  SmallVector<int64_t> shape;
  int64_t numDevices = 1;

  int64_t coordinate(int64_t device, int64_t axis) const {
    int64_t stride = 1;
    for (int64_t a = static_cast<int64_t>(shape.size()) - 1; a > axis; --a)
      stride *= shape[a];
    return (device / stride) % shape[axis];
  }
  /// The position of `device` in its group over `axes` (first axis
  /// slowest), and the group's devices in that order.
  int64_t indexInGroup(int64_t device, ArrayRef<int16_t> axes) const {
    int64_t index = 0;
    for (int16_t axis : axes)
      index = index * shape[axis] + coordinate(device, axis);
    return index;
  }
  SmallVector<int64_t> groupOf(int64_t device, ArrayRef<int16_t> axes) const {
    SmallVector<std::pair<int64_t, int64_t>> members;
    for (int64_t other = 0; other < numDevices; ++other) {
      bool same = true;
      for (int64_t axis = 0; axis < static_cast<int64_t>(shape.size()); ++axis)
        if (!llvm::is_contained(axes, axis) &&
            coordinate(other, axis) != coordinate(device, axis))
          same = false;
      if (same)
        members.push_back({indexInGroup(other, axes), other});
    }
    llvm::sort(members);
    SmallVector<int64_t> group;
    for (auto [index, member] : members)
      group.push_back(member);
    return group;
  }
  /// Every group over `axes`, each in group order.
  SmallVector<SmallVector<int64_t>> groups(ArrayRef<int16_t> axes) const {
    SmallVector<SmallVector<int64_t>> result;
    for (int64_t device = 0; device < numDevices; ++device) {
      SmallVector<int64_t> group = groupOf(device, axes);
      if (!llvm::is_contained(result, group))
        result.push_back(group);
    }
    return result;
  }
};

std::optional<ReductionKind> soapKind(shard::ReductionKind kind) {
  switch (kind) {
  case shard::ReductionKind::Sum:
    return ReductionKind::sum;
  case shard::ReductionKind::Max:
    return ReductionKind::max;
  case shard::ReductionKind::Min:
    return ReductionKind::min;
  default:
    return std::nullopt;
  }
}

} // namespace

/// One collective per group over `axes`; each rank takes the result of its
/// own group.
static Value perGroup(OpBuilder &b, Location loc, Value rank, const Grid &grid,
                      ArrayRef<int16_t> axes,
                      function_ref<Value(ArrayRef<int64_t>)> build) {
  SmallVector<SmallVector<int64_t>> groups = grid.groups(axes);
  Value result;
  for (ArrayRef<int64_t> group : groups) {
    Value value = build(group);
    if (!result) {
      result = value;
      continue;
    }
    SmallVector<bool> member(grid.numDevices, false);
    for (int64_t device : group)
      member[device] = true;
    result = arith::SelectOp::create(b, loc, flagOfRank(b, loc, rank, member),
                                     value, result);
  }
  return result;
}

LogicalResult soap::lowerShardCollectives(ModuleOp module) {
  SmallVector<shard::GridOp> grids(module.getOps<shard::GridOp>());
  if (grids.empty())
    return success();
  if (grids.size() != 1)
    return grids[1].emitError()
           << "soap-lower-shard: SOAP runs programs on one grid, not "
           << grids.size();
  Grid grid;
  grid.shape.assign(grids[0].getShape().begin(), grids[0].getShape().end());
  for (int64_t size : grid.shape) {
    if (ShapedType::isDynamic(size))
      return grids[0].emitError()
             << "soap-lower-shard: the grid needs a static shape";
    grid.numDevices *= size;
  }
  if (auto declared = module->getAttrOfType<IntegerAttr>(
          SoapDialect::getNumDevicesAttrName());
      declared && declared.getInt() != grid.numDevices)
    return module.emitError() << "soap-lower-shard: soap.num_devices = "
                              << declared.getInt() << " but the grid has "
                              << grid.numDevices << " devices";
  MLIRContext *context = module.getContext();
  OpBuilder b(context);
  auto allAxes = [&](ArrayRef<int16_t> axes) {
    SmallVector<int16_t> result(axes);
    if (result.empty())
      for (int16_t a = 0; a < static_cast<int16_t>(grid.shape.size()); ++a)
        result.push_back(a);
    return result;
  };

  for (auto function : module.getOps<func::FuncOp>()) {
    if (function.isExternal())
      continue;
    SmallVector<Operation *> ops;
    function.walk([&](Operation *op) {
      if (isa<shard::ShardDialect>(op->getDialect()))
        ops.push_back(op);
    });
    if (ops.empty())
      continue;
    b.setInsertionPointToStart(&function.getBody().front());
    Value rank = RankOp::create(b, function.getLoc(), b.getIndexType());
    for (Operation *op : ops) {
      b.setInsertionPoint(op);
      Location loc = op->getLoc();
      auto perDevice = [&](function_ref<int64_t(int64_t)> f) {
        SmallVector<int64_t> values;
        for (int64_t device = 0; device < grid.numDevices; ++device)
          values.push_back(f(device));
        return valueOfRank(b, loc, rank, values);
      };
      SmallVector<Value> replacements;
      if (isa<shard::ProcessLinearIndexOp>(op)) {
        replacements.push_back(rank);
      } else if (auto index = dyn_cast<shard::ProcessMultiIndexOp>(op)) {
        for (int16_t axis : allAxes(index.getAxes()))
          replacements.push_back(perDevice([&](int64_t device) {
            return grid.coordinate(device, axis);
          }));
      } else if (auto shape = dyn_cast<shard::GridShapeOp>(op)) {
        for (int16_t axis : allAxes(shape.getAxes()))
          replacements.push_back(
              arith::ConstantIndexOp::create(b, loc, grid.shape[axis]));
      } else if (auto reduce = dyn_cast<shard::AllReduceOp>(op)) {
        std::optional<ReductionKind> kind = soapKind(reduce.getReduction());
        if (!kind || reduce.getInput().getType() != reduce.getType())
          return op->emitError() << "soap-lower-shard: only sum, max and min "
                                    "all_reduce without a type change run "
                                    "on SOAP's runtime";
        SmallVector<int16_t> axes = allAxes(reduce.getGridAxes());
        replacements.push_back(
            perGroup(b, loc, rank, grid, axes, [&](ArrayRef<int64_t> group) {
              return AllReduceOp::create(
                  b, loc, reduce.getType(),
                  ReductionKindAttr::get(context, *kind), reduce.getInput(),
                  b.getDenseI64ArrayAttr(group));
            }));
      } else if (auto gather = dyn_cast<shard::AllGatherOp>(op)) {
        SmallVector<int16_t> axes = allAxes(gather.getGridAxes());
        int64_t dim = gather.getGatherAxis().getSExtValue();
        replacements.push_back(
            perGroup(b, loc, rank, grid, axes, [&](ArrayRef<int64_t> group) {
              return AllGatherOp::create(b, loc, gather.getType(),
                                         gather.getInput(),
                                         b.getI64IntegerAttr(dim),
                                         b.getDenseI64ArrayAttr(group));
            }));
      } else if (auto a2a = dyn_cast<shard::AllToAllOp>(op)) {
        SmallVector<int16_t> axes = allAxes(a2a.getGridAxes());
        int64_t split = a2a.getSplitAxis().getSExtValue();
        int64_t concat = a2a.getConcatAxis().getSExtValue();
        replacements.push_back(
            perGroup(b, loc, rank, grid, axes, [&](ArrayRef<int64_t> group) {
              return AllToAllOp::create(b, loc, a2a.getType(), a2a.getInput(),
                                        b.getI64IntegerAttr(split),
                                        b.getI64IntegerAttr(concat),
                                        b.getDenseI64ArrayAttr(group));
            }));
      } else if (auto slice = dyn_cast<shard::AllSliceOp>(op)) {
        SmallVector<int16_t> axes = allAxes(slice.getGridAxes());
        int64_t dim = slice.getSliceAxis().getSExtValue();
        auto resultType = cast<RankedTensorType>(slice.getType());
        auto inputType = cast<RankedTensorType>(slice.getInput().getType());
        SmallVector<OpFoldResult> offsets, sizes, strides;
        for (int64_t d = 0; d < inputType.getRank(); ++d) {
          offsets.push_back(
              d == dim ? OpFoldResult(perDevice([&](int64_t device) {
                return grid.indexInGroup(device, axes) *
                       resultType.getDimSize(d);
              }))
                       : OpFoldResult(b.getIndexAttr(0)));
          sizes.push_back(b.getIndexAttr(resultType.getDimSize(d)));
          strides.push_back(b.getIndexAttr(1));
        }
        replacements.push_back(tensor::ExtractSliceOp::create(
            b, loc, resultType, slice.getInput(), offsets, sizes, strides));
      } else {
        return op->emitError()
               << "soap-lower-shard: '" << op->getName()
               << "' cannot run on SOAP's runtime yet (run shard-partition "
                  "first; supported: process_linear_index, "
                  "process_multi_index, grid_shape, all_reduce, all_gather, "
                  "all_slice, all_to_all)";
      }
      op->replaceAllUsesWith(replacements);
      op->erase();
    }
  }
  grids[0].erase();
  module->setAttr(SoapDialect::getNumDevicesAttrName(),
                  b.getI64IntegerAttr(grid.numDevices));
  return success();
}

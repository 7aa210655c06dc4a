//===- GpuKernels.cpp - block reductions and scatter-adds on the GPU ------===//
//
// The GPU lowering (GpuLowering.cpp) gives most ops one thread per point of
// their parallel loops. Two shapes of work run badly that way, and get a
// kernel of their own here:
//
// - Reductions over many elements into few (batch-norm statistics over
//   batch x height x width per channel, bias gradients over every token, a
//   loss's sum): one thread per output point leaves most of the GPU idle
//   and walks the reduced elements one by one. `launchBlockReduction` gives
//   each output point a block of threads that stride over the reduced
//   points (neighbouring threads reading neighbouring elements), each
//   keeping a partial value from the combiner's neutral element, combined
//   across the block with gpu.all_reduce and then with the output's old
//   value by one thread.
// - A gather's scatter-add gradient (lib/autodiff/GatherGradient.cpp): a
//   loop nest that adds each point's contribution to the table row it
//   read. Points that read the same row (repeated ids) add to the same
//   element, so it ran on one thread. `launchScatterAdd` runs it with one
//   thread per point and the update as an atomic add.
//
// Both change the order in which values are summed, not what is summed.
//
//===----------------------------------------------------------------------===//

#include "GpuKernels.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace soap::codegen {

namespace {

/// The fewest reduced points for which a block reduction is worth it
/// (below, a thread per output point walks them faster than a block
/// synchronizes).
constexpr int64_t kMinBlockReduction = 32;

/// The element types that block reductions combine and scatter-adds add
/// atomically.
bool isKernelElement(Type element) {
  return element.isF32() || element.isF64() || element.isInteger(32) ||
         element.isInteger(64);
}

/// Ranges of loops from 0 by 1 with `counts` iterations.
SmallVector<LoopRange> fromZero(ArrayRef<int64_t> counts) {
  return llvm::map_to_vector(counts, [](int64_t count) {
    return LoopRange{0, 1, count};
  });
}

/// The indices that `map` gives at the loop indices `ivs`.
SmallVector<Value> indicesAt(OpBuilder &b, Location loc, AffineMap map,
                             ValueRange ivs) {
  SmallVector<Value> indices;
  for (AffineExpr expr : map.getResults())
    indices.push_back(affine::expandAffineExpr(b, loc, expr, ivs, {}));
  return indices;
}

/// gpu.all_reduce's name for the combiner `op`, if it has one.
std::optional<gpu::AllReduceOperation> allReduceKind(Operation *op) {
  using K = gpu::AllReduceOperation;
  return llvm::TypeSwitch<Operation *, std::optional<K>>(op)
      .Case<arith::AddFOp, arith::AddIOp>([](auto) { return K::ADD; })
      .Case<arith::MulFOp, arith::MulIOp>([](auto) { return K::MUL; })
      .Case<arith::MaxNumFOp>([](auto) { return K::MAXNUMF; })
      .Case<arith::MinNumFOp>([](auto) { return K::MINNUMF; })
      .Case<arith::MaximumFOp>([](auto) { return K::MAXIMUMF; })
      .Case<arith::MinimumFOp>([](auto) { return K::MINIMUMF; })
      .Case<arith::MaxSIOp>([](auto) { return K::MAXSI; })
      .Case<arith::MinSIOp>([](auto) { return K::MINSI; })
      .Case<arith::MaxUIOp>([](auto) { return K::MAXUI; })
      .Case<arith::MinUIOp>([](auto) { return K::MINUI; })
      .Case<arith::AndIOp>([](auto) { return K::AND; })
      .Case<arith::OrIOp>([](auto) { return K::OR; })
      .Case<arith::XOrIOp>([](auto) { return K::XOR; })
      .Default([](Operation *) { return std::nullopt; });
}

/// How one output of a block reduction is combined.
struct ReducedOutput {
  Operation *combiner;
  gpu::AllReduceOperation kind;
  TypedAttr neutral;
};

} // namespace

gpu::LaunchOp createLaunch(OpBuilder &b, Location loc, int64_t grid,
                           int64_t block) {
  Value one = constantIndex(b, loc, 1);
  auto launch =
      gpu::LaunchOp::create(b, loc, constantIndex(b, loc, grid), one, one,
                            constantIndex(b, loc, block), one, one);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(&launch.getBody().front());
  gpu::TerminatorOp::create(b, loc);
  return launch;
}

Value constantIndex(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(b, loc, value);
}

std::optional<LoopRange> constantRange(Value lower, Value upper, Value step) {
  std::optional<int64_t> l = getConstantIntValue(lower);
  std::optional<int64_t> u = getConstantIntValue(upper);
  std::optional<int64_t> s = getConstantIntValue(step);
  if (!l || !u || !s || *s <= 0)
    return std::nullopt;
  return LoopRange{*l, *s, std::max<int64_t>(0, (*u - *l + *s - 1) / *s)};
}

SmallVector<Value> delinearize(OpBuilder &b, Location loc, Value linear,
                               ArrayRef<LoopRange> ranges) {
  SmallVector<Value> ivs(ranges.size());
  Value rest = linear;
  for (int64_t k = static_cast<int64_t>(ranges.size()) - 1; k >= 0; --k) {
    const LoopRange &range = ranges[k];
    Value count = constantIndex(b, loc, range.count);
    Value iv = k == 0 ? rest : arith::RemUIOp::create(b, loc, rest, count);
    if (k > 0)
      rest = arith::DivUIOp::create(b, loc, rest, count);
    if (range.step != 1)
      iv = arith::MulIOp::create(b, loc, iv, constantIndex(b, loc, range.step));
    if (range.lower != 0)
      iv =
          arith::AddIOp::create(b, loc, iv, constantIndex(b, loc, range.lower));
    ivs[k] = iv;
  }
  return ivs;
}

SmallVector<Value> launchOnePerPoint(OpBuilder &b, Location loc,
                                     ArrayRef<LoopRange> ranges) {
  int64_t total = 1;
  for (const LoopRange &range : ranges)
    total *= range.count;
  int64_t block = std::min(total, kBlockSize);
  gpu::LaunchOp launch =
      createLaunch(b, loc, (total + block - 1) / block, block);
  b.setInsertionPoint(launch.getBody().front().getTerminator());
  Value id = arith::AddIOp::create(
      b, loc,
      arith::MulIOp::create(b, loc, launch.getBlockIds().x,
                            constantIndex(b, loc, block)),
      launch.getThreadIds().x);
  Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, id,
                                        constantIndex(b, loc, total));
  auto guard = scf::IfOp::create(b, loc, inRange, /*withElseRegion=*/false);
  b.setInsertionPoint(guard.thenBlock()->getTerminator());
  return delinearize(b, loc, id, ranges);
}

bool launchBlockReduction(RewriterBase &rewriter, linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumReductionLoops() == 0 ||
      op.getNumDpsInits() == 0)
    return false;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return false;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  SmallVector<int64_t> parallelRanges, reducedRanges;
  SmallVector<unsigned> parallelDims, reducedDims;
  for (auto [dim, it] : llvm::enumerate(iterators)) {
    bool parallel = it == utils::IteratorType::parallel;
    (parallel ? parallelRanges : reducedRanges).push_back(ranges[dim]);
    (parallel ? parallelDims : reducedDims).push_back(dim);
  }
  int64_t points = 1, reduced = 1;
  for (int64_t r : parallelRanges)
    points *= r;
  for (int64_t r : reducedRanges)
    reduced *= r;
  if (reduced < kMinBlockReduction || points == 0 ||
      points > std::numeric_limits<int32_t>::max())
    return false;

  // Every output is reduced: its map reads no reduced loop, and its block
  // argument feeds only one combiner that gpu.all_reduce knows.
  Block &body = op.getRegion().front();
  SmallVector<BlockArgument> outputArgs(op.getRegionOutputArgs());
  SmallVector<ReducedOutput> outputs;
  for (auto [k, init] : llvm::enumerate(op.getDpsInitsMutable())) {
    AffineMap map = op.getMatchingIndexingMap(&init);
    if (llvm::any_of(reducedDims,
                     [&](unsigned d) { return map.isFunctionOfDim(d); }))
      return false;
    if (!isKernelElement(getElementTypeOrSelf(init.get().getType())))
      return false;
    SmallVector<Operation *> combiners;
    if (!matchReduction(outputArgs, k, combiners) || combiners.size() != 1 ||
        !outputArgs[k].hasOneUse())
      return false;
    std::optional<gpu::AllReduceOperation> kind = allReduceKind(combiners[0]);
    std::optional<TypedAttr> neutral = arith::getNeutralElement(combiners[0]);
    if (!kind || !neutral)
      return false;
    outputs.push_back({combiners[0], *kind, *neutral});
  }
  // The body computes only: no memory access of its own.
  for (Operation &inner : body.without_terminator())
    if (!isPure(&inner) || inner.getNumRegions() != 0)
      return false;

  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  int64_t block = std::min<int64_t>(
      kBlockSize,
      std::max<int64_t>(kMinBlockReduction, llvm::PowerOf2Ceil(reduced)));
  gpu::LaunchOp launch = createLaunch(rewriter, loc, points, block);
  rewriter.setInsertionPoint(launch.getBody().front().getTerminator());
  Value thread = launch.getThreadIds().x;
  SmallVector<Value> ivs(ranges.size());
  for (auto [dim, index] : llvm::zip(
           parallelDims, delinearize(rewriter, loc, launch.getBlockIds().x,
                                     fromZero(parallelRanges))))
    ivs[dim] = index;
  SmallVector<Value> neutrals;
  for (const ReducedOutput &output : outputs)
    neutrals.push_back(
        arith::ConstantOp::create(rewriter, loc, output.neutral));
  // Each thread: its partial values over every block-th reduced point.
  auto loop = scf::ForOp::create(
      rewriter, loc, thread, constantIndex(rewriter, loc, reduced),
      constantIndex(rewriter, loc, block), neutrals,
      [&](OpBuilder &b, Location l, Value point, ValueRange partials) {
        SmallVector<Value> at = ivs;
        for (auto [dim, index] :
             llvm::zip(reducedDims,
                       delinearize(b, l, point, fromZero(reducedRanges))))
          at[dim] = index;
        IRMapping mapping;
        for (OpOperand *input : op.getDpsInputOperands()) {
          Value value = input->get();
          BlockArgument arg = op.getMatchingBlockArgument(input);
          if (!isa<MemRefType>(value.getType())) {
            mapping.map(arg, value);
            continue;
          }
          mapping.map(
              arg, memref::LoadOp::create(
                       b, l, value,
                       indicesAt(b, l, op.getMatchingIndexingMap(input), at)));
        }
        for (auto [arg, partial] : llvm::zip(outputArgs, partials))
          mapping.map(arg, partial);
        for (Operation &inner : body.without_terminator()) {
          if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
            mapping.map(index.getResult(), at[index.getDim()]);
            continue;
          }
          b.clone(inner, mapping);
        }
        SmallVector<Value> next;
        for (Value yielded : body.getTerminator()->getOperands())
          next.push_back(mapping.lookupOrDefault(yielded));
        scf::YieldOp::create(b, l, next);
      });
  // Across the block, then into the output's old value by thread 0.
  SmallVector<Value> totals;
  for (auto [output, partial] : llvm::zip(outputs, loop.getResults()))
    totals.push_back(gpu::AllReduceOp::create(
        rewriter, loc, partial,
        gpu::AllReduceOperationAttr::get(rewriter.getContext(), output.kind),
        /*uniform=*/true));
  Value first = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq,
                                      thread, constantIndex(rewriter, loc, 0));
  auto guard = scf::IfOp::create(rewriter, loc, first, /*withElse=*/false);
  rewriter.setInsertionPoint(guard.thenBlock()->getTerminator());
  for (auto [k, init] : llvm::enumerate(op.getDpsInitsMutable())) {
    SmallVector<Value> indices =
        indicesAt(rewriter, loc, op.getMatchingIndexingMap(&init), ivs);
    Value old = memref::LoadOp::create(rewriter, loc, init.get(), indices);
    Operation *combiner = outputs[k].combiner;
    IRMapping mapping;
    for (Value operand : combiner->getOperands())
      mapping.map(operand, operand == outputArgs[k] ? old : totals[k]);
    Operation *combined = rewriter.clone(*combiner, mapping);
    memref::StoreOp::create(rewriter, loc, combined->getResult(0), init.get(),
                            indices);
  }
  rewriter.eraseOp(op);
  return true;
}

namespace {

/// The loops of a perfect nest starting at `outer` (each body holds pure
/// ops and the next loop), all with constant bounds, and their `ranges`;
/// empty when it is not one.
SmallVector<scf::ForOp> perfectNest(scf::ForOp outer,
                                    SmallVector<LoopRange> &ranges) {
  SmallVector<scf::ForOp> nest;
  for (scf::ForOp loop = outer; loop;) {
    std::optional<LoopRange> range = constantRange(
        loop.getLowerBound(), loop.getUpperBound(), loop.getStep());
    if (loop.getNumResults() != 0 || !range)
      return {};
    nest.push_back(loop);
    ranges.push_back(*range);
    scf::ForOp inner;
    for (Operation &op : loop.getBody()->without_terminator()) {
      if (auto next = dyn_cast<scf::ForOp>(op)) {
        if (inner)
          return {};
        inner = next;
      }
    }
    loop = inner;
  }
  return nest;
}

/// In the innermost body, each store that adds to the element loaded from
/// the same place (`load; addf/addi; store` on one buffer and indices) and
/// is that buffer's only access: the load, the add and the store. Empty
/// when any other memory access writes.
struct ScatterUpdate {
  memref::LoadOp load;
  Operation *add;
  memref::StoreOp store;
  Value contribution;
};

std::optional<SmallVector<ScatterUpdate>> scatterUpdates(Block &body) {
  SmallVector<ScatterUpdate> updates;
  for (Operation &op : body.without_terminator()) {
    auto store = dyn_cast<memref::StoreOp>(op);
    if (!store) {
      if (!isa<memref::LoadOp>(op) && !isPure(&op))
        return std::nullopt;
      if (op.getNumRegions() != 0)
        return std::nullopt;
      continue;
    }
    Operation *add = store.getValueToStore().getDefiningOp();
    if (!add || !isa<arith::AddFOp, arith::AddIOp>(add) ||
        add->getBlock() != &body || !add->hasOneUse())
      return std::nullopt;
    ScatterUpdate update{nullptr, add, store, nullptr};
    for (unsigned i = 0; i < 2; ++i) {
      auto load = add->getOperand(i).getDefiningOp<memref::LoadOp>();
      if (load && load.getMemRef() == store.getMemRef() &&
          load.getIndices() == store.getIndices() && load->hasOneUse()) {
        update.load = load;
        update.contribution = add->getOperand(1 - i);
      }
    }
    if (!update.load)
      return std::nullopt;
    if (!isKernelElement(store.getMemRefType().getElementType()))
      return std::nullopt;
    updates.push_back(update);
  }
  // The updated buffers are read and written nowhere else in the body.
  for (ScatterUpdate &update : updates)
    for (Operation *user : update.store.getMemRef().getUsers())
      if (user->getBlock() == &body && user != update.load &&
          user != update.store)
        return std::nullopt;
  if (updates.empty())
    return std::nullopt;
  return updates;
}

} // namespace

bool launchScatterAdd(RewriterBase &rewriter, scf::ForOp outer) {
  SmallVector<LoopRange> ranges;
  SmallVector<scf::ForOp> nest = perfectNest(outer, ranges);
  if (nest.empty())
    return false;
  Block &innermost = *nest.back().getBody();
  std::optional<SmallVector<ScatterUpdate>> updates = scatterUpdates(innermost);
  if (!updates)
    return false;
  int64_t total = 1;
  for (const LoopRange &range : ranges)
    total *= range.count;
  if (total > std::numeric_limits<int32_t>::max())
    return false;
  // The outer levels compute indices and read buffers that nothing updates.
  for (scf::ForOp loop : ArrayRef(nest).drop_back())
    for (Operation &op : loop.getBody()->without_terminator()) {
      if (isa<scf::ForOp>(op) || (isPure(&op) && op.getNumRegions() == 0))
        continue;
      auto load = dyn_cast<memref::LoadOp>(op);
      if (!load || llvm::any_of(*updates, [&](ScatterUpdate &u) {
            return u.store.getMemRef() == load.getMemRef();
          }))
        return false;
    }
  Location loc = outer.getLoc();
  rewriter.setInsertionPoint(outer);
  if (total == 0) {
    rewriter.eraseOp(outer);
    return true;
  }
  IRMapping mapping;
  for (auto [loop, iv] :
       llvm::zip(nest, launchOnePerPoint(rewriter, loc, ranges)))
    mapping.map(loop.getInductionVar(), iv);
  // The pure ops of every level, in order, then the innermost body with
  // each update as one atomic add.
  for (scf::ForOp loop : nest)
    for (Operation &op : loop.getBody()->without_terminator()) {
      if (isa<scf::ForOp>(op))
        continue;
      auto update = llvm::find_if(*updates, [&](const ScatterUpdate &u) {
        return u.load == &op || u.add == &op || u.store == &op;
      });
      if (update == updates->end()) {
        rewriter.clone(op, mapping);
        continue;
      }
      if (update->store != &op)
        continue;
      SmallVector<Value> indices;
      for (Value index : update->store.getIndices())
        indices.push_back(mapping.lookupOrDefault(index));
      memref::AtomicRMWOp::create(
          rewriter, loc,
          isa<arith::AddFOp>(update->add) ? arith::AtomicRMWKind::addf
                                          : arith::AtomicRMWKind::addi,
          mapping.lookupOrDefault(update->contribution),
          mapping.lookupOrDefault(update->store.getMemRef()), indices);
    }
  rewriter.eraseOp(outer);
  return true;
}

} // namespace soap::codegen

//===- Gradient.cpp - the reverse sweep over a block of tensor ops --------===//
//
// Activity analysis (which values depend on the differentiated inputs and
// reach the loss), then one walk over the forward ops in reverse order that
// hands each active op to its gradient rule.
//
//===----------------------------------------------------------------------===//

#include "soap/Autodiff/Autodiff.h"

#include "GradientBuilder.h"
#include "soap/Dialect/Combiner.h"
#include "soap/Dialect/PartitionableInterface.h"
#include "soap/graph/ParallelConfig.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/RegionUtils.h"

using namespace mlir;

namespace soap::autodiff {

void registerAutodiffDependencies(DialectRegistry &registry) {
  registry.insert<arith::ArithDialect, linalg::LinalgDialect,
                  math::MathDialect, scf::SCFDialect, tensor::TensorDialect>();
}

//===----------------------------------------------------------------------===//
// GradientBuilder helpers
//===----------------------------------------------------------------------===//

static bool isFloatLike(Type type) {
  if (auto shaped = dyn_cast<ShapedType>(type))
    type = shaped.getElementType();
  return isa<FloatType>(type);
}

Value GradientBuilder::scalar(Location loc, Type type, double value) {
  return arith::ConstantOp::create(b, loc, type, b.getFloatAttr(type, value));
}

Value GradientBuilder::filled(Location loc, RankedTensorType type,
                              double value) {
  Value empty = tensor::EmptyOp::create(b, loc, type.getShape(),
                                        type.getElementType());
  Value fill = scalar(loc, type.getElementType(), value);
  return linalg::FillOp::create(b, loc, ValueRange{fill}, ValueRange{empty})
      .getResult(0);
}

Value GradientBuilder::add(Location loc, Value lhs, Value rhs) {
  auto type = cast<RankedTensorType>(lhs.getType());
  AffineMap identity = b.getMultiDimIdentityMap(type.getRank());
  SmallVector<utils::IteratorType> iterators(type.getRank(),
                                             utils::IteratorType::parallel);
  Value init = tensor::EmptyOp::create(b, loc, type.getShape(),
                                       type.getElementType());
  auto op = linalg::GenericOp::create(
      b, loc, TypeRange{type}, ValueRange{lhs, rhs}, ValueRange{init},
      ArrayRef<AffineMap>{identity, identity, identity}, iterators,
      [](OpBuilder &nb, Location l, ValueRange args) {
        Value sum = arith::AddFOp::create(nb, l, args[0], args[1]);
        linalg::YieldOp::create(nb, l, sum);
      });
  return op.getResult(0);
}

Value GradientBuilder::transpose(Location loc, Value value,
                                 ArrayRef<int64_t> perm) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(type.getDimSize(p));
  Value init = tensor::EmptyOp::create(b, loc, shape, type.getElementType());
  return linalg::TransposeOp::create(b, loc, value, init, perm).getResult()[0];
}

Value GradientBuilder::insertIntoZeros(Location loc, Value source,
                                       RankedTensorType type,
                                       ArrayRef<int64_t> offsets,
                                       ArrayRef<int64_t> strides) {
  auto sourceType = cast<RankedTensorType>(source.getType());
  Value dest = zeros(loc, type);
  MLIRContext *context = b.getContext();
  return tensor::InsertSliceOp::create(
      b, loc, source, dest, getAsIndexOpFoldResult(context, offsets),
      getAsIndexOpFoldResult(context, sourceType.getShape()),
      getAsIndexOpFoldResult(context, strides));
}

Value GradientBuilder::slice(Location loc, Value source,
                             ArrayRef<int64_t> offsets, ArrayRef<int64_t> sizes,
                             ArrayRef<int64_t> strides) {
  auto type = cast<RankedTensorType>(source.getType());
  auto resultType = RankedTensorType::get(sizes, type.getElementType());
  MLIRContext *context = b.getContext();
  return tensor::ExtractSliceOp::create(
      b, loc, resultType, source, getAsIndexOpFoldResult(context, offsets),
      getAsIndexOpFoldResult(context, sizes),
      getAsIndexOpFoldResult(context, strides));
}

/// When `gradient` is computed by an op that adds its result to its init
/// (a contraction or convolution) into a zero fill used by it alone: that
/// op, so that a gradient already accumulated can become its init.
static linalg::LinalgOp accumulatingProducer(Value gradient) {
  auto op = gradient.getDefiningOp<linalg::LinalgOp>();
  if (!op || op.getNumDpsInits() != 1 || !gradient.use_empty())
    return {};
  if (!isa<linalg::Conv2DNchwFchwOp>(op.getOperation()) &&
      !linalg::isaContractionOpInterface(op))
    return {};
  // A convolution's input gradient that the partitioner runs task by task
  // into zeros (soap.transposed_config) keeps its own init.
  if (op->hasAttr(SoapDialect::getTransposedConfigAttrName()))
    return {};
  Value init = op.getDpsInits()[0];
  auto fill = init.getDefiningOp<linalg::FillOp>();
  if (!fill || !init.hasOneUse() || init.getType() != gradient.getType())
    return {};
  auto zero = fill.getInputs()[0].getDefiningOp<arith::ConstantOp>();
  auto value = zero ? dyn_cast<FloatAttr>(zero.getValue()) : FloatAttr();
  if (!value || !value.getValue().isZero())
    return {};
  return op;
}

/// Makes `sum` the init of `producer` (accumulatingProducer's), in place
/// of its zero fill.
static void accumulateInto(linalg::LinalgOp producer, Value sum) {
  Operation *fill = producer.getDpsInits()[0].getDefiningOp();
  producer.getDpsInitsMutable()[0].set(sum);
  if (fill->use_empty())
    fill->erase();
}

void GradientBuilder::accumulate(Location loc, Value value, Value gradient) {
  if (!isActive(value))
    return;
  Value &slot = adjoints[value];
  if (!slot && !interleaved.contains(value)) {
    slot = gradient;
    return;
  }
  // A weight used several times (an RNN's, at every time step): the next
  // gradient's contraction adds itself to the sum so far (BLAS's beta = 1)
  // instead of a separate elementwise add over the whole weight; where the
  // readers' layouts interleave, to the sum so far of its own layout.
  if (interleaved.contains(value)) {
    if (linalg::LinalgOp producer = accumulatingProducer(gradient)) {
      auto config =
          producer->getAttrOfType<ConfigAttr>(SoapDialect::getConfigAttrName());
      for (auto &[layout, chain] : chains[value])
        if (layout == config) {
          accumulateInto(producer, chain);
          chain = gradient;
          return;
        }
      chains[value].push_back({config, gradient});
      return;
    }
    if (!slot) {
      slot = gradient;
      return;
    }
  }
  if (linalg::LinalgOp producer = accumulatingProducer(gradient)) {
    accumulateInto(producer, slot);
    slot = gradient;
    return;
  }
  accumulating = true;
  slot = add(loc, slot, gradient);
  accumulating = false;
}

void GradientBuilder::settle(Location loc, Value value) {
  auto found = chains.find(value);
  if (found == chains.end())
    return;
  // The other gradients first, then the chains in the order they began:
  // the partitioner adds them where the last one is.
  Value &slot = adjoints[value];
  accumulating = true;
  for (auto &[layout, chain] : found->second)
    slot = slot ? add(loc, slot, chain) : chain;
  accumulating = false;
  chains.erase(found);
}

//===----------------------------------------------------------------------===//
// Gradients of ops that run whole on one device
//===----------------------------------------------------------------------===//

namespace {
/// While a gradient rule runs: when the forward op runs whole on one device
/// (a single task: model parallelism, a pipeline stage), each op the rule
/// inserts gets a config whole on that device, whatever its loops (a
/// convolution's filter gradient, a transposed convolution), as the
/// simulator prices the op's backward work; when it runs whole on every
/// device (soap.replicated), each gets soap.replicated. A rule that builds an
/// op over the forward loops sets the forward config on it afterwards, which
/// replaces this one. Adjoint sums (accumulate) keep running where their
/// operands are, and transposes stay lazy: each reader transposes what it
/// reads, and the CPU lowering folds them into the contractions (a config
/// would make each one a copy). Set as each op is inserted: rules erase
/// some of the ops they built.
struct OnOneDevice : OpBuilder::Listener {
  OnOneDevice(GradientBuilder &g, OpBuilder::Listener *previous)
      : g(g), previous(previous) {}
  void notifyOperationInserted(Operation *op,
                               OpBuilder::InsertPoint before) override {
    place(op);
    if (previous)
      previous->notifyOperationInserted(op, before);
  }
  void place(Operation *op) {
    ConfigAttr config = g.forwardConfig;
    bool oneDevice = config && config.getDevices().size() == 1;
    if (g.accumulating || (!oneDevice && !g.forwardReplicated))
      return;
    auto partitionable = dyn_cast<PartitionableOpInterface>(op);
    if (!partitionable || isa<linalg::TransposeOp>(op) ||
        op->hasAttr(SoapDialect::getConfigAttrName()) ||
        !isa_and_nonnull<func::FuncOp>(op->getParentOp()))
      return;
    if (!oneDevice) {
      // Whole on every device, as the forward op.
      op->setAttr(SoapDialect::getReplicatedAttrName(),
                  UnitAttr::get(op->getContext()));
      return;
    }
    SmallVector<int64_t> ones(partitionable.getLoopSizes().size(), 1);
    op->setAttr(SoapDialect::getConfigAttrName(),
                ConfigAttr::get(op->getContext(), ones, config.getDevices()));
  }
  GradientBuilder &g;
  OpBuilder::Listener *previous;
};
} // namespace

//===----------------------------------------------------------------------===//
// Activity analysis and the sweep
//===----------------------------------------------------------------------===//

/// The values an op reads: its operands and the values its regions use
/// from above.
static SmallVector<Value> readValues(Operation *op) {
  SmallVector<Value> values(op->getOperands());
  if (op->getNumRegions() != 0) {
    llvm::SetVector<Value> captured;
    getUsedValuesDefinedAbove(op->getRegions(), captured);
    values.append(captured.begin(), captured.end());
  }
  return values;
}

static LogicalResult differentiateOp(GradientBuilder &g, Operation *op) {
  if (auto generic = dyn_cast<linalg::GenericOp>(op))
    return differentiateGeneric(g, generic, generic->getResults());
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
    return differentiateLinalgOp(g, linalgOp);
  if (isa<tensor::TensorDialect>(op->getDialect()))
    return differentiateTensorOp(g, op);
  return op->emitOpError("cannot be differentiated: no gradient rule for it");
}

FailureOr<SmallVector<Value>> buildGradients(OpBuilder &builder, Value loss,
                                             ArrayRef<Value> wrt) {
  Block *block = builder.getInsertionBlock();
  auto lossType = dyn_cast<RankedTensorType>(loss.getType());
  if (!lossType || lossType.getRank() != 0 || !isFloatLike(lossType)) {
    emitError(loss.getLoc()) << "the loss must be a rank-0 float tensor, not "
                             << loss.getType();
    return failure();
  }
  SmallVector<Operation *> forward;
  for (Operation &op :
       llvm::make_range(block->begin(), builder.getInsertionPoint()))
    forward.push_back(&op);

  // Values that depend on `wrt`, then those among them the loss reads.
  DenseSet<Value> varied(wrt.begin(), wrt.end());
  for (Operation *op : forward) {
    if (llvm::none_of(readValues(op),
                      [&](Value v) { return varied.contains(v); }))
      continue;
    for (Value result : op->getResults())
      if (isFloatLike(result.getType()))
        varied.insert(result);
  }
  GradientBuilder g(builder);
  DenseSet<Value> useful{loss};
  for (Operation *op : llvm::reverse(forward)) {
    if (llvm::none_of(op->getResults(),
                      [&](Value r) { return useful.contains(r); }))
      continue;
    for (Value operand : readValues(op))
      useful.insert(operand);
  }
  for (Value v : varied)
    if (useful.contains(v))
      g.active.insert(v);

  // Values whose readers' configs interleave (GradientBuilder::interleaved).
  {
    DenseMap<Value, SmallVector<ConfigAttr>> runs;
    for (Operation *op : forward) {
      auto config =
          op->getAttrOfType<ConfigAttr>(SoapDialect::getConfigAttrName());
      for (Value operand : op->getOperands()) {
        if (!g.isActive(operand))
          continue;
        SmallVector<ConfigAttr> &seen = runs[operand];
        if (!seen.empty() && seen.back() == config)
          continue;
        if (llvm::is_contained(seen, config))
          g.interleaved.insert(operand);
        seen.push_back(config);
      }
    }
  }

  Location loc = loss.getLoc();
  if (g.isActive(loss))
    g.adjoints[loss] = g.filled(loc, lossType, 1.0);

  // An op without a gradient does not stop the sweep: every such op is
  // reported, in program order (the first one first), and then the sweep
  // fails.
  MLIRContext *context = builder.getContext();
  SmallVector<SmallVector<Diagnostic>> failures;
  for (Operation *op : llvm::reverse(forward)) {
    for (Value result : op->getResults())
      g.settle(op->getLoc(), result);
    if (llvm::none_of(op->getResults(),
                      [&](Value r) { return g.adjoint(r); }))
      continue;
    OpBuilder::InsertionGuard guard(builder);
    SmallVector<Diagnostic> diagnostics;
    LogicalResult result = success();
    {
      ScopedDiagnosticHandler capture(context, [&](Diagnostic &diagnostic) {
        diagnostics.push_back(std::move(diagnostic));
        return success();
      });
      g.forwardConfig =
          op->getAttrOfType<ConfigAttr>(SoapDialect::getConfigAttrName());
      g.forwardReplicated = op->hasAttr(SoapDialect::getReplicatedAttrName());
      // The partitioner runs such a split whole everywhere: so does its
      // gradient.
      auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
      if (g.forwardConfig && linalgOp &&
          splitsUncombinablePartials(linalgOp, g.forwardConfig.getDegrees())) {
        g.forwardConfig = nullptr;
        g.forwardReplicated = true;
      }
      OnOneDevice listener(g, builder.getListener());
      builder.setListener(&listener);
      result = differentiateOp(g, op);
      builder.setListener(listener.previous);
      g.forwardConfig = nullptr;
      g.forwardReplicated = false;
    }
    if (failed(result)) {
      failures.push_back(std::move(diagnostics));
      // Zeros stand in for the adjoints it could not give, so that the
      // sweep reaches (and reports) the ops before it; nothing is built
      // from them.
      for (Value operand : readValues(op))
        if (g.isActive(operand) && !g.adjoint(operand))
          if (auto type = dyn_cast<RankedTensorType>(operand.getType()))
            g.adjoints[operand] = g.zeros(op->getLoc(), type);
    }
  }
  if (!failures.empty()) {
    for (SmallVector<Diagnostic> &diagnostics : llvm::reverse(failures))
      for (Diagnostic &diagnostic : diagnostics)
        context->getDiagEngine().emit(std::move(diagnostic));
    return failure();
  }

  SmallVector<Value> gradients;
  for (Value value : wrt) {
    g.settle(value.getLoc(), value);
    Value gradient = g.adjoint(value);
    if (!gradient)
      gradient = g.zeros(value.getLoc(), cast<RankedTensorType>(value.getType()));
    gradients.push_back(gradient);
  }
  return gradients;
}

FailureOr<SmallVector<Value>> buildOpGradients(OpBuilder &builder,
                                               Operation *op,
                                               ValueRange resultAdjoints,
                                               ArrayRef<unsigned> wrtOperands) {
  GradientBuilder g(builder);
  for (auto [result, adjoint] : llvm::zip(op->getResults(), resultAdjoints)) {
    g.active.insert(result);
    g.adjoints[result] = adjoint;
  }
  for (unsigned index : wrtOperands)
    g.active.insert(op->getOperand(index));
  if (failed(differentiateOp(g, op)))
    return failure();
  SmallVector<Value> gradients;
  for (unsigned index : wrtOperands) {
    Value operand = op->getOperand(index);
    Value gradient = g.adjoint(operand);
    if (!gradient)
      gradient = g.zeros(op->getLoc(), cast<RankedTensorType>(operand.getType()));
    gradients.push_back(gradient);
  }
  return gradients;
}

} // namespace soap::autodiff

namespace soap::autodiff {

ConfigAttr reorderedConfig(ConfigAttr config, ArrayRef<unsigned> forwardLoops) {
  if (!config)
    return nullptr;
  ParallelConfig forward{
      {config.getDegrees().begin(), config.getDegrees().end()},
      {config.getDevices().begin(), config.getDevices().end()}};
  ParallelConfig gradient;
  for (unsigned loop : forwardLoops)
    gradient.degrees.push_back(forward.degrees[loop]);
  // Each gradient task runs on the device of the forward task at the same
  // coordinates, reordered.
  std::vector<int64_t> coords(forward.degrees.size(), 0);
  for (int64_t task = 0; task < gradient.numTasks(); ++task) {
    std::vector<int64_t> mine = gradient.taskCoordinates(task);
    for (auto [l, loop] : llvm::enumerate(forwardLoops))
      coords[loop] = mine[l];
    gradient.devices.push_back(forward.devices[forward.taskIndex(coords)]);
  }
  return ConfigAttr::get(config.getContext(), gradient.degrees,
                         gradient.devices);
}

} // namespace soap::autodiff

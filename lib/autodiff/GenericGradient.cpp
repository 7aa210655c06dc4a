//===- GenericGradient.cpp - the gradient of a linalg.generic -------------===//
//
// For an input whose indexing map is a projected permutation, the gradient
// is a linalg.generic over the same iteration space that writes through
// that input's map (loops the map does not name become reductions): its
// body recomputes the forward body and multiplies the body's derivative
// with respect to the input's block argument by the output's adjoint.
// Reductions are recognized by their combiner: `out + v` passes the
// adjoint to `v`; `max(out, v)` / `min(out, v)` pass it to the elements
// equal to the result.
//
//===----------------------------------------------------------------------===//

#include "GradientBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"

using namespace mlir;

namespace soap::autodiff {

namespace {

/// How the body combines the output's previous value with a new one.
enum class Combiner { None, Add, Max, Min };

/// One generic's forward body and how its result is formed.
struct BodyShape {
  Combiner combiner = Combiner::None;
  /// The op that combines `out` with `seed` (reductions), else null.
  Operation *combinerOp = nullptr;
  /// The value whose adjoint is the output's (times a mask for min/max).
  Value seed;
  /// Whether the body reads the output's previous value elementwise.
  bool readsOutput = false;
  /// The op errors are reported on (the named op a generic came from).
  Operation *reportOn = nullptr;
};

} // namespace

/// Recognizes the body of a single-output generic.
static FailureOr<BodyShape> analyzeBody(linalg::GenericOp op,
                                        Operation *reportOn) {
  Block &body = op.getRegion().front();
  BlockArgument out = body.getArgument(op.getNumDpsInputs());
  Value yielded = body.getTerminator()->getOperand(0);
  BodyShape shape;
  shape.reportOn = reportOn;
  if (op.getNumReductionLoops() == 0) {
    shape.seed = yielded;
    shape.readsOutput = !out.use_empty();
    return shape;
  }
  Operation *combiner = yielded.getDefiningOp();
  if (combiner && combiner->getNumOperands() == 2 && out.hasOneUse() &&
      llvm::is_contained(combiner->getOperands(), Value(out))) {
    Value other = combiner->getOperand(0) == out ? combiner->getOperand(1)
                                                 : combiner->getOperand(0);
    if (isa<arith::AddFOp>(combiner))
      shape.combiner = Combiner::Add;
    else if (isa<arith::MaximumFOp, arith::MaxNumFOp>(combiner))
      shape.combiner = Combiner::Max;
    else if (isa<arith::MinimumFOp, arith::MinNumFOp>(combiner))
      shape.combiner = Combiner::Min;
    if (shape.combiner != Combiner::None && other != Value(out)) {
      shape.combinerOp = combiner;
      shape.seed = other;
      return shape;
    }
  }
  reportOn->emitOpError("cannot be differentiated: its reduction is not a sum, "
                 "maximum or minimum of the output and one value");
  return failure();
}

/// Checks that `map` reads each loop at most once and otherwise only
/// constant index 0 of unit dimensions; returns the loops it reads in
/// result order.
static FailureOr<SmallVector<unsigned>>
projectedLoops(AffineMap map, RankedTensorType type) {
  SmallVector<unsigned> loops;
  for (auto [index, expr] : llvm::enumerate(map.getResults())) {
    if (auto dim = dyn_cast<AffineDimExpr>(expr)) {
      if (llvm::is_contained(loops, dim.getPosition()))
        return failure();
      loops.push_back(dim.getPosition());
      continue;
    }
    auto constant = dyn_cast<AffineConstantExpr>(expr);
    if (!constant || constant.getValue() != 0 || type.getDimSize(index) != 1)
      return failure();
  }
  return loops;
}

/// The reassociation that expands a tensor holding the dimensions of
/// `map`'s loop results to the full operand (unit dimensions for the
/// constant results).
static SmallVector<ReassociationIndices> unitDimReassociation(AffineMap map) {
  SmallVector<ReassociationIndices> groups;
  ReassociationIndices pending; // unit dimensions before the first loop
  for (auto [index, expr] : llvm::enumerate(map.getResults())) {
    int64_t position = static_cast<int64_t>(index);
    if (isa<AffineDimExpr>(expr)) {
      groups.push_back(pending);
      groups.back().push_back(position);
      pending.clear();
    } else if (groups.empty()) {
      pending.push_back(position);
    } else {
      groups.back().push_back(position);
    }
  }
  return groups;
}

/// The gradient of `op` with respect to the body's block argument `target`,
/// which reads `operandValue` through `operandMap`.
static FailureOr<Value>
buildOperandGradient(GradientBuilder &g, linalg::GenericOp op,
                     const BodyShape &shape, Value adjoint, Value forward,
                     BlockArgument target, Value operandValue,
                     AffineMap operandMap, unsigned operandNumber) {
  OpBuilder &b = g.b;
  Location loc = op.getLoc();
  auto operandType = cast<RankedTensorType>(operandValue.getType());
  FailureOr<SmallVector<unsigned>> loops =
      projectedLoops(operandMap, operandType);
  if (failed(loops)) {
    std::string map;
    llvm::raw_string_ostream os(map);
    operandMap.print(os);
    return shape.reportOn->emitOpError("cannot be differentiated: operand ")
           << operandNumber << " is read through " << map
           << ", which is not a projection of the loops";
  }

  unsigned numLoops = op.getNumLoops();
  SmallVector<AffineExpr> gradientExprs;
  SmallVector<int64_t> gradientShape;
  for (auto [index, expr] : llvm::enumerate(operandMap.getResults())) {
    if (isa<AffineDimExpr>(expr)) {
      gradientExprs.push_back(expr);
      gradientShape.push_back(operandType.getDimSize(index));
    }
  }
  AffineMap gradientMap =
      AffineMap::get(numLoops, 0, gradientExprs, b.getContext());
  SmallVector<utils::IteratorType> iterators;
  for (unsigned loop = 0; loop < numLoops; ++loop)
    iterators.push_back(llvm::is_contained(*loops, loop)
                            ? utils::IteratorType::parallel
                            : utils::IteratorType::reduction);

  // Inputs: the forward inputs, the output's old value when the body reads
  // it, the adjoint, and the forward result for min/max.
  AffineMap outputMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  SmallVector<Value> inputs(op.getDpsInputs());
  SmallVector<AffineMap> maps;
  for (OpOperand *input : op.getDpsInputOperands())
    maps.push_back(op.getMatchingIndexingMap(input));
  if (shape.readsOutput) {
    inputs.push_back(op.getDpsInits()[0]);
    maps.push_back(outputMap);
  }
  inputs.push_back(adjoint);
  maps.push_back(outputMap);
  bool masked = shape.combiner == Combiner::Max ||
                shape.combiner == Combiner::Min;
  if (masked) {
    inputs.push_back(forward);
    maps.push_back(outputMap);
  }
  maps.push_back(gradientMap);
  auto gradientType =
      RankedTensorType::get(gradientShape, operandType.getElementType());
  Value init = g.zeros(loc, gradientType);

  Block &body = op.getRegion().front();
  unsigned numInputs = op.getNumDpsInputs();
  FailureOr<Value> failedOrOk = Value();
  auto gradient = linalg::GenericOp::create(
      b, loc, TypeRange{gradientType}, inputs, ValueRange{init}, maps,
      iterators, [&](OpBuilder &nb, Location l, ValueRange args) {
        IRMapping mapping;
        for (unsigned i = 0; i < numInputs; ++i)
          mapping.map(body.getArgument(i), args[i]);
        unsigned next = numInputs;
        if (shape.readsOutput)
          mapping.map(body.getArgument(numInputs), args[next++]);
        Value seedAdjoint = args[next++];
        for (Operation &bodyOp : body.without_terminator())
          if (&bodyOp != shape.combinerOp)
            nb.clone(bodyOp, mapping);
        if (masked) {
          Value result = args[next++];
          Value hit = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ,
                                            mapping.lookup(shape.seed), result);
          Value zero = arith::ConstantOp::create(
              nb, l, seedAdjoint.getType(),
              nb.getFloatAttr(seedAdjoint.getType(), 0.0));
          seedAdjoint = arith::SelectOp::create(nb, l, hit, seedAdjoint, zero);
        }
        Value accumulator = args[next];
        FailureOr<Value> contribution = scalarDerivative(
            nb, body, mapping, shape.seed, seedAdjoint, target);
        Value sum = accumulator;
        if (failed(contribution))
          failedOrOk = failure();
        else
          sum = arith::AddFOp::create(nb, l, accumulator, *contribution);
        linalg::YieldOp::create(nb, l, sum);
      });
  if (failed(failedOrOk)) {
    gradient->erase();
    return failure();
  }
  Value result = gradient.getResult(0);
  if (gradientType.getRank() != operandType.getRank())
    result = tensor::ExpandShapeOp::create(b, loc, operandType, result,
                                           unitDimReassociation(operandMap));
  return result;
}

LogicalResult differentiateGeneric(GradientBuilder &g, linalg::GenericOp op,
                                   ValueRange forwardResults,
                                   Operation *reportOn) {
  if (!reportOn)
    reportOn = op;
  if (op.getNumDpsInits() != 1)
    return reportOn->emitOpError("cannot be differentiated: it has ")
           << op.getNumDpsInits() << " outputs (only one is supported)";
  if (!op.hasPureTensorSemantics())
    return reportOn->emitOpError("cannot be differentiated: it works on buffers");
  llvm::SetVector<Value> captured;
  getUsedValuesDefinedAbove(op.getRegion(), captured);
  for (Value value : captured)
    if (g.isActive(value))
      return reportOn->emitOpError("cannot be differentiated: its body uses a "
                            "differentiated value defined outside it");
  FailureOr<BodyShape> shape = analyzeBody(op, reportOn);
  if (failed(shape))
    return failure();

  Value forward = forwardResults[0];
  Value adjoint = g.adjoint(forward);
  Block &body = op.getRegion().front();
  for (OpOperand *input : op.getDpsInputOperands()) {
    if (!g.isActive(input->get()))
      continue;
    unsigned number = input->getOperandNumber();
    FailureOr<Value> gradient = buildOperandGradient(
        g, op, *shape, adjoint, forward, body.getArgument(number),
        input->get(), op.getMatchingIndexingMap(input), number);
    if (failed(gradient))
      return failure();
    g.accumulate(op.getLoc(), input->get(), *gradient);
  }

  OpOperand *init = op.getDpsInitOperand(0);
  if (!g.isActive(init->get()))
    return success();
  switch (shape->combiner) {
  case Combiner::None: {
    if (!shape->readsOutput)
      return success(); // overwritten
    BlockArgument out = body.getArgument(op.getNumDpsInputs());
    FailureOr<Value> gradient = buildOperandGradient(
        g, op, *shape, adjoint, forward, out, init->get(),
        op.getMatchingIndexingMap(init), init->getOperandNumber());
    if (failed(gradient))
      return failure();
    g.accumulate(op.getLoc(), init->get(), *gradient);
    return success();
  }
  case Combiner::Add:
    g.accumulate(op.getLoc(), init->get(), adjoint);
    return success();
  case Combiner::Max:
  case Combiner::Min:
    return reportOn->emitOpError("cannot be differentiated: the initial value of "
                          "its min/max reduction depends on the parameters");
  }
  return success();
}

} // namespace soap::autodiff

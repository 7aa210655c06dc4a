//===- GenericGradient.cpp - the gradient of a linalg.generic -------------===//
//
// For an input whose indexing map is a projected permutation, the gradient
// is a linalg.generic over the same iteration space that writes through
// that input's map (loops the map does not name become reductions): its
// body recomputes the part of the forward body the output needs and
// multiplies the body's derivative with respect to the input's block
// argument by the output's adjoint. Each float output with an adjoint is
// handled on its own (a max + argmax reduction differentiates its max; the
// integer argmax has no adjoint). Reductions are recognized by how the
// output's old value enters the yielded value (GenericBody.h). Inputs read
// through convolution windows and tensors read with `tensor.extract` have
// rules of their own (WindowGradient.cpp, GatherGradient.cpp).
//
//===----------------------------------------------------------------------===//

#include "GenericBody.h"
#include "soap/Dialect/IdentityCopy.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace soap::autodiff {

//===----------------------------------------------------------------------===//
// Body analysis
//===----------------------------------------------------------------------===//

/// The values an op reads: its operands and what its regions capture.
static SmallVector<Value> bodyReads(Operation *op) {
  SmallVector<Value> read(op->getOperands());
  if (op->getNumRegions() != 0) {
    llvm::SetVector<Value> captured;
    getUsedValuesDefinedAbove(op->getRegions(), captured);
    read.append(captured.begin(), captured.end());
  }
  return read;
}

/// The values of `body` that depend on `source` (itself included).
static DenseSet<Value> dependentsOf(Block &body, Value source) {
  DenseSet<Value> dependent{source};
  for (Operation &op : body.without_terminator())
    if (llvm::any_of(bodyReads(&op),
                     [&](Value v) { return dependent.contains(v); }))
      for (Value r : op.getResults())
        dependent.insert(r);
  return dependent;
}

/// The ops of `body` that `roots` depend on.
static DenseSet<Operation *> backwardSlice(Block &body, ArrayRef<Value> roots) {
  DenseSet<Operation *> slice;
  SmallVector<Value> worklist(roots);
  while (!worklist.empty()) {
    Operation *def = worklist.pop_back_val().getDefiningOp();
    if (!def || def->getBlock() != &body || !slice.insert(def).second)
      continue;
    llvm::append_range(worklist, bodyReads(def));
  }
  return slice;
}

/// Matches `select(cmpf(p, a, b), a, b)` (or with the branches swapped):
/// the larger or smaller of `a` and `b`.
static std::optional<Combiner> selectCombiner(Operation *op) {
  auto select = dyn_cast_or_null<arith::SelectOp>(op);
  if (!select)
    return std::nullopt;
  auto cmp = select.getCondition().getDefiningOp<arith::CmpFOp>();
  if (!cmp)
    return std::nullopt;
  bool greater;
  switch (cmp.getPredicate()) {
  case arith::CmpFPredicate::OGT:
  case arith::CmpFPredicate::OGE:
  case arith::CmpFPredicate::UGT:
  case arith::CmpFPredicate::UGE:
    greater = true;
    break;
  case arith::CmpFPredicate::OLT:
  case arith::CmpFPredicate::OLE:
  case arith::CmpFPredicate::ULT:
  case arith::CmpFPredicate::ULE:
    greater = false;
    break;
  default:
    return std::nullopt;
  }
  Value lhs = cmp.getLhs(), rhs = cmp.getRhs();
  if (select.getTrueValue() == lhs && select.getFalseValue() == rhs)
    return greater ? Combiner::Max : Combiner::Min;
  if (select.getTrueValue() == rhs && select.getFalseValue() == lhs)
    return greater ? Combiner::Min : Combiner::Max;
  return std::nullopt;
}

FailureOr<OutputForm> analyzeOutput(linalg::GenericOp op, unsigned output,
                                    Operation *reportOn) {
  Block &body = op.getRegion().front();
  unsigned numInputs = op.getNumDpsInputs();
  BlockArgument out = body.getArgument(numInputs + output);
  Value yielded = body.getTerminator()->getOperand(output);
  OutputForm form;
  form.output = output;
  form.reportOn = reportOn;

  // The output's value may read no other output's running value.
  DenseSet<Operation *> slice = backwardSlice(body, {yielded});
  for (unsigned other = 0; other < op.getNumDpsInits(); ++other) {
    if (other == output)
      continue;
    BlockArgument otherOut = body.getArgument(numInputs + other);
    if (otherOut == yielded ||
        llvm::any_of(otherOut.getUsers(),
                     [&](Operation *user) { return slice.contains(user); }))
      return reportOn->emitOpError("cannot be differentiated: its output ")
             << output << " reads the running value of its output " << other;
  }

  DenseSet<Value> fromOut = dependentsOf(body, out);
  if (op.getNumReductionLoops() == 0) {
    form.seed = yielded;
    form.readsOutput = fromOut.contains(yielded);
    return form;
  }
  auto fail = [&]() {
    return reportOn->emitOpError(
        "cannot be differentiated: its reduction is not a sum, product, "
        "maximum or minimum of the output and a value that does not depend "
        "on it");
  };
  if (!fromOut.contains(yielded) || yielded == Value(out))
    return fail();

  // out (op) h, with h independent of out.
  Operation *combiner = yielded.getDefiningOp();
  if (combiner && combiner->getNumOperands() == 2 &&
      llvm::is_contained(combiner->getOperands(), Value(out))) {
    Value other = combiner->getOperand(0) == out ? combiner->getOperand(1)
                                                 : combiner->getOperand(0);
    std::optional<Combiner> kind;
    if (isa<arith::MaximumFOp, arith::MaxNumFOp>(combiner))
      kind = Combiner::Max;
    else if (isa<arith::MinimumFOp, arith::MinNumFOp>(combiner))
      kind = Combiner::Min;
    else if (isa<arith::MulFOp>(combiner))
      kind = Combiner::Mul;
    if (kind && !fromOut.contains(other)) {
      form.combiner = *kind;
      form.seed = other;
      return form;
    }
  }
  if (std::optional<Combiner> kind = selectCombiner(combiner)) {
    auto select = cast<arith::SelectOp>(combiner);
    Value a = select.getTrueValue(), b = select.getFalseValue();
    Value other = a == Value(out) ? b : a;
    if ((a == Value(out) || b == Value(out)) && !fromOut.contains(other)) {
      form.combiner = *kind;
      form.seed = other;
      return form;
    }
  }
  // A chain of additions and subtractions in which out is a summand with
  // coefficient one: `out + h`, `h + out`, `out - h`, `(out + a) - b`, ...
  for (Value v = yielded; v != Value(out);) {
    Operation *def = v.getDefiningOp();
    if (!def || def->getBlock() != &body)
      return fail();
    if (isa<arith::AddFOp>(def)) {
      bool lhs = fromOut.contains(def->getOperand(0));
      bool rhs = fromOut.contains(def->getOperand(1));
      if (lhs == rhs)
        return fail();
      v = def->getOperand(lhs ? 0 : 1);
    } else if (isa<arith::SubFOp>(def)) {
      if (!fromOut.contains(def->getOperand(0)) ||
          fromOut.contains(def->getOperand(1)))
        return fail();
      v = def->getOperand(0);
    } else {
      return fail();
    }
  }
  form.combiner = Combiner::Add;
  form.seed = yielded;
  return form;
}

//===----------------------------------------------------------------------===//
// One iteration point's contribution
//===----------------------------------------------------------------------===//

FailureOr<Value> emitContribution(OpBuilder &b, Location loc,
                                  linalg::GenericOp op, const OutputForm &form,
                                  IRMapping &mapping, Value adjoint,
                                  Value forward, Value target,
                                  IndexBuilder index) {
  Block &body = op.getRegion().front();
  BlockArgument out = body.getArgument(op.getNumDpsInputs() + form.output);
  // A sum is recomputed with the output's old value taken as zero: its
  // derivative does not depend on it.
  if (!mapping.contains(out))
    mapping.map(out, arith::ConstantOp::create(
                         b, loc, out.getType(),
                         b.getZeroAttr(out.getType())));
  DenseSet<Operation *> slice = backwardSlice(body, {form.seed});
  for (Operation &bodyOp : body.without_terminator()) {
    if (!slice.contains(&bodyOp))
      continue;
    if (auto indexOp = dyn_cast<linalg::IndexOp>(bodyOp)) {
      Value value = index(b, loc, indexOp.getDim());
      if (!value)
        return form.reportOn->emitOpError(
                   "cannot be differentiated: its body reads the index of "
                   "loop ")
               << indexOp.getDim()
               << ", which its gradient does not iterate over";
      mapping.map(indexOp.getResult(), value);
      continue;
    }
    b.clone(bodyOp, mapping);
  }
  Value seedAdjoint = adjoint;
  Value seed = mapping.lookupOrDefault(form.seed);
  switch (form.combiner) {
  case Combiner::Max:
  case Combiner::Min: {
    // The adjoint goes to the elements equal to the result.
    Value hit = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, seed,
                                      forward);
    Value zero = arith::ConstantOp::create(b, loc, adjoint.getType(),
                                           b.getZeroAttr(adjoint.getType()));
    seedAdjoint = arith::SelectOp::create(b, loc, hit, adjoint, zero);
    break;
  }
  case Combiner::Mul: {
    // d(init * prod h)/dh_i = result / h_i.
    Value ratio = arith::DivFOp::create(b, loc, forward, seed);
    seedAdjoint = arith::MulFOp::create(b, loc, adjoint, ratio);
    break;
  }
  case Combiner::None:
  case Combiner::Add:
    break;
  }
  return scalarDerivative(b, body, mapping, form.seed, seedAdjoint, target);
}

void yieldAccumulated(OpBuilder &b, Location loc, Value accumulator,
                      FailureOr<Value> contribution, LogicalResult &status) {
  Value sum = accumulator;
  if (failed(contribution))
    status = failure();
  else
    sum = arith::AddFOp::create(b, loc, accumulator, *contribution);
  linalg::YieldOp::create(b, loc, sum);
}

FailureOr<Value> finishGradient(OpBuilder &b, linalg::GenericOp gradient,
                                LogicalResult status,
                                RankedTensorType operandType, AffineMap map) {
  if (failed(status)) {
    gradient->erase();
    return failure();
  }
  Value result = gradient.getResult(0);
  if (cast<RankedTensorType>(result.getType()).getRank() !=
      operandType.getRank())
    result = tensor::ExpandShapeOp::create(b, gradient.getLoc(), operandType,
                                           result, unitDimReassociation(map));
  return result;
}

//===----------------------------------------------------------------------===//
// Plain operands
//===----------------------------------------------------------------------===//

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

RankedTensorType projectedGradientType(AffineMap map, RankedTensorType type,
                                       AffineMap &gradientMap) {
  SmallVector<AffineExpr> exprs;
  SmallVector<int64_t> shape;
  for (auto [index, expr] : llvm::enumerate(map.getResults())) {
    if (isa<AffineDimExpr>(expr)) {
      exprs.push_back(expr);
      shape.push_back(type.getDimSize(index));
    }
  }
  gradientMap = AffineMap::get(map.getNumDims(), 0, exprs, map.getContext());
  return RankedTensorType::get(shape, type.getElementType());
}

SmallVector<ReassociationIndices> unitDimReassociation(AffineMap map) {
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

/// The gradient of output `form.output` of `op` with respect to the body's
/// block argument of `operand`, read through a projection.
static FailureOr<Value> buildOperandGradient(GradientBuilder &g,
                                             linalg::GenericOp op,
                                             const OutputForm &form,
                                             Value adjoint, Value forward,
                                             OpOperand &operand) {
  OpBuilder &b = g.b;
  Location loc = op.getLoc();
  AffineMap operandMap = op.getMatchingIndexingMap(&operand);
  auto operandType = cast<RankedTensorType>(operand.get().getType());
  FailureOr<SmallVector<unsigned>> loops =
      projectedLoops(operandMap, operandType);
  if (failed(loops))
    return buildWindowGradient(g, op, form, adjoint, forward, operand);

  unsigned numLoops = op.getNumLoops();
  AffineMap gradientMap;
  RankedTensorType gradientType =
      projectedGradientType(operandMap, operandType, gradientMap);
  SmallVector<utils::IteratorType> iterators;
  for (unsigned loop = 0; loop < numLoops; ++loop)
    iterators.push_back(llvm::is_contained(*loops, loop)
                            ? utils::IteratorType::parallel
                            : utils::IteratorType::reduction);

  // Inputs: the forward inputs, the output's old value when the body reads
  // it, the adjoint, and the forward result for min/max/products.
  OpOperand *init = op.getDpsInitOperand(form.output);
  AffineMap outputMap = op.getMatchingIndexingMap(init);
  SmallVector<Value> inputs(op.getDpsInputs());
  SmallVector<AffineMap> maps;
  for (OpOperand *input : op.getDpsInputOperands())
    maps.push_back(op.getMatchingIndexingMap(input));
  if (form.readsOutput) {
    inputs.push_back(init->get());
    maps.push_back(outputMap);
  }
  inputs.push_back(adjoint);
  maps.push_back(outputMap);
  bool readsForward = form.combiner == Combiner::Max ||
                      form.combiner == Combiner::Min ||
                      form.combiner == Combiner::Mul;
  if (readsForward) {
    inputs.push_back(forward);
    maps.push_back(outputMap);
  }
  maps.push_back(gradientMap);
  Value zeros = g.zeros(loc, gradientType);

  Block &body = op.getRegion().front();
  unsigned numInputs = op.getNumDpsInputs();
  BlockArgument target = body.getArgument(operand.getOperandNumber());
  LogicalResult status = success();
  auto gradient = linalg::GenericOp::create(
      b, loc, TypeRange{gradientType}, inputs, ValueRange{zeros}, maps,
      iterators, [&](OpBuilder &nb, Location l, ValueRange args) {
        IRMapping mapping;
        for (unsigned i = 0; i < numInputs; ++i)
          mapping.map(body.getArgument(i), args[i]);
        unsigned next = numInputs;
        if (form.readsOutput)
          mapping.map(body.getArgument(numInputs + form.output), args[next++]);
        Value seedAdjoint = args[next++];
        Value result = readsForward ? args[next++] : Value();
        FailureOr<Value> contribution = emitContribution(
            nb, l, op, form, mapping, seedAdjoint, result, target,
            [](OpBuilder &ib, Location il, unsigned dim) -> Value {
              return linalg::IndexOp::create(ib, il, dim);
            });
        yieldAccumulated(nb, l, args[next], contribution, status);
      });
  // Loop l of the gradient is loop l of the forward op: the forward op's
  // tasks, split alike, compute the parts of the gradient that their parts
  // of the forward op contribute (partial sums over the loops the operand
  // does not index).
  if (g.forwardConfig)
    gradient->setAttr(SoapDialect::getConfigAttrName(), g.forwardConfig);
  return finishGradient(b, gradient, status, operandType, operandMap);
}

//===----------------------------------------------------------------------===//
// The rule
//===----------------------------------------------------------------------===//

/// Differentiates output `output` of `op`, whose adjoint is `adjoint`.
static LogicalResult differentiateOutput(GradientBuilder &g,
                                         linalg::GenericOp op,
                                         unsigned output, Value adjoint,
                                         Value forward, Operation *reportOn) {
  FailureOr<OutputForm> form = analyzeOutput(op, output, reportOn);
  if (failed(form))
    return failure();
  if (failed(differentiateGathers(g, op, *form, adjoint, forward)))
    return failure();
  for (OpOperand *input : op.getDpsInputOperands()) {
    // An input the body never reads (a count of elements reads its input
    // for the shape alone) has a zero gradient: nothing is added, so no
    // zeros are built, added and moved between devices.
    if (!g.isActive(input->get()) ||
        op.getMatchingBlockArgument(input).use_empty())
      continue;
    FailureOr<Value> gradient =
        buildOperandGradient(g, op, *form, adjoint, forward, *input);
    if (failed(gradient))
      return failure();
    g.accumulate(op.getLoc(), input->get(), *gradient);
  }

  OpOperand *init = op.getDpsInitOperand(output);
  if (!g.isActive(init->get()))
    return success();
  switch (form->combiner) {
  case Combiner::None: {
    if (!form->readsOutput)
      return success(); // overwritten
    FailureOr<Value> gradient =
        buildOperandGradient(g, op, *form, adjoint, forward, *init);
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
  case Combiner::Mul:
    return reportOn->emitOpError(
        "cannot be differentiated: the initial value of its min/max/product "
        "reduction depends on the parameters");
  }
  return success();
}

LogicalResult differentiateGeneric(GradientBuilder &g, linalg::GenericOp op,
                                   ValueRange forwardResults,
                                   Operation *reportOn) {
  if (!reportOn)
    reportOn = op;
  if (!op.hasPureTensorSemantics())
    return reportOn->emitOpError("cannot be differentiated: it works on buffers");
  // A copy that canonicalization erases passes its gradient through, as
  // its readers will read its source.
  if (SmallVector<Value> sources = identityCopySources(op); !sources.empty()) {
    for (auto [source, forward] : llvm::zip(sources, forwardResults))
      if (Value adjoint = g.adjoint(forward))
        g.accumulate(op.getLoc(), source, adjoint);
    return success();
  }
  for (auto [output, forward] : llvm::enumerate(forwardResults)) {
    Value adjoint = g.adjoint(forward);
    if (!adjoint)
      continue;
    if (failed(differentiateOutput(g, op, output, adjoint, forward, reportOn)))
      return failure();
  }
  return success();
}

} // namespace soap::autodiff

//===- BatchNorm.cpp - normalizations exported in evaluation form ---------===//
//
// Recognition follows the body's dataflow (see BatchNorm.h); the rewrites
// only replace the generic's statistics operands, so its body, and whatever
// gamma and beta it applies, stay as exported.
//
//===----------------------------------------------------------------------===//

#include "soap/Import/BatchNorm.h"

#include "ImportSupport.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;

namespace soap {

namespace {

/// Reads the body of one elementwise generic.
class BodyReader {
public:
  explicit BodyReader(linalg::GenericOp op)
      : op(op), body(op.getRegion().front()) {}

  /// The input number `value` is the block argument of, if it is one.
  std::optional<unsigned> inputOf(Value value) const {
    auto argument = dyn_cast<BlockArgument>(value);
    if (!argument || argument.getOwner() != &body ||
        argument.getArgNumber() >= op.getNumDpsInputs())
      return std::nullopt;
    return argument.getArgNumber();
  }

  /// True when `value` is the same at every point of the iteration space:
  /// defined outside the body, or computed in it from such values only (an
  /// epsilon, possibly converted inside the body).
  bool isInvariant(Value value, unsigned depth = 0) const {
    if (value.getParentRegion() != &op.getRegion())
      return true;
    Operation *def = value.getDefiningOp();
    if (!def || depth > 8 || def->getNumRegions() != 0)
      return false;
    return llvm::all_of(def->getOperands(), [&](Value operand) {
      return isInvariant(operand, depth + 1);
    });
  }

  /// The variance input of `radicand` when it is `v + eps` (either order)
  /// with `v` an input and `eps` invariant.
  std::optional<unsigned> varianceIn(Value radicand) const {
    auto add = radicand.getDefiningOp<arith::AddFOp>();
    if (!add)
      return std::nullopt;
    for (auto [v, eps] : {std::pair(add.getLhs(), add.getRhs()),
                          std::pair(add.getRhs(), add.getLhs())})
      if (std::optional<unsigned> input = inputOf(v))
        if (isInvariant(eps))
          return input;
    return std::nullopt;
  }

  /// The leaves of the product tree rooted at `value` (through arith.mulf).
  void factors(Value value, SmallVectorImpl<Value> &leaves,
               unsigned depth = 0) const {
    auto mul = value.getDefiningOp<arith::MulFOp>();
    if (!mul || depth > 8 || mul->getParentRegion() != &op.getRegion()) {
      leaves.push_back(value);
      return;
    }
    factors(mul.getLhs(), leaves, depth + 1);
    factors(mul.getRhs(), leaves, depth + 1);
  }

  /// The first `x - m` among `leaves` with `x` and `m` distinct inputs.
  arith::SubFOp centeredTerm(ArrayRef<Value> leaves) const {
    for (Value leaf : leaves)
      if (auto sub = leaf.getDefiningOp<arith::SubFOp>()) {
        std::optional<unsigned> x = inputOf(sub.getLhs());
        std::optional<unsigned> m = inputOf(sub.getRhs());
        if (x && m && *x != *m)
          return sub;
      }
    return {};
  }

  mutable linalg::GenericOp op;
  Block &body;
};

/// Whether `statistic` can be a running statistic: a constant, or an
/// argument of the function. Statistics the function computes (layer norm,
/// a batch norm exported in training form) already are the batch's.
bool isRunningStatistic(Value statistic) {
  if (statistic.getDefiningOp<arith::ConstantOp>())
    return true;
  auto argument = dyn_cast<BlockArgument>(statistic);
  return argument &&
         isa<FunctionOpInterface>(argument.getOwner()->getParentOp());
}

/// The loops `map` reads, result by result (nullopt for a constant 0 index
/// of a unit dimension); failure for anything else or a loop read twice.
FailureOr<SmallVector<std::optional<unsigned>>>
projectedLoops(AffineMap map, RankedTensorType type) {
  SmallVector<std::optional<unsigned>> loops;
  for (auto [index, expr] : llvm::enumerate(map.getResults())) {
    if (auto dim = dyn_cast<AffineDimExpr>(expr)) {
      if (llvm::is_contained(loops, std::optional(dim.getPosition())))
        return failure();
      loops.push_back(dim.getPosition());
      continue;
    }
    auto constant = dyn_cast<AffineConstantExpr>(expr);
    if (!constant || constant.getValue() != 0 || type.getDimSize(index) != 1)
      return failure();
    loops.push_back(std::nullopt);
  }
  return loops;
}

/// Makes input `input` of `op` read by `user` alone: when its block argument
/// has other uses (an exporter's or canonicalizer's deduplicated operands:
/// the same constant as mean and beta), `op` is rebuilt with one more input,
/// the same value through the same map, whose block argument `user` reads
/// instead. Returns the input number `user` reads.
unsigned separateInput(linalg::GenericOp &op, Operation *user,
                       unsigned input) {
  Block &body = op.getRegion().front();
  BlockArgument argument = body.getArgument(input);
  if (llvm::all_of(argument.getUsers(),
                   [&](Operation *other) { return other == user; }))
    return input;
  unsigned numInputs = op.getNumDpsInputs();
  SmallVector<Value> inputs(op.getDpsInputs());
  inputs.push_back(inputs[input]);
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  maps.insert(maps.begin() + numInputs, maps[input]);
  OpBuilder builder(op);
  auto rebuilt = linalg::GenericOp::create(
      builder, op.getLoc(), op.getResultTypes(), inputs, op.getDpsInits(),
      maps, op.getIteratorTypesArray());
  rebuilt->setDiscardableAttrs(op->getDiscardableAttrDictionary());
  rebuilt.getRegion().takeBody(op.getRegion());
  BlockArgument separate = rebuilt.getRegion().front().insertArgument(
      numInputs, argument.getType(), argument.getLoc());
  for (OpOperand &operand : user->getOpOperands())
    if (operand.get() == argument)
      operand.set(separate);
  op->replaceAllUsesWith(rebuilt->getResults());
  op->erase();
  op = rebuilt;
  return numInputs;
}

/// Gives the mean and the variance their own inputs (see separateInput).
void separateStatistics(EvalNormalization &norm) {
  norm.mean = separateInput(norm.op, norm.meanUser, norm.mean);
  norm.variance = separateInput(norm.op, norm.varianceUser, norm.variance);
}

} // namespace

std::optional<EvalNormalization>
matchEvalNormalization(linalg::GenericOp op) {
  if (op.getNumDpsInits() != 1 || op.getNumReductionLoops() != 0 ||
      !op.hasPureTensorSemantics())
    return std::nullopt;
  BodyReader reader(op);
  for (Operation &bodyOp : reader.body.without_terminator()) {
    // The inverse standard deviation: rsqrt(v + eps), 1 / sqrt(v + eps),
    // or a division by sqrt(v + eps) of the term it scales.
    std::optional<unsigned> variance;
    Value radicand; // v + eps
    Value inverse;
    SmallVector<Value> scaled; // products that the inverse scales
    if (auto rsqrt = dyn_cast<math::RsqrtOp>(bodyOp)) {
      radicand = rsqrt.getOperand();
      variance = reader.varianceIn(radicand);
      inverse = rsqrt.getResult();
    } else if (auto sqrt = dyn_cast<math::SqrtOp>(bodyOp)) {
      radicand = sqrt.getOperand();
      variance = reader.varianceIn(radicand);
      for (Operation *user : sqrt->getUsers()) {
        auto div = dyn_cast<arith::DivFOp>(user);
        if (!div || div.getRhs() != sqrt.getResult())
          continue;
        if (matchPattern(div.getLhs(), m_OneFloat()))
          inverse = div.getResult();
        else
          scaled.push_back(div.getLhs());
      }
    }
    if (!variance)
      continue;
    if (inverse)
      for (Operation &other : reader.body.without_terminator())
        if (auto mul = dyn_cast<arith::MulFOp>(other)) {
          SmallVector<Value> leaves;
          reader.factors(mul.getResult(), leaves);
          if (llvm::is_contained(leaves, inverse))
            scaled.push_back(mul.getResult());
        }
    for (Value product : scaled) {
      SmallVector<Value> leaves;
      reader.factors(product, leaves);
      arith::SubFOp centered = reader.centeredTerm(leaves);
      if (!centered)
        continue;
      EvalNormalization norm;
      norm.op = op;
      norm.activation = *reader.inputOf(centered.getLhs());
      norm.mean = *reader.inputOf(centered.getRhs());
      norm.variance = *variance;
      norm.meanUser = centered;
      norm.varianceUser = radicand.getDefiningOp();
      if (norm.activation == norm.variance)
        continue;
      // The statistics are per channel: one type and map, naming a proper
      // subset of the loops the activation names.
      OpOperand *x = op.getDpsInputOperand(norm.activation);
      OpOperand *mean = op.getDpsInputOperand(norm.mean);
      OpOperand *var = op.getDpsInputOperand(norm.variance);
      auto xType = dyn_cast<RankedTensorType>(x->get().getType());
      auto statType = dyn_cast<RankedTensorType>(mean->get().getType());
      if (!xType || !statType || var->get().getType() != statType ||
          !xType.hasStaticShape() || !statType.hasStaticShape() ||
          !isRunningStatistic(mean->get()) || !isRunningStatistic(var->get()) ||
          xType.getElementType() != statType.getElementType() ||
          op.getMatchingIndexingMap(mean) != op.getMatchingIndexingMap(var))
        continue;
      auto xLoops = projectedLoops(op.getMatchingIndexingMap(x), xType);
      auto statLoops = projectedLoops(op.getMatchingIndexingMap(mean), statType);
      if (failed(xLoops) || failed(statLoops))
        continue;
      unsigned channels = 0, reduced = 0;
      bool named = true;
      for (std::optional<unsigned> loop : *statLoops)
        if (loop) {
          named &= llvm::is_contained(*xLoops, loop);
          ++channels;
        }
      for (std::optional<unsigned> loop : *xLoops)
        if (loop && !llvm::is_contained(*statLoops, loop))
          ++reduced;
      if (!named || reduced == 0)
        continue;
      return norm;
    }
  }
  return std::nullopt;
}

LogicalResult useBatchStatistics(EvalNormalization &norm) {
  separateStatistics(norm);
  linalg::GenericOp op = norm.op;
  Location loc = op.getLoc();
  MLIRContext *context = op.getContext();
  OpOperand *x = op.getDpsInputOperand(norm.activation);
  Value activation = x->get();
  auto xType = cast<RankedTensorType>(activation.getType());
  auto statType =
      cast<RankedTensorType>(op.getDpsInputOperand(norm.mean)->get().getType());
  Type element = statType.getElementType();
  auto xLoops = projectedLoops(op.getMatchingIndexingMap(x), xType);
  auto statLoops = projectedLoops(
      op.getMatchingIndexingMap(op.getDpsInputOperand(norm.mean)), statType);
  if (failed(xLoops) || failed(statLoops))
    return op.emitError("soap-lift-params: batch norm's statistics are not "
                        "read through projections of the loops");

  // Over the activation's dimensions: the statistics keep the dimensions
  // that hold their loops (the channels) and reduce the others.
  unsigned rank = xType.getRank();
  SmallVector<AffineExpr> statExprs;
  SmallVector<bool> kept(rank, false);
  for (std::optional<unsigned> loop : *statLoops) {
    if (!loop) {
      statExprs.push_back(getAffineConstantExpr(0, context));
      continue;
    }
    unsigned dim = llvm::find(*xLoops, loop) - xLoops->begin();
    if (dim == rank)
      return op.emitError("soap-lift-params: batch norm's statistics read a "
                          "loop its activation does not");
    kept[dim] = true;
    statExprs.push_back(getAffineDimExpr(dim, context));
  }
  AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, context);
  AffineMap toStat = AffineMap::get(rank, 0, statExprs, context);
  AffineMap statIdentity =
      AffineMap::getMultiDimIdentityMap(statType.getRank(), context);
  SmallVector<utils::IteratorType> reduction;
  for (bool keep : kept)
    reduction.push_back(keep ? utils::IteratorType::parallel
                             : utils::IteratorType::reduction);
  SmallVector<utils::IteratorType> elementwise(statType.getRank(),
                                               utils::IteratorType::parallel);

  OpBuilder builder(op);
  auto filled = [&](RankedTensorType type, double value) {
    Value empty = tensor::EmptyOp::create(builder, loc, type.getShape(),
                                          type.getElementType());
    Value scalar = arith::ConstantOp::create(
        builder, loc, builder.getFloatAttr(type.getElementType(), value));
    return linalg::FillOp::create(builder, loc, scalar, empty)->getResult(0);
  };
  auto reduce = [&](RankedTensorType resultType, ValueRange inputs,
                    ArrayRef<AffineMap> maps,
                    ArrayRef<utils::IteratorType> iterators,
                    function_ref<Value(OpBuilder &, Location, ValueRange)>
                        term) {
    return linalg::GenericOp::create(
               builder, loc, TypeRange{resultType}, inputs,
               ValueRange{filled(resultType, 0.0)}, maps, iterators,
               [&](OpBuilder &b, Location l, ValueRange args) {
                 Value sum =
                     arith::AddFOp::create(b, l, term(b, l, args), args.back());
                 linalg::YieldOp::create(b, l, sum);
               })
        ->getResult(0);
  };
  auto perChannel = [&](ValueRange inputs, ArrayRef<AffineMap> inputMaps,
                        function_ref<Value(OpBuilder &, Location, ValueRange)>
                            term) {
    SmallVector<AffineMap> maps(inputMaps);
    maps.push_back(toStat);
    return reduce(statType, inputs, maps, reduction, term);
  };
  auto divide = [&](Value numerator, Value count) {
    Value empty = tensor::EmptyOp::create(builder, loc, statType.getShape(),
                                          element);
    return linalg::GenericOp::create(
               builder, loc, TypeRange{statType},
               ValueRange{numerator, count}, ValueRange{empty},
               ArrayRef<AffineMap>{statIdentity, statIdentity, statIdentity},
               elementwise,
               [&](OpBuilder &b, Location l, ValueRange args) {
                 linalg::YieldOp::create(
                     b, l, arith::DivFOp::create(b, l, args[0], args[1])
                               .getResult());
               })
        ->getResult(0);
  };
  auto first = [](OpBuilder &, Location, ValueRange args) { return args[0]; };

  // The count is a sum of ones over the activation itself rather than a
  // number, so that it follows --soap-set-batch and a split batch: its loops
  // are the activation's, a batch loop among them, and a partitioned batch
  // leaves partial counts that are all-reduced like the partial sums. (A
  // count read from a tensor of ones of its own would be a constant to
  // --soap-set-batch, which keeps size-1 constants at size 1.)
  Value sum = perChannel({activation}, {identity}, first);
  Value count = perChannel({activation}, {identity},
                           [](OpBuilder &b, Location l, ValueRange args) {
                             return arith::ConstantOp::create(
                                        b, l,
                                        b.getFloatAttr(args[0].getType(), 1.0))
                                 .getResult();
                           });
  Value mean = divide(sum, count);
  Value squares = perChannel({activation, mean}, {identity, toStat},
                             [](OpBuilder &b, Location l, ValueRange args) {
                               Value d = arith::SubFOp::create(b, l, args[0],
                                                               args[1]);
                               return arith::MulFOp::create(b, l, d, d)
                                   .getResult();
                             });
  Value variance = divide(squares, count); // biased, as batch norm normalizes
  Value oldMean = op.getDpsInputOperand(norm.mean)->get();
  Value oldVariance = op.getDpsInputOperand(norm.variance)->get();
  op->setOperand(norm.mean, mean);
  op->setOperand(norm.variance, variance);
  SmallVector<Value, 2> replaced{oldMean};
  if (oldVariance != oldMean)
    replaced.push_back(oldVariance);
  for (Value old : replaced)
    if (Operation *def = old.getDefiningOp<arith::ConstantOp>())
      if (def->use_empty())
        def->erase();
  return success();
}

void freezeStatistics(EvalNormalization &norm,
                      llvm::SmallPtrSetImpl<Operation *> &frozen) {
  separateStatistics(norm);
  OpBuilder builder(norm.op);
  for (auto [input, neutral] :
       {std::pair(norm.mean, 0.0), std::pair(norm.variance, 1.0)}) {
    Value statistic = norm.op.getDpsInputOperand(input)->get();
    auto constant = statistic.getDefiningOp<arith::ConstantOp>();
    if (!constant)
      continue;
    auto type = cast<RankedTensorType>(constant.getType());
    TypedAttr value = constant.getValue();
    if (isElided(value)) {
      Attribute element = builder.getFloatAttr(type.getElementType(), neutral);
      value = cast<TypedAttr>(DenseElementsAttr::get(type, element));
    }
    auto own = arith::ConstantOp::create(builder, constant.getLoc(), value);
    norm.op->setOperand(input, own.getResult());
    frozen.insert(own);
    if (constant->use_empty())
      constant->erase();
  }
}

} // namespace soap

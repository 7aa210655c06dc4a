//===- GatherGradient.cpp - gradients of tensors read by tensor.extract ---===//
//
// torch-mlir and IREE write an embedding lookup as a generic whose body
// reads a table with `tensor.extract` at indices computed from its inputs
// (`table[ids[b, s], h]`). The table's gradient is a scatter-add: every
// iteration point adds its contribution to the element it read. It is
// emitted as a loop nest over the generic's iteration space that carries
// the gradient (`scf.for` with the gradient as iteration argument; each
// point reads the operands it needs with `tensor.extract`, recomputes the
// indices, and updates one element with `tensor.insert`), so its cost is
// that of the lookup, and no one-hot tensor exists anywhere.
//
//===----------------------------------------------------------------------===//

#include "GenericBody.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace soap::autodiff {

/// `expr` evaluated at the loop indices `ivs` with arith ops on `index`.
static Value evaluate(OpBuilder &b, Location loc, AffineExpr expr,
                      ValueRange ivs) {
  if (auto dim = dyn_cast<AffineDimExpr>(expr))
    return ivs[dim.getPosition()];
  if (auto constant = dyn_cast<AffineConstantExpr>(expr))
    return arith::ConstantIndexOp::create(b, loc, constant.getValue());
  auto binary = cast<AffineBinaryOpExpr>(expr);
  Value lhs = evaluate(b, loc, binary.getLHS(), ivs);
  Value rhs = evaluate(b, loc, binary.getRHS(), ivs);
  switch (expr.getKind()) {
  case AffineExprKind::Add:
    return arith::AddIOp::create(b, loc, lhs, rhs);
  case AffineExprKind::Mul:
    return arith::MulIOp::create(b, loc, lhs, rhs);
  case AffineExprKind::Mod:
    return arith::RemSIOp::create(b, loc, lhs, rhs);
  case AffineExprKind::FloorDiv:
    return arith::FloorDivSIOp::create(b, loc, lhs, rhs);
  case AffineExprKind::CeilDiv:
    return arith::CeilDivSIOp::create(b, loc, lhs, rhs);
  default:
    llvm_unreachable("not a binary affine expression");
  }
}

/// The element of `tensor` that `map` reads at `ivs`.
static Value readAt(OpBuilder &b, Location loc, Value tensor, AffineMap map,
                    ValueRange ivs) {
  SmallVector<Value> indices;
  for (AffineExpr expr : map.getResults())
    indices.push_back(evaluate(b, loc, expr, ivs));
  return tensor::ExtractOp::create(b, loc, tensor, indices);
}

/// A loop nest over `ranges` carrying `init`; `body` gives the next value
/// at each point (null: it failed). Returns the loop nest's result. A range
/// of one has no loop (index 0), as canonicalization would inline it: the
/// nest's loops are the ranges of other sizes, in order.
static FailureOr<Value>
loopNest(OpBuilder &b, Location loc, ArrayRef<int64_t> ranges, Value init,
         function_ref<Value(OpBuilder &, Location, ValueRange, Value)> body) {
  SmallVector<Value> ivs;
  bool failedBody = false;
  std::function<Value(OpBuilder &, unsigned, Value)> build =
      [&](OpBuilder &nb, unsigned depth, Value carried) -> Value {
    if (depth == ranges.size()) {
      Value next = body(nb, loc, ivs, carried);
      if (!next) {
        failedBody = true;
        return carried;
      }
      return next;
    }
    if (ranges[depth] == 1) {
      ivs.push_back(arith::ConstantIndexOp::create(nb, loc, 0));
      Value next = build(nb, depth + 1, carried);
      ivs.pop_back();
      return next;
    }
    Value lower = arith::ConstantIndexOp::create(nb, loc, 0);
    Value upper = arith::ConstantIndexOp::create(nb, loc, ranges[depth]);
    Value step = arith::ConstantIndexOp::create(nb, loc, 1);
    auto loop = scf::ForOp::create(
        nb, loc, lower, upper, step, ValueRange{carried},
        [&](OpBuilder &lb, Location l, Value iv, ValueRange args) {
          ivs.push_back(iv);
          Value next = build(lb, depth + 1, args[0]);
          ivs.pop_back();
          scf::YieldOp::create(lb, l, next);
        });
    return loop.getResult(0);
  };
  Value result = build(b, 0, init);
  if (failedBody) {
    // Without loops, what the body built before it failed stays unused:
    // the differentiation fails with it.
    if (auto outer = result.getDefiningOp<scf::ForOp>())
      outer->erase();
    return failure();
  }
  return result;
}

LogicalResult differentiateGathers(GradientBuilder &g, linalg::GenericOp op,
                                   const OutputForm &form, Value adjoint,
                                   Value forward) {
  Block &body = op.getRegion().front();
  llvm::SetVector<Value> captured;
  getUsedValuesDefinedAbove(op.getRegion(), captured);
  SmallVector<Value> tables;
  for (Value value : captured) {
    if (!g.isActive(value))
      continue;
    for (Operation *user : value.getUsers()) {
      if (!op->isProperAncestor(user))
        continue;
      auto extract = dyn_cast<tensor::ExtractOp>(user);
      if (!extract || extract->getBlock() != &body ||
          extract.getTensor() != value)
        return form.reportOn->emitOpError(
                   "cannot be differentiated: its body uses a differentiated "
                   "value defined outside it in '")
               << user->getName() << "' (only tensor.extract of a tensor is "
               << "differentiated: a gather)";
    }
    tables.push_back(value);
  }
  if (tables.empty())
    return success();
  if (form.readsOutput)
    return form.reportOn->emitOpError(
        "cannot be differentiated: a gather that also reads its output's old "
        "value");

  OpBuilder &b = g.b;
  Location loc = op.getLoc();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  unsigned numInputs = op.getNumDpsInputs();
  AffineMap outputMap = maps[numInputs + form.output];
  bool readsForward = form.combiner == Combiner::Max ||
                      form.combiner == Combiner::Min ||
                      form.combiner == Combiner::Mul;
  for (Value table : tables) {
    auto tableType = cast<RankedTensorType>(table.getType());
    SmallVector<tensor::ExtractOp> reads;
    for (Operation &bodyOp : body.without_terminator())
      if (auto extract = dyn_cast<tensor::ExtractOp>(bodyOp))
        if (extract.getTensor() == table)
          reads.push_back(extract);
    FailureOr<Value> gradient = loopNest(
        b, loc, ranges, g.zeros(loc, tableType),
        [&](OpBuilder &nb, Location l, ValueRange ivs, Value sum) -> Value {
          Value pointAdjoint = readAt(nb, l, adjoint, outputMap, ivs);
          Value pointForward =
              readsForward ? readAt(nb, l, forward, outputMap, ivs) : Value();
          for (tensor::ExtractOp read : reads) {
            IRMapping mapping;
            for (unsigned i = 0; i < numInputs; ++i)
              if (!body.getArgument(i).use_empty())
                mapping.map(body.getArgument(i),
                            readAt(nb, l, op->getOperand(i), maps[i], ivs));
            FailureOr<Value> contribution = emitContribution(
                nb, l, op, form, mapping, pointAdjoint, pointForward,
                read.getResult(),
                [&](OpBuilder &, Location, unsigned dim) -> Value {
                  return ivs[dim];
                });
            if (failed(contribution))
              return {};
            SmallVector<Value> indices;
            for (Value index : read.getIndices())
              indices.push_back(mapping.lookupOrDefault(index));
            Value old = tensor::ExtractOp::create(nb, l, sum, indices);
            Value updated = arith::AddFOp::create(nb, l, old, *contribution);
            sum = tensor::InsertOp::create(nb, l, updated, sum, indices);
          }
          return sum;
        });
    if (failed(gradient))
      return failure();
    // The gather's config over the nest's loops (those of ranges other
    // than one, whose degrees are all there is to split), then its lookup
    // loops.
    if (auto nest = gradient->getDefiningOp<scf::ForOp>();
        nest && g.forwardConfig) {
      ArrayRef<int64_t> degrees = g.forwardConfig.getDegrees();
      SmallVector<int64_t> kept;
      for (auto [loop, degree] : llvm::enumerate(degrees))
        if (loop >= ranges.size() || ranges[loop] != 1)
          kept.push_back(degree);
      nest->setAttr(SoapDialect::getScatterConfigAttrName(),
                    ConfigAttr::get(g.forwardConfig.getContext(), kept,
                                    g.forwardConfig.getDevices()));
    }
    g.accumulate(loc, table, *gradient);
  }
  return success();
}

} // namespace soap::autodiff

//===- ScalarDerivative.cpp - reverse mode inside a linalg body -----------===//
//
// The derivative of a body's scalar result with respect to one block
// argument, emitted as scalar arith/math ops in the body of a gradient
// linalg.generic. The original body's ops are already cloned there
// (`mapping`), so partial derivatives can use forward values. An `scf.if`
// is differentiated structurally: the gradient has an `scf.if` on the same
// condition whose branches recompute their forward ops and sweep them in
// reverse, so the branch not taken contributes nothing (not even a NaN).
//
//===----------------------------------------------------------------------===//

#include "GradientBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;

namespace soap::autodiff {

namespace {

/// Scalar reverse mode over the ops of one body.
class ScalarSweep {
public:
  ScalarSweep(OpBuilder &b, IRMapping &mapping, Location loc)
      : b(b), mapping(mapping), loc(loc) {}

  /// Adds `adjoint` to the adjoint of the original value `value`.
  void add(Value value, Value adjoint) {
    if (!dependent.contains(value))
      return;
    Value &slot = adjoints[value];
    slot = slot ? arith::AddFOp::create(b, loc, slot, adjoint).getResult()
                : adjoint;
  }
  /// The clone of an original value in the new body.
  Value fwd(Value value) { return mapping.lookupOrDefault(value); }
  Value constant(Type type, double value) {
    return arith::ConstantOp::create(b, loc, type, b.getFloatAttr(type, value));
  }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
  Value neg(Value x) { return arith::NegFOp::create(b, loc, x); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
  Value cmp(arith::CmpFPredicate pred, Value x, Value y) {
    return arith::CmpFOp::create(b, loc, pred, x, y);
  }

  LogicalResult visit(Operation *op, Value g);
  /// Marks the float results of the ops of `block` that read a dependent
  /// value (operands or values their regions capture) as dependent.
  void markDependent(Block &block);
  /// Visits, in reverse, the ops of `block` from `last` backwards.
  LogicalResult sweep(Operation *last);
  LogicalResult visitIf(scf::IfOp op);

  OpBuilder &b;
  IRMapping &mapping;
  Location loc;
  DenseSet<Value> dependent;
  DenseMap<Value, Value> adjoints;
};

} // namespace

LogicalResult ScalarSweep::visit(Operation *op, Value g) {
  Type type = g.getType();
  auto operand = [&](unsigned i) { return op->getOperand(i); };
  auto result = [&]() { return fwd(op->getResult(0)); };
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](arith::AddFOp) {
        add(operand(0), g);
        add(operand(1), g);
        return success();
      })
      .Case([&](arith::SubFOp) {
        add(operand(0), g);
        add(operand(1), neg(g));
        return success();
      })
      .Case([&](arith::MulFOp) {
        add(operand(0), mul(g, fwd(operand(1))));
        add(operand(1), mul(g, fwd(operand(0))));
        return success();
      })
      .Case([&](arith::DivFOp) {
        Value rhs = fwd(operand(1));
        add(operand(0), div(g, rhs));
        add(operand(1), neg(div(mul(g, result()), rhs)));
        return success();
      })
      .Case([&](arith::NegFOp) {
        add(operand(0), neg(g));
        return success();
      })
      .Case([&](math::ExpOp) {
        add(operand(0), mul(g, result()));
        return success();
      })
      .Case([&](math::ExpM1Op) {
        add(operand(0), mul(g, arith::AddFOp::create(b, loc, result(),
                                                     constant(type, 1.0))));
        return success();
      })
      .Case([&](math::LogOp) {
        add(operand(0), div(g, fwd(operand(0))));
        return success();
      })
      .Case([&](math::Log1pOp) {
        add(operand(0), div(g, arith::AddFOp::create(b, loc, fwd(operand(0)),
                                                     constant(type, 1.0))));
        return success();
      })
      .Case([&](math::TanhOp) {
        Value y = result();
        add(operand(0), mul(g, sub(constant(type, 1.0), mul(y, y))));
        return success();
      })
      .Case([&](math::RsqrtOp) {
        // d/dx x^-1/2 = -1/2 x^-3/2 = -1/2 y^3
        Value y = result();
        add(operand(0),
            mul(g, mul(constant(type, -0.5), mul(y, mul(y, y)))));
        return success();
      })
      .Case([&](math::SqrtOp) {
        add(operand(0), div(mul(g, constant(type, 0.5)), result()));
        return success();
      })
      .Case([&](math::SinOp) {
        add(operand(0), mul(g, math::CosOp::create(b, loc, fwd(operand(0)))));
        return success();
      })
      .Case([&](math::CosOp) {
        add(operand(0),
            neg(mul(g, math::SinOp::create(b, loc, fwd(operand(0))))));
        return success();
      })
      .Case([&](math::ErfOp) {
        // 2/sqrt(pi) exp(-x^2)
        Value x = fwd(operand(0));
        Value e = math::ExpOp::create(b, loc, neg(mul(x, x)));
        add(operand(0), mul(g, mul(constant(type, 2.0 / std::sqrt(M_PI)), e)));
        return success();
      })
      .Case([&](math::AbsFOp) {
        Value x = fwd(operand(0));
        add(operand(0),
            select(cmp(arith::CmpFPredicate::OGE, x, constant(type, 0.0)), g,
                   neg(g)));
        return success();
      })
      .Case([&](math::PowFOp) {
        // d/da a^b = b a^(b-1); d/db a^b = a^b log a
        Value base = fwd(operand(0)), exponent = fwd(operand(1));
        if (dependent.contains(operand(0))) {
          Value reduced = sub(exponent, constant(type, 1.0));
          Value power = math::PowFOp::create(b, loc, base, reduced);
          add(operand(0), mul(g, mul(exponent, power)));
        }
        if (dependent.contains(operand(1)))
          add(operand(1),
              mul(g, mul(result(), math::LogOp::create(b, loc, base))));
        return success();
      })
      .Case<arith::MaximumFOp, arith::MaxNumFOp, arith::MinimumFOp,
            arith::MinNumFOp>([&](Operation *minMax) {
        // Ties go to the first operand.
        bool isMax = isa<arith::MaximumFOp, arith::MaxNumFOp>(minMax);
        Value lhs = fwd(operand(0)), rhs = fwd(operand(1));
        Value takesLhs = cmp(isMax ? arith::CmpFPredicate::OGE
                                   : arith::CmpFPredicate::OLE,
                             lhs, rhs);
        Value zero = constant(type, 0.0);
        add(operand(0), select(takesLhs, g, zero));
        add(operand(1), select(takesLhs, zero, g));
        return success();
      })
      .Case([&](arith::SelectOp) -> LogicalResult {
        if (!isa<FloatType>(op->getResult(0).getType()))
          return op->emitOpError("cannot be differentiated: it selects ")
                 << op->getResult(0).getType() << " values";
        Value zero = constant(type, 0.0);
        Value condition = fwd(operand(0));
        add(operand(1), select(condition, g, zero));
        add(operand(2), select(condition, zero, g));
        return success();
      })
      .Case([&](arith::TruncFOp) {
        add(operand(0), arith::ExtFOp::create(b, loc, operand(0).getType(), g));
        return success();
      })
      .Case([&](arith::ExtFOp) {
        add(operand(0),
            arith::TruncFOp::create(b, loc, operand(0).getType(), g));
        return success();
      })
      .Case<math::FloorOp, math::CeilOp, math::RoundOp, math::TruncOp,
            math::RoundEvenOp>([&](Operation *) {
        return success(); // piecewise constant: zero almost everywhere
      })
      .Case([&](scf::IfOp ifOp) { return visitIf(ifOp); })
      .Default([&](Operation *other) {
        return other->emitOpError(
            "cannot be differentiated: no derivative rule for it");
      });
}

/// The values defined outside `op`'s regions that they read.
static SmallVector<Value> capturedValues(Operation *op) {
  llvm::SetVector<Value> captured;
  getUsedValuesDefinedAbove(op->getRegions(), captured);
  return SmallVector<Value>(captured.begin(), captured.end());
}

void ScalarSweep::markDependent(Block &block) {
  for (Operation &op : block.without_terminator()) {
    SmallVector<Value> read(op.getOperands());
    if (op.getNumRegions() != 0)
      llvm::append_range(read, capturedValues(&op));
    if (llvm::none_of(read, [&](Value v) { return dependent.contains(v); }))
      continue;
    for (Value r : op.getResults())
      if (isa<FloatType>(r.getType()))
        dependent.insert(r);
    for (Region &region : op.getRegions())
      for (Block &inner : region)
        markDependent(inner);
  }
}

LogicalResult ScalarSweep::sweep(Operation *last) {
  for (Operation *op = last; op; op = op->getPrevNode()) {
    Value g;
    for (Value r : op->getResults())
      if (Value adjoint = adjoints.lookup(r))
        g = adjoint;
    if (!g)
      continue;
    // An op that reads no dependent value (the target's producer when the
    // target is a value of the body) passes nothing on.
    SmallVector<Value> read(op->getOperands());
    if (op->getNumRegions() != 0)
      llvm::append_range(read, capturedValues(op));
    if (llvm::none_of(read, [&](Value v) { return dependent.contains(v); }))
      continue;
    if (op->getNumResults() != 1 && !isa<scf::IfOp>(op))
      return op->emitOpError("cannot be differentiated: it has ")
             << op->getNumResults() << " results";
    if (failed(visit(op, g)))
      return failure();
  }
  return success();
}

LogicalResult ScalarSweep::visitIf(scf::IfOp op) {
  // The dependent values the branches read from outside: the gradient's
  // `scf.if` yields their adjoints.
  SmallVector<Value> inputs;
  for (Value v : capturedValues(op))
    if (dependent.contains(v))
      inputs.push_back(v);
  if (inputs.empty())
    return success();
  SmallVector<Type> types = llvm::to_vector(
      llvm::map_range(inputs, [](Value v) { return v.getType(); }));
  Value condition = fwd(op.getCondition());
  auto gradient = scf::IfOp::create(b, loc, types, condition,
                                    /*withElseRegion=*/true);
  for (auto [forward, backward] :
       llvm::zip(op->getRegions(), gradient->getRegions())) {
    Block &target = backward.front();
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&target);
    IRMapping branchMapping = mapping;
    ScalarSweep branch(b, branchMapping, loc);
    branch.dependent = dependent;
    Operation *last = nullptr;
    if (!forward.empty()) {
      Block &source = forward.front();
      for (Operation &inner : source.without_terminator())
        last = b.clone(inner, branchMapping);
      branch.markDependent(source);
      Operation *yield = source.getTerminator();
      for (auto [result, yielded] :
           llvm::zip(op->getResults(), yield->getOperands()))
        if (Value adjoint = adjoints.lookup(result))
          branch.add(yielded, adjoint);
      if (failed(branch.sweep(last ? source.getTerminator()->getPrevNode()
                                   : nullptr)))
        return failure();
    }
    SmallVector<Value> yielded;
    for (Value input : inputs) {
      Value adjoint = branch.adjoints.lookup(input);
      yielded.push_back(adjoint ? adjoint
                                : branch.constant(input.getType(), 0.0));
    }
    scf::YieldOp::create(b, loc, yielded);
  }
  for (auto [input, adjoint] : llvm::zip(inputs, gradient.getResults()))
    add(input, adjoint);
  return success();
}

FailureOr<Value> scalarDerivative(OpBuilder &b, Block &body,
                                  IRMapping &mapping, Value seed,
                                  Value seedAdjoint, Value target) {
  Location loc = seedAdjoint.getLoc();
  ScalarSweep sweep(b, mapping, loc);
  // The float values that depend on `target` (also through the values an
  // op's regions read).
  sweep.dependent.insert(target);
  sweep.markDependent(body);
  Type type = target.getType();
  if (!sweep.dependent.contains(seed))
    return sweep.constant(type, 0.0);

  sweep.adjoints[seed] = seedAdjoint;
  // The ops before the seed's producer, in reverse.
  if (failed(sweep.sweep(seed.getDefiningOp())))
    return failure();
  Value result = sweep.adjoints.lookup(target);
  return result ? result : sweep.constant(type, 0.0);
}

} // namespace soap::autodiff

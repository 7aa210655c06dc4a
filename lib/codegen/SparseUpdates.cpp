//===- SparseUpdates.cpp - SGD steps of gathered tables as scatters -------===//
//
// A gather's gradient is a scatter-add nest that starts from zeros
// (lib/autodiff/GatherGradient.cpp, include/soap/Partition/ScatterLoops.h):
// an embedding table's gradient is as large as the table, however few of
// its rows a batch reads. SGD's update then reads the table and that
// gradient and writes the new table, and the zero fill before it writes the
// gradient once more: for BERT's 30522 x 256 word embeddings, about 120 MB
// of memory traffic a step for the few hundred rows a batch touches.
//
// When the gradient's only use is such an update, an elementwise generic
// computing p + f(g) or p - f(g) with f(g) = g, g * c or c * g (c a
// constant), beside the nest or, in a partitioned program, in a device
// guard after the nest's on the same devices (a table placed on a subset
// of the devices), the nest starts from the parameter instead and applies each
// contribution x to the element it reaches: p[i] = p[i] +- f(x). The zero
// fill and the full-size gradient are gone; what is left of the table's
// traffic is the copy of the parameter into the new parameter's buffer (the
// driver keeps a step's arguments). The update is affine in g with slope 1
// in p, so the result is the same in real arithmetic; in floating point an
// element that several points reach is rounded after each contribution
// rather than once after their sum. Momentum, Adam and weight decay read
// the gradient elsewhere too (their update is not of that form) and keep
// the dense gradient.
//
//===----------------------------------------------------------------------===//

#include "LoweringSteps.h"
#include "soap/Dialect/SoapDialect.h"
#include "soap/Partition/ScatterLoops.h"
#include "soap/codegen/CpuLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace soap {

namespace {

/// An update `param ⊕ f(gradient)` of an elementwise generic's body.
struct AffineUpdate {
  /// The combining op (arith.addf or arith.subf, param on the left of a
  /// subf) and the scaling (arith.mulf with a constant, or none).
  Operation *combine, *scale;
  /// Whether the parameter is the combining op's left operand.
  bool paramLeft;
};

/// `generic` as an update p ⊕ f(g) of its two same-typed inputs, g its
/// input `gradientInput` and p the other, or nullopt.
std::optional<AffineUpdate> matchAffineUpdate(linalg::GenericOp generic,
                                              unsigned gradientInput) {
  if (generic.getNumDpsInputs() != 2 || generic.getNumDpsInits() != 1 ||
      generic.getNumReductionLoops() != 0 || generic->getNumResults() != 1)
    return std::nullopt;
  Type type = generic->getResult(0).getType();
  for (OpOperand *input : generic.getDpsInputOperands())
    if (input->get().getType() != type)
      return std::nullopt;
  if (!llvm::all_of(generic.getIndexingMapsArray(),
                    [](AffineMap map) { return map.isIdentity(); }))
    return std::nullopt;
  Block *body = generic.getBody();
  Value param = body->getArgument(1 - gradientInput);
  Value gradient = body->getArgument(gradientInput);
  if (!body->getArgument(2).use_empty())
    return std::nullopt;
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  Operation *combine = yield->getOperand(0).getDefiningOp();
  if (!combine || combine->getBlock() != body ||
      !isa<arith::AddFOp, arith::SubFOp>(combine))
    return std::nullopt;
  // p + t, t + p or p - t, with t = f(g).
  Value term;
  if (combine->getOperand(0) == param)
    term = combine->getOperand(1);
  else if (isa<arith::AddFOp>(combine) && combine->getOperand(1) == param)
    term = combine->getOperand(0);
  else
    return std::nullopt;
  // f(g): g itself, or g times a constant.
  Operation *scale = nullptr;
  if (term != gradient) {
    auto mul = term.getDefiningOp<arith::MulFOp>();
    if (!mul || mul->getBlock() != body || !mul->hasOneUse())
      return std::nullopt;
    unsigned gradientSide = mul.getLhs() == gradient ? 0 : 1;
    if (mul->getOperand(gradientSide) != gradient ||
        !matchPattern(mul->getOperand(1 - gradientSide), m_Constant()))
      return std::nullopt;
    scale = mul;
  }
  // Nothing else in the body.
  for (Operation &op : *body)
    if (&op != combine && &op != scale && &op != yield &&
        !matchPattern(&op, m_Constant()))
      return std::nullopt;
  return AffineUpdate{combine, scale, combine->getOperand(0) == param};
}

/// Whether `value` is a tensor of zeros: a linalg.fill of a zero constant.
bool isZeros(Value value) {
  auto fill = value.getDefiningOp<linalg::FillOp>();
  if (!fill)
    return false;
  FloatAttr attr;
  return matchPattern(fill.getInputs()[0], m_Constant(&attr)) &&
         attr.getValue().isZero();
}

/// `update`'s body applied to the element `old` and the contribution
/// `contribution`, built at `b`'s insertion point.
Value applyUpdate(OpBuilder &b, const AffineUpdate &update, Value old,
                  Value contribution) {
  Location loc = update.combine->getLoc();
  Value term = contribution;
  if (auto scale = cast_or_null<arith::MulFOp>(update.scale)) {
    // The constant factor, cloned next to its new use.
    bool gradientLeft = isa<BlockArgument>(scale.getLhs());
    Value factor =
        b.clone(
             *(gradientLeft ? scale.getRhs() : scale.getLhs()).getDefiningOp())
            ->getResult(0);
    term = gradientLeft ? arith::MulFOp::create(b, loc, contribution, factor,
                                                scale.getFastmath())
                        : arith::MulFOp::create(b, loc, factor, contribution,
                                                scale.getFastmath());
  }
  if (auto sub = dyn_cast<arith::SubFOp>(update.combine))
    return arith::SubFOp::create(b, loc, old, term, sub.getFastmath());
  auto add = cast<arith::AddFOp>(update.combine);
  return update.paramLeft
             ? arith::AddFOp::create(b, loc, old, term, add.getFastmath())
             : arith::AddFOp::create(b, loc, term, old, add.getFastmath());
}

/// The scatter nest that computes `gradient` for the update `generic`:
/// defined beside it, or yielded by a device guard before the update's own
/// guard on the same devices (an op placed on a subset of the devices, as
/// the partitioner emits it). Its result must have no other use.
scf::ForOp gradientNest(linalg::GenericOp generic, Value gradient) {
  if (!gradient.hasOneUse())
    return {};
  Value result = gradient;
  Operation *parent = generic->getParentOp();
  if (auto guard = gradient.getDefiningOp<OnDevicesOp>()) {
    auto mine = dyn_cast<OnDevicesOp>(parent);
    if (!mine || mine == guard || mine->getBlock() != guard->getBlock() ||
        mine.getDevices() != guard.getDevices())
      return {};
    result = guard.getBody().front().getTerminator()->getOperand(
        cast<OpResult>(gradient).getResultNumber());
    if (!result.hasOneUse())
      return {};
    parent = guard;
  }
  auto outer = result.getDefiningOp<scf::ForOp>();
  if (!outer || outer->getParentOp() != parent || outer->getResult(0) != result)
    return {};
  return outer;
}

/// Rewrites `generic` and the nest producing its gradient when they match
/// (see the file comment); true when it did.
bool scatterIntoParameter(linalg::GenericOp generic, DominanceInfo &dominance) {
  if (generic.getNumDpsInputs() != 2)
    return false;
  // The gradient: the input a scatter nest computes.
  unsigned gradientInput =
      gradientNest(generic, generic.getDpsInputs()[0]) ? 0 : 1;
  std::optional<AffineUpdate> update =
      matchAffineUpdate(generic, gradientInput);
  if (!update)
    return false;
  Value gradient = generic.getDpsInputs()[gradientInput];
  Value param = generic.getDpsInputs()[1 - gradientInput];
  scf::ForOp outer = gradientNest(generic, gradient);
  if (!outer)
    return false;
  std::optional<partition::ScatterAddNest> nest =
      partition::matchScatterAdd(outer);
  if (!nest || nest->result() != outer->getResult(0) ||
      !isZeros(nest->init()) || !dominance.properlyDominates(param, outer))
    return false;

  // Each contribution x: old + x becomes old ⊕ f(x).
  scf::ForOp innermost = nest->loops.back();
  for (auto insert : llvm::make_early_inc_range(
           innermost.getBody()->getOps<tensor::InsertOp>())) {
    auto add = insert.getScalar().getDefiningOp<arith::AddFOp>();
    auto old = add.getLhs().getDefiningOp<tensor::ExtractOp>();
    Value contribution = add.getRhs();
    if (!old || old.getTensor() != insert.getDest() ||
        old.getIndices() != insert.getIndices()) {
      old = add.getRhs().getDefiningOp<tensor::ExtractOp>();
      contribution = add.getLhs();
    }
    OpBuilder b(add);
    insert.getScalarMutable().assign(
        applyUpdate(b, *update, old.getResult(), contribution));
    add.erase();
  }
  Operation *zeros = nest->init().getDefiningOp();
  outer.getInitArgsMutable()[0].assign(param);
  if (zeros->use_empty())
    zeros->erase();
  generic->getResult(0).replaceAllUsesWith(gradient);
  generic.erase();
  return true;
}

struct SparseUpdatesPass
    : PassWrapper<SparseUpdatesPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(SparseUpdatesPass)

  StringRef getArgument() const override { return "soap-sparse-updates"; }
  StringRef getDescription() const override {
    return "apply SGD updates of tables read by gathers as scatters into "
           "the parameter instead of through a dense gradient (the "
           "--soap-lower-cpu step sparse-updates)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, tensor::TensorDialect>();
  }
  void runOnOperation() override {
    scatterUpdatesIntoParameters(getOperation());
  }
};

} // namespace

int scatterUpdatesIntoParameters(Operation *root) {
  SmallVector<linalg::GenericOp> generics;
  root->walk([&](linalg::GenericOp op) { generics.push_back(op); });
  DominanceInfo dominance(root);
  int rewritten = 0;
  for (linalg::GenericOp generic : generics)
    rewritten += scatterIntoParameter(generic, dominance);
  return rewritten;
}

namespace codegen {
std::unique_ptr<Pass> createSparseUpdatesPass() {
  return std::make_unique<SparseUpdatesPass>();
}
} // namespace codegen

} // namespace soap

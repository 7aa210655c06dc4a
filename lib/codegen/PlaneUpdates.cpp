//===- PlaneUpdates.cpp - slice-update chains run one plane at a time -----===//
//
// The autodiff writes the gradient of a max (or min) pooling as one
// elementwise pass per window offset: each reads the input's strided slice
// at that offset, the pooled result and its adjoint, and adds into the same
// strided slice of the input's gradient (extract_slice, linalg.generic,
// insert_slice). Nine passes for a 3x3 window each read and write the whole
// gradient; on SqueezeNet's first pooling (4x64x113x113, 13 MB) they are
// bound by memory traffic, 29 of the step's 160 ms. Where every slice and
// every operand spans the leading dimensions of the accumulator whole
// (batch and channels), the chain runs as one loop nest over those
// dimensions with the passes inside, each on one plane, which stays in
// cache between passes.
//
//===----------------------------------------------------------------------===//

#include "LoweringSteps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace soap::codegen {

namespace {

/// One in-place update of a slice of `accumulator`: `read` extracts the
/// slice, `op` (all-parallel, identity output map) computes its new value
/// from it, `write` inserts that at the same place.
struct SliceUpdate {
  tensor::ExtractSliceOp read;
  linalg::GenericOp op;
  tensor::InsertSliceOp write;
};

/// The update whose insert is `write`, if it is one.
std::optional<SliceUpdate> updateOf(tensor::InsertSliceOp write) {
  auto op = write.getSource().getDefiningOp<linalg::GenericOp>();
  if (!op || !op.hasPureTensorSemantics() || op->getNumResults() != 1 ||
      op.getNumDpsInits() != 1 || op.getNumReductionLoops() != 0 ||
      !op->hasOneUse() || op->getBlock() != write->getBlock() ||
      !op.getIndexingMapsArray().back().isIdentity() ||
      !op.getRegion().front().getOps<linalg::IndexOp>().empty())
    return std::nullopt;
  auto read = op.getDpsInits()[0].getDefiningOp<tensor::ExtractSliceOp>();
  if (!read || read.getSource() != write.getDest() || !read->hasOneUse() ||
      read.getType().getRank() != write.getType().getRank() ||
      read.getStaticOffsets() != write.getStaticOffsets() ||
      read.getStaticSizes() != write.getStaticSizes() ||
      read.getStaticStrides() != write.getStaticStrides() ||
      !read.getOffsets().empty() || !read.getSizes().empty() ||
      !read.getStrides().empty() || !write.getOffsets().empty() ||
      !write.getSizes().empty() || !write.getStrides().empty())
    return std::nullopt;
  return SliceUpdate{read, op, write};
}

/// The update that continues the chain after `previous`: the only one that
/// reads and writes its result, which nothing else uses.
std::optional<SliceUpdate> nextUpdate(SliceUpdate previous) {
  Value accumulator = previous.write.getResult();
  if (!llvm::hasNItems(accumulator.getUses(), 2))
    return std::nullopt;
  for (Operation *user : accumulator.getUsers())
    if (auto write = dyn_cast<tensor::InsertSliceOp>(user))
      if (write.getDest() == accumulator)
        if (std::optional<SliceUpdate> next = updateOf(write))
          if (next->read.getSource() == accumulator &&
              next->write->getBlock() == previous.write->getBlock())
            return next;
  return std::nullopt;
}

/// How many leading dimensions of the accumulator every update of `chain`
/// spans whole, reading each operand's matching dimensions through the
/// same loops: the chain can run one index of those dimensions at a time.
unsigned wholeLeadingDims(ArrayRef<SliceUpdate> chain,
                          RankedTensorType accumulator) {
  unsigned dims = accumulator.getRank();
  for (SliceUpdate update : chain) {
    unsigned whole = 0;
    while (whole < dims && update.read.getStaticOffsets()[whole] == 0 &&
           update.read.getStaticStrides()[whole] == 1 &&
           update.read.getStaticSizes()[whole] == accumulator.getDimSize(whole))
      ++whole;
    dims = whole;
    // Each input reads leading loop d (if at all) as a dimension of the
    // accumulator's extent.
    for (OpOperand *input : update.op.getDpsInputOperands()) {
      AffineMap map = update.op.getMatchingIndexingMap(input);
      auto type = dyn_cast<RankedTensorType>(input->get().getType());
      if (!type)
        return 0;
      for (auto [position, expr] : llvm::enumerate(map.getResults())) {
        if (auto dim = dyn_cast<AffineDimExpr>(expr)) {
          if (dim.getPosition() < dims &&
              type.getDimSize(position) !=
                  accumulator.getDimSize(dim.getPosition()))
            dims = dim.getPosition();
          continue;
        }
        // A loop read through an expression: none of the loops it uses can
        // be split off.
        for (unsigned d = 0; d < dims; ++d)
          if (expr.isFunctionOfDim(d)) {
            dims = d;
            break;
          }
      }
    }
  }
  return dims;
}

/// `value` at index `ivs[d]` of every dimension read by leading loop d < L
/// (`map` says which loop each dimension reads), whole elsewhere.
Value sliceOperand(OpBuilder &b, Location loc, Value value, AffineMap map,
                   ArrayRef<Value> ivs) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<OpFoldResult> offsets, sizes, strides;
  bool sliced = false;
  for (auto [position, expr] : llvm::enumerate(map.getResults())) {
    auto dim = dyn_cast<AffineDimExpr>(expr);
    if (dim && dim.getPosition() < ivs.size()) {
      offsets.push_back(ivs[dim.getPosition()]);
      sizes.push_back(b.getIndexAttr(1));
      sliced = true;
    } else {
      offsets.push_back(b.getIndexAttr(0));
      sizes.push_back(b.getIndexAttr(type.getDimSize(position)));
    }
    strides.push_back(b.getIndexAttr(1));
  }
  if (!sliced)
    return value;
  return tensor::ExtractSliceOp::create(b, loc, value, offsets, sizes, strides);
}

/// `chain` as a loop nest over the first `dims` dimensions, at the last
/// update; returns the nest's outermost loop.
scf::ForOp runByPlanes(RewriterBase &rewriter, ArrayRef<SliceUpdate> chain,
                       unsigned dims) {
  SliceUpdate last = chain.back();
  Location loc = last.write.getLoc();
  Value accumulator = SliceUpdate(chain.front()).read.getSource();
  auto type = cast<RankedTensorType>(accumulator.getType());
  rewriter.setInsertionPoint(last.write);
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
  SmallVector<Value> ivs;
  SmallVector<scf::ForOp> loops;
  Value carried = accumulator;
  for (unsigned d = 0; d < dims; ++d) {
    Value bound =
        arith::ConstantIndexOp::create(rewriter, loc, type.getDimSize(d));
    auto loop = scf::ForOp::create(rewriter, loc, zero, bound, one,
                                   ValueRange{carried});
    rewriter.setInsertionPointToStart(loop.getBody());
    ivs.push_back(loop.getInductionVar());
    carried = loop.getRegionIterArg(0);
    loops.push_back(loop);
  }
  // The plane: index ivs of the leading dimensions, the rest whole.
  SmallVector<OpFoldResult> planeOffsets, planeSizes, unit;
  for (unsigned d = 0; d < type.getRank(); ++d) {
    planeOffsets.push_back(d < dims ? OpFoldResult(ivs[d])
                                    : rewriter.getIndexAttr(0));
    planeSizes.push_back(
        rewriter.getIndexAttr(d < dims ? 1 : type.getDimSize(d)));
    unit.push_back(rewriter.getIndexAttr(1));
  }
  Value plane = tensor::ExtractSliceOp::create(rewriter, loc, carried,
                                               planeOffsets, planeSizes, unit);
  for (SliceUpdate update : chain) {
    // The update's slice of the plane: offset 0 and size 1 in the leading
    // dimensions, as before elsewhere.
    SmallVector<OpFoldResult> offsets, sizes, strides;
    for (unsigned d = 0; d < type.getRank(); ++d) {
      offsets.push_back(rewriter.getIndexAttr(
          d < dims ? 0 : update.read.getStaticOffsets()[d]));
      sizes.push_back(rewriter.getIndexAttr(
          d < dims ? 1 : update.read.getStaticSizes()[d]));
      strides.push_back(rewriter.getIndexAttr(
          d < dims ? 1 : update.read.getStaticStrides()[d]));
    }
    Location opLoc = update.op.getLoc();
    Value slice = tensor::ExtractSliceOp::create(rewriter, opLoc, plane,
                                                 offsets, sizes, strides);
    SmallVector<Value> inputs;
    for (OpOperand *input : update.op.getDpsInputOperands())
      inputs.push_back(sliceOperand(rewriter, opLoc, input->get(),
                                    update.op.getMatchingIndexingMap(input),
                                    ivs));
    auto op = linalg::GenericOp::create(
        rewriter, opLoc, TypeRange{slice.getType()}, inputs, ValueRange{slice},
        update.op.getIndexingMapsArray(), update.op.getIteratorTypesArray());
    rewriter.cloneRegionBefore(update.op.getRegion(), op.getRegion(),
                               op.getRegion().end());
    op->setDiscardableAttrs(update.op->getDiscardableAttrDictionary());
    plane = tensor::InsertSliceOp::create(rewriter, opLoc, op.getResult(0),
                                          plane, offsets, sizes, strides);
  }
  Value updated = tensor::InsertSliceOp::create(rewriter, loc, plane, carried,
                                                planeOffsets, planeSizes, unit);
  for (scf::ForOp loop : llvm::reverse(loops)) {
    rewriter.setInsertionPointToEnd(loop.getBody());
    scf::YieldOp::create(rewriter, loc, updated);
    updated = loop.getResult(0);
  }
  rewriter.replaceOp(last.write, updated);
  for (SliceUpdate update : llvm::reverse(chain)) {
    if (update.write != last.write)
      rewriter.eraseOp(update.write);
    rewriter.eraseOp(update.op);
    rewriter.eraseOp(update.read);
  }
  return loops.front();
}

struct PlaneUpdatesPass
    : PassWrapper<PlaneUpdatesPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(PlaneUpdatesPass)

  StringRef getArgument() const override { return "soap-plane-updates"; }
  StringRef getDescription() const override {
    return "run chains of elementwise updates of slices of one tensor (a "
           "max pooling's gradient) one plane of its leading dimensions at a "
           "time (the --soap-lower-cpu step plane-updates, there for tensors "
           "of at least 1 MiB)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry
        .insert<arith::ArithDialect, scf::SCFDialect, tensor::TensorDialect>();
  }
  void runOnOperation() override {
    runUpdatesByPlanes(getOperation(), /*minBytes=*/0);
  }
};

} // namespace

std::unique_ptr<Pass> createPlaneUpdatesPass() {
  return std::make_unique<PlaneUpdatesPass>();
}

int runUpdatesByPlanes(Operation *root, int64_t minBytes) {
  // The first update of each chain: one whose accumulator no update wrote.
  SmallVector<SliceUpdate> heads;
  root->walk([&](tensor::InsertSliceOp write) {
    std::optional<SliceUpdate> update = updateOf(write);
    if (!update)
      return;
    if (auto before =
            update->read.getSource().getDefiningOp<tensor::InsertSliceOp>())
      if (std::optional<SliceUpdate> previous = updateOf(before))
        if (nextUpdate(*previous))
          return;
    heads.push_back(*update);
  });
  IRRewriter rewriter(root->getContext());
  int rewritten = 0;
  for (SliceUpdate head : heads) {
    SmallVector<SliceUpdate> chain{head};
    while (std::optional<SliceUpdate> next = nextUpdate(chain.back()))
      chain.push_back(*next);
    auto type = cast<RankedTensorType>(head.read.getSource().getType());
    int64_t bytes = type.getNumElements() *
                    static_cast<int64_t>(type.getElementTypeBitWidth() / 8);
    if (chain.size() < 2 || !type.hasStaticShape() || bytes < minBytes)
      continue;
    unsigned dims = wholeLeadingDims(chain, type);
    if (dims == 0 || dims == type.getRank())
      continue;
    scf::ForOp nest = runByPlanes(rewriter, chain, dims);
    nest->setAttr(kPlaneUpdatesAttr, rewriter.getUnitAttr());
    ++rewritten;
  }
  return rewritten;
}

} // namespace soap::codegen

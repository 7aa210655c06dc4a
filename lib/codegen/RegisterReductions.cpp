//===- RegisterReductions.cpp - reductions that accumulate in registers --===//
//
// upstream's convert-linalg-to-loops turns a reduction such as batch norm's
// statistics (loops n, c, hw; output [c]) into loops whose innermost
// statement loads out[c], adds, and stores out[c] again, every iteration.
// The generated code passes bare pointers, so LLVM cannot prove the inputs
// do not alias the output and keeps that load and store: each iteration
// waits for the previous one's store to reach the next load. Here, after
// bufferization, a generic whose innermost loops are reductions that no
// output reads becomes the same loop nest with the outputs' values carried
// through those inner loops as scf.for iteration arguments: loaded once
// before them, stored once after. The operations and their order are the
// loops' own, so results are bitwise those of convert-linalg-to-loops.
// With `reassociate` (--soap-lower-cpu's default), each sum into a carried
// value is marked fastmath<reassoc>, which lets LLVM's vectorizer keep a
// partial sum per lane (as oneDNN and PyTorch sum); results then differ
// by rounding.
//
//===----------------------------------------------------------------------===//

#include "LoweringSteps.h"
#include "soap/codegen/CpuLowering.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace soap::codegen {

/// The first of the innermost loops of `op` that are all reductions and
/// that no output reads; none where there are no such loops or `op` is not
/// a loop nest on buffers with static sizes.
static std::optional<unsigned> innerReductions(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.hasDynamicShape())
    return std::nullopt;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  unsigned first = iterators.size();
  while (first > 0 && iterators[first - 1] == utils::IteratorType::reduction)
    --first;
  if (first == iterators.size())
    return std::nullopt;
  for (OpOperand &init : op.getDpsInitsMutable()) {
    AffineMap map = op.getMatchingIndexingMap(&init);
    for (unsigned loop = first; loop < iterators.size(); ++loop)
      if (map.isFunctionOfDim(loop))
        return std::nullopt;
  }
  return first;
}

/// The indices at which `map` reads for loop indices `ivs`.
static SmallVector<Value> indicesOf(OpBuilder &b, Location loc, AffineMap map,
                                    ValueRange ivs) {
  SmallVector<Value> indices;
  for (AffineExpr expr : map.getResults()) {
    if (auto dim = dyn_cast<AffineDimExpr>(expr)) {
      indices.push_back(ivs[dim.getPosition()]);
      continue;
    }
    indices.push_back(affine::AffineApplyOp::create(
        b, loc, AffineMap::get(map.getNumDims(), 0, expr), ivs));
  }
  return indices;
}

/// Loads the element of `operand` (a memref or a scalar) that `map` reads.
static Value elementOf(OpBuilder &b, Location loc, Value operand,
                       AffineMap map, ValueRange ivs) {
  if (!isa<MemRefType>(operand.getType()))
    return operand;
  return memref::LoadOp::create(b, loc, operand, indicesOf(b, loc, map, ivs));
}

static void lowerWithRegisterAccumulators(linalg::GenericOp op,
                                          unsigned first, bool reassociate) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  SmallVector<Value> upper;
  for (int64_t range : ranges)
    upper.push_back(arith::ConstantIndexOp::create(b, loc, range));
  SmallVector<Value> lower(ranges.size(), zero), steps(ranges.size(), one);
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  unsigned numInputs = op.getNumDpsInputs();
  Block &body = op.getRegion().front();

  // The body once, for loop indices `ivs`, with the outputs' values
  // `accumulators`; returns what it yields.
  auto emitBody = [&](OpBuilder &nb, Location l, ValueRange ivs,
                      ValueRange accumulators) {
    IRMapping mapping;
    for (auto [i, input] : llvm::enumerate(op.getDpsInputs()))
      mapping.map(body.getArgument(i),
                  elementOf(nb, l, input, maps[i], ivs));
    for (auto [i, accumulator] : llvm::enumerate(accumulators))
      mapping.map(body.getArgument(numInputs + i), accumulator);
    for (Operation &inner : body.without_terminator()) {
      if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
        mapping.map(index.getResult(), ivs[index.getDim()]);
        continue;
      }
      Operation *cloned = nb.clone(inner, mapping);
      // A sum into an accumulator may be reassociated: LLVM's vectorizer
      // then keeps partial sums per lane.
      if (auto add = dyn_cast<arith::AddFOp>(cloned);
          add && reassociate &&
          (llvm::is_contained(accumulators, add.getLhs()) ||
           llvm::is_contained(accumulators, add.getRhs())))
        add.setFastmath(add.getFastmath() | arith::FastMathFlags::reassoc);
    }
    SmallVector<Value> yielded;
    for (Value value : body.getTerminator()->getOperands())
      yielded.push_back(mapping.lookupOrDefault(value));
    return yielded;
  };

  auto outer = [&](OpBuilder &ob, Location l, ValueRange outerIvs) {
    // The outputs' maps do not read the inner loops: zeros stand for them.
    SmallVector<Value> outputIvs(outerIvs);
    outputIvs.resize(ranges.size(), zero);
    SmallVector<Value> initial;
    for (auto [i, init] : llvm::enumerate(op.getDpsInits()))
      initial.push_back(
          elementOf(ob, l, init, maps[numInputs + i], outputIvs));
    ArrayRef<Value> innerLower = ArrayRef(lower).drop_front(first),
                    innerUpper = ArrayRef(upper).drop_front(first),
                    innerSteps = ArrayRef(steps).drop_front(first);
    scf::LoopNest inner = scf::buildLoopNest(
        ob, l, innerLower, innerUpper, innerSteps, initial,
        [&](OpBuilder &nb, Location il, ValueRange innerIvs,
            ValueRange accumulators) -> scf::ValueVector {
          SmallVector<Value> ivs(outerIvs);
          ivs.append(innerIvs.begin(), innerIvs.end());
          return emitBody(nb, il, ivs, accumulators);
        });
    for (auto [i, init] : llvm::enumerate(op.getDpsInits()))
      memref::StoreOp::create(
          ob, l, inner.results[i], init,
          indicesOf(ob, l, maps[numInputs + i], outputIvs));
  };
  scf::buildLoopNest(b, loc, ArrayRef(lower).take_front(first),
                     ArrayRef(upper).take_front(first),
                     ArrayRef(steps).take_front(first), outer);
  op.erase();
}

namespace {

struct RegisterReductionsPass
    : PassWrapper<RegisterReductionsPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(RegisterReductionsPass)

  StringRef getArgument() const override {
    return "soap-register-reductions";
  }
  StringRef getDescription() const override {
    return "lower linalg.generic loop nests on buffers whose innermost loops "
           "are reductions to scf loops that carry the outputs' values "
           "through those loops (the --soap-lower-cpu step "
           "register-reductions)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<affine::AffineDialect, arith::ArithDialect,
                    memref::MemRefDialect, scf::SCFDialect>();
  }
  RegisterReductionsPass() = default;
  RegisterReductionsPass(const RegisterReductionsPass &other)
      : PassWrapper(other) {}

  void runOnOperation() override {
    accumulateReductionsInRegisters(getOperation(), reassociate);
  }

  Option<bool> reassociate{
      *this, "reassociate",
      llvm::cl::desc("Mark the sums into the carried values reassociable "
                     "(fastmath<reassoc>), so that LLVM vectorizes them"),
      llvm::cl::init(false)};
};

} // namespace

std::unique_ptr<Pass> createRegisterReductionsPass() {
  return std::make_unique<RegisterReductionsPass>();
}

} // namespace soap::codegen

int soap::accumulateReductionsInRegisters(Operation *root, bool reassociate) {
  SmallVector<std::pair<linalg::GenericOp, unsigned>> reductions;
  root->walk([&](linalg::GenericOp op) {
    if (std::optional<unsigned> first = codegen::innerReductions(op))
      reductions.push_back({op, *first});
  });
  for (auto [op, first] : reductions)
    codegen::lowerWithRegisterAccumulators(op, first, reassociate);
  return static_cast<int>(reductions.size());
}

//===- TransposeTiles.cpp - transposing loop nests run in tiles ----------===//
//
// After bufferization, a loop nest that reads or writes one operand
// through a permutation (a transposing copy that elementwise
// fusion put into its consumer: the optimizer update of a linear layer's
// weight reading the transposed gradient, where a sum or a collective
// stood between the product and the transpose; a sum over the batch that
// writes a weight gradient transposed) walks that operand with a
// stride of a whole row in its innermost loop: each iteration touches
// another cache line, and by the time the next row of the loop nest comes
// back to a line it has left the L1 cache. Such a nest runs in square
// tiles over its innermost loop and the loop that operand reads
// contiguously (upstream's tileLinalgOp on buffers, every other loop in
// tiles of one): the lines a tile touches stay in cache while the tile's
// rows reuse them. Each point computes what it computed before, so the
// results are bitwise the same.
//
//===----------------------------------------------------------------------===//

#include "LoweringSteps.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace soap {

namespace {

/// The side of a tile: one 64-byte cache line of f32 along each of the two
/// loops, so a tile touches 16 lines of the transposed operand.
constexpr int64_t kTileSide = 16;
/// Operands smaller than this stay in the L1 cache whatever the order.
constexpr int64_t kMinStridedBytes = 32 * 1024;

/// For a loop nest on statically shaped buffers whose innermost loop is
/// parallel and walks some operand of at least kMinStridedBytes across
/// rows (the loop is one of its dimensions but not its last, which has
/// unit stride), the loop that operand reads contiguously, where that loop
/// is parallel too; -1 otherwise. (Reduction loops elsewhere, as a sum
/// over the batch that writes its result transposed, become loops around
/// the tiles: each element still sums in the same order.)
int64_t stridedOperandLoop(linalg::GenericOp op) {
  unsigned numLoops = op.getNumLoops();
  SmallVector<utils::IteratorType> kinds = op.getIteratorTypesArray();
  if (!op.hasPureBufferSemantics() || numLoops < 2 ||
      kinds.back() != utils::IteratorType::parallel)
    return -1;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return -1;
  unsigned inner = numLoops - 1;
  int64_t loop = -1, largest = 0;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    AffineMap map = op.getMatchingIndexingMap(&operand);
    if (!map.isProjectedPermutation(/*allowZeroInResults=*/true))
      return -1;
    // Scalars, vectors and broadcast reads (a constant last index).
    auto lastDim = dyn_cast_or_null<AffineDimExpr>(
        map.getNumResults() ? map.getResults().back() : AffineExpr());
    if (!type || type.getRank() < 2 || !lastDim)
      continue;
    if (!type.hasStaticShape())
      return -1;
    SmallVector<int64_t> strides;
    int64_t offset;
    if (failed(type.getStridesAndOffset(strides, offset)) ||
        strides.back() != 1)
      return -1;
    unsigned last = lastDim.getPosition();
    if (last == inner ||
        !map.isFunctionOfDim(inner)) // constant along the innermost loop
      continue;
    int64_t bytes = type.getNumElements() * type.getElementTypeBitWidth() / 8;
    if (bytes >= kMinStridedBytes && bytes > largest &&
        kinds[last] == utils::IteratorType::parallel &&
        ranges[last] > kTileSide && ranges[inner] > kTileSide) {
      largest = bytes;
      loop = last;
    }
  }
  return loop;
}

} // namespace

int tileTransposingLoopNests(Operation *root) {
  SmallVector<std::pair<linalg::GenericOp, int64_t>> nests;
  root->walk([&](linalg::GenericOp op) {
    int64_t loop = stridedOperandLoop(op);
    if (loop >= 0)
      nests.push_back({op, loop});
  });
  IRRewriter rewriter(root->getContext());
  int tiled = 0;
  for (auto [op, loop] : nests) {
    SmallVector<int64_t> sizes(op.getNumLoops(), 1);
    sizes[loop] = kTileSide;
    sizes.back() = kTileSide;
    linalg::LinalgTilingOptions options;
    options.setTileSizes(sizes).setLoopType(
        linalg::LinalgTilingLoopType::Loops);
    rewriter.setInsertionPoint(op);
    FailureOr<linalg::TiledLinalgOp> result =
        linalg::tileLinalgOp(rewriter, op, options);
    if (failed(result))
      continue;
    rewriter.eraseOp(op);
    ++tiled;
  }
  return tiled;
}

namespace codegen {

namespace {

struct TileTransposesPass
    : PassWrapper<TileTransposesPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TileTransposesPass)

  StringRef getArgument() const override { return "soap-tile-transposes"; }
  StringRef getDescription() const override {
    return "loop nests on buffers that walk an operand across its rows in "
           "their innermost (parallel) loop run in 16x16 tiles over that "
           "loop and the one the operand reads contiguously (the "
           "--soap-lower-cpu step tile-transposes)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<affine::AffineDialect, arith::ArithDialect,
                    memref::MemRefDialect, scf::SCFDialect>();
  }
  void runOnOperation() override { tileTransposingLoopNests(getOperation()); }
};

} // namespace

std::unique_ptr<Pass> createTileTransposesPass() {
  return std::make_unique<TileTransposesPass>();
}

} // namespace codegen

} // namespace soap

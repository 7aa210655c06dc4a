//===- CollapseLoops.cpp - fewer, longer loops for loop-nest kernels -----===//
//
// After bufferization, a linalg.generic that stays a loop nest (everything
// libsoaprt's calls do not take: elementwise work, reductions, the
// optimizer update) gets each run of adjacent loops that every operand
// reads contiguously, in order and in its buffer's memory, merged into one
// loop (upstream's collapseOpIterationDims, with memref.collapse_shape
// views). A 512x512x3x3 update is then one loop of 2.4M iterations, which
// LLVM vectorizes, instead of 262,144 inner loops of 3; batch-norm's
// statistics sum one loop of H*W per channel instead of H loops of W.
//
//===----------------------------------------------------------------------===//

#include "LoweringSteps.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;

namespace soap::codegen {

/// For `map` (a projected permutation), the groups of its results that
/// `loopGroups` merge: consecutive results whose loops share a group.
static SmallVector<ReassociationIndices>
resultGroups(AffineMap map, ArrayRef<ReassociationIndices> loopGroups) {
  auto groupOf = [&](unsigned loop) -> int64_t {
    for (auto [i, group] : llvm::enumerate(loopGroups))
      if (llvm::is_contained(group, static_cast<int64_t>(loop)))
        return static_cast<int64_t>(i);
    return -1;
  };
  SmallVector<ReassociationIndices> groups;
  int64_t previous = -2;
  for (auto [i, expr] : llvm::enumerate(map.getResults())) {
    int64_t group = groupOf(cast<AffineDimExpr>(expr).getPosition());
    if (group >= 0 && group == previous)
      groups.back().push_back(static_cast<int64_t>(i));
    else
      groups.push_back({static_cast<int64_t>(i)});
    previous = group;
  }
  return groups;
}

/// Whether merging `loopGroups` keeps every operand a view of its buffer:
/// each group contiguous in every map, and in every memref's layout.
static bool canCollapse(linalg::GenericOp op,
                        ArrayRef<ReassociationIndices> loopGroups) {
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  if (!linalg::areDimSequencesPreserved(maps, loopGroups))
    return false;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    if (!type)
      continue;
    if (!memref::CollapseShapeOp::isGuaranteedCollapsible(
            type, resultGroups(op.getMatchingIndexingMap(&operand),
                               loopGroups)))
      return false;
  }
  return true;
}

/// The runs of adjacent loops of one iterator type that can merge, each
/// as long as it can be.
static SmallVector<ReassociationIndices> collapsibleLoops(linalg::GenericOp op) {
  SmallVector<utils::IteratorType> kinds = op.getIteratorTypesArray();
  SmallVector<ReassociationIndices> groups;
  ReassociationIndices run;
  auto flush = [&] {
    if (run.size() > 1)
      groups.push_back(run);
    run.clear();
  };
  for (int64_t loop = 0, e = static_cast<int64_t>(kinds.size()); loop < e;
       ++loop) {
    if (!run.empty() && kinds[loop] == kinds[run.front()]) {
      ReassociationIndices longer = run;
      longer.push_back(loop);
      SmallVector<ReassociationIndices> candidate = groups;
      candidate.push_back(longer);
      if (canCollapse(op, candidate)) {
        run = std::move(longer);
        continue;
      }
    }
    flush();
    run.push_back(loop);
  }
  flush();
  return groups;
}

void collapseLoopNests(ModuleOp module) {
  SmallVector<linalg::GenericOp> candidates;
  module.walk([&](linalg::GenericOp op) {
    if (op.hasPureBufferSemantics() && op.getNumLoops() > 1 &&
        llvm::all_of(op.getIndexingMapsArray(), [](AffineMap map) {
          return map.isProjectedPermutation(/*allowZeroInResults=*/false);
        }))
      candidates.push_back(op);
  });
  IRRewriter rewriter(module.getContext());
  for (linalg::GenericOp op : candidates) {
    SmallVector<ReassociationIndices> groups = collapsibleLoops(op);
    if (groups.empty())
      continue;
    rewriter.setInsertionPoint(op);
    FailureOr<linalg::CollapseResult> collapsed =
        linalg::collapseOpIterationDims(op, groups, rewriter);
    if (succeeded(collapsed))
      rewriter.eraseOp(op);
  }
}

} // namespace soap::codegen

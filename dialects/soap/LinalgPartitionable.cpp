//===- LinalgPartitionable.cpp - linalg structured ops are partitionable --===//
//
// Every linalg structured op (named ops, convolutions, pooling, generic,
// fill, transpose, broadcast, reduce, ...) is a loop nest with indexing maps,
// so one external model serves them all. A gather (soap/Dialect/Gather.h)
// has a lookup loop more per data-indexed dimension of its table, and reads
// the table through them.
//
//===----------------------------------------------------------------------===//

#include "soap/Dialect/Gather.h"
#include "soap/Dialect/PartitionableInterface.h"
#include "soap/Dialect/SpmdRewriter.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Interfaces/CastInterfaces.h"

using namespace mlir;
using namespace soap;

namespace {

/// Names like `d0`, or `kh`/`kw`, with an index appended when a role has
/// several loops (`b0`, `b1`).
static void nameLoops(SmallVectorImpl<std::string> &names,
                      ArrayRef<unsigned> loops, ArrayRef<StringRef> spelled,
                      StringRef base) {
  for (auto [i, loop] : llvm::enumerate(loops)) {
    if (loops.size() <= spelled.size())
      names[loop] = spelled[spelled.size() - loops.size() + i].str();
    else if (loops.size() == 1)
      names[loop] = base.str();
    else
      names[loop] = (base + Twine(i)).str();
  }
}

template <typename OpTy>
struct LinalgPartitionableModel
    : public PartitionableOpInterface::ExternalModel<
          LinalgPartitionableModel<OpTy>, OpTy> {
  LogicalResult partition(Operation *op, SpmdRewriter &rewriter) const {
    return rewriter.partitionLoops(op);
  }

  SmallVector<int64_t> getLoopSizes(Operation *op) const {
    SmallVector<int64_t> sizes =
        cast<linalg::LinalgOp>(op).getStaticLoopRanges();
    if (std::optional<GatherLookup> gather = matchGather(op))
      sizes.append(gather->lookupSizes);
    return sizes;
  }

  SmallVector<utils::IteratorType> getLoopIteratorTypes(Operation *op) const {
    SmallVector<utils::IteratorType> iterators =
        cast<linalg::LinalgOp>(op).getIteratorTypesArray();
    if (std::optional<GatherLookup> gather = matchGather(op))
      iterators.append(gather->lookupSizes.size(),
                       utils::IteratorType::reduction);
    return iterators;
  }

  SmallVector<bool> getLookupLoops(Operation *op) const {
    std::optional<GatherLookup> gather = matchGather(op);
    if (!gather)
      return {};
    SmallVector<bool> lookups(gather->numLoops(), false);
    for (unsigned l = gather->numOpLoops; l < gather->numLoops(); ++l)
      lookups[l] = true;
    return lookups;
  }

  SmallVector<std::string> getLoopNames(Operation *op) const {
    auto linalgOp = cast<linalg::LinalgOp>(op);
    unsigned numLoops = linalgOp.getNumLoops();
    SmallVector<std::string> names;
    for (unsigned i = 0; i < numLoops; ++i)
      names.push_back("d" + std::to_string(i));
    if (linalg::isaConvolutionOpInterface(linalgOp)) {
      FailureOr<linalg::ConvolutionDimensions> dims =
          linalg::inferConvolutionDims(linalgOp);
      if (succeeded(dims)) {
        // Pooling has no channel roles: its channel shows up as a second
        // batch-like loop.
        bool pooling = dims->outputChannel.empty() &&
                       dims->inputChannel.empty() && dims->depth.empty();
        if (pooling && dims->batch.size() == 2)
          nameLoops(names, dims->batch, {"n", "c"}, "n");
        else
          nameLoops(names, dims->batch, {}, "n");
        nameLoops(names, dims->outputImage, {"od", "oh", "ow"}, "o");
        nameLoops(names, dims->outputChannel, {}, "f");
        nameLoops(names, dims->filterLoop, {"kd", "kh", "kw"}, "k");
        nameLoops(names, dims->inputChannel, {}, "c");
        nameLoops(names, dims->depth, {},
                  dims->inputChannel.empty() ? "c" : "g");
      }
    } else if (linalg::isaContractionOpInterface(linalgOp)) {
      FailureOr<linalg::ContractionDimensions> dims =
          linalg::inferContractionDims(linalgOp);
      if (succeeded(dims)) {
        nameLoops(names, dims->batch, {}, "b");
        nameLoops(names, dims->m, {}, "m");
        nameLoops(names, dims->n, {}, "n");
        nameLoops(names, dims->k, {}, "k");
      }
    }
    if (std::optional<GatherLookup> gather = matchGather(op)) {
      SmallVector<unsigned> lookups;
      for (unsigned l = numLoops; l < gather->numLoops(); ++l) {
        names.emplace_back();
        lookups.push_back(l);
      }
      nameLoops(names, lookups, {}, "v");
    }
    return names;
  }

  SmallVector<OperandAccess> getOperandAccesses(Operation *op) const {
    auto linalgOp = cast<linalg::LinalgOp>(op);
    std::optional<GatherLookup> gather = matchGather(op);
    // Every map ranges over all the loops, lookup loops included.
    auto mapOf = [&](OpOperand *operand) {
      AffineMap map = linalgOp.getMatchingIndexingMap(operand);
      if (!gather)
        return map;
      return AffineMap::get(gather->numLoops(), 0, map.getResults(),
                            op->getContext());
    };
    SmallVector<OperandAccess> accesses;
    for (OpOperand *input : linalgOp.getDpsInputOperands()) {
      if (!isa<RankedTensorType, MemRefType>(input->get().getType()))
        continue; // scalars (the value of linalg.fill) are not indexed
      // A pooling window only gives its shape, as does the input of a
      // count (torch-mlir's batch-norm divisor): the body never reads it.
      AccessRole role = linalgOp.payloadUsesValueFromOperand(input)
                            ? AccessRole::Read
                            : AccessRole::Shape;
      accesses.push_back({input->get(), mapOf(input), role});
    }
    for (OpOperand &init : linalgOp.getDpsInitsMutable()) {
      AccessRole role = linalgOp.payloadUsesValueFromOperand(&init)
                            ? AccessRole::Read
                            : AccessRole::Unread;
      accesses.push_back(
          {init.get(), mapOf(&init), role, /*isDestination=*/true});
    }
    // After the outputs, as the tensors a body reads from above follow the
    // operands (soap-profile's kernels take them in that order).
    if (gather)
      accesses.push_back(
          {gather->table(), gather->tableMap(), AccessRole::Read});
    for (OpOperand &init : linalgOp.getDpsInitsMutable()) {
      if (!linalgOp.hasPureTensorSemantics())
        break;
      accesses.push_back(
          {linalgOp.getTiedOpResult(&init), mapOf(&init), AccessRole::Write});
    }
    return accesses;
  }

  /// Arithmetic in the body, not counting casts, constants, index queries
  /// and the terminator: 2 for a matmul or convolution (multiply, add),
  /// 1 for max pooling, 0 for fill, copy and transpose.
  double getFlopsPerIteration(Operation *op) const {
    auto linalgOp = cast<linalg::LinalgOp>(op);
    // A gather moves data and computes nothing but its indices.
    if (matchGather(op))
      return 0;
    Block *body = linalgOp.getBlock();
    if (!body)
      return 0;
    double flops = 0;
    body->walk([&](Operation *inner) {
      if (inner->hasTrait<OpTrait::IsTerminator>() ||
          inner->hasTrait<OpTrait::ConstantLike>() ||
          isa<linalg::IndexOp, CastOpInterface>(inner) ||
          inner->getNumRegions() > 0)
        return;
      flops += 1;
    });
    return flops;
  }
};

template <typename... OpTys>
static void attachToAll(MLIRContext *context) {
  (OpTys::template attachInterface<LinalgPartitionableModel<OpTys>>(*context),
   ...);
}

} // namespace

namespace soap {
void registerLinalgPartitionableModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, linalg::LinalgDialect *) {
    attachToAll<
#define GET_OP_LIST
#include "mlir/Dialect/Linalg/IR/LinalgStructuredOps.cpp.inc"
        >(context);
  });
}
} // namespace soap

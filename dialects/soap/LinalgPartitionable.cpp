//===- LinalgPartitionable.cpp - linalg structured ops are partitionable --===//
//
// Every linalg structured op (named ops, convolutions, pooling, generic,
// fill, transpose, broadcast, reduce, ...) is a loop nest with indexing maps,
// so one external model serves them all.
//
//===----------------------------------------------------------------------===//

#include "soap/Dialect/PartitionableInterface.h"

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
  SmallVector<int64_t> getLoopSizes(Operation *op) const {
    return cast<linalg::LinalgOp>(op).getStaticLoopRanges();
  }

  SmallVector<utils::IteratorType> getLoopIteratorTypes(Operation *op) const {
    return cast<linalg::LinalgOp>(op).getIteratorTypesArray();
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
    return names;
  }

  SmallVector<OperandAccess> getOperandAccesses(Operation *op) const {
    auto linalgOp = cast<linalg::LinalgOp>(op);
    SmallVector<OperandAccess> accesses;
    for (OpOperand *input : linalgOp.getDpsInputOperands()) {
      if (!isa<RankedTensorType, MemRefType>(input->get().getType()))
        continue; // scalars (the value of linalg.fill) are not indexed
      // A pooling window only gives its shape: the body never reads it.
      AccessRole role = linalgOp.payloadUsesValueFromOperand(input)
                            ? AccessRole::Read
                            : AccessRole::Unread;
      accesses.push_back(
          {input->get(), linalgOp.getMatchingIndexingMap(input), role});
    }
    for (OpOperand &init : linalgOp.getDpsInitsMutable()) {
      AccessRole role = linalgOp.payloadUsesValueFromOperand(&init)
                            ? AccessRole::Read
                            : AccessRole::Unread;
      accesses.push_back({init.get(), linalgOp.getMatchingIndexingMap(&init),
                          role, /*isDestination=*/true});
    }
    for (OpOperand &init : linalgOp.getDpsInitsMutable()) {
      if (!linalgOp.hasPureTensorSemantics())
        break;
      accesses.push_back({linalgOp.getTiedOpResult(&init),
                          linalgOp.getMatchingIndexingMap(&init),
                          AccessRole::Write});
    }
    return accesses;
  }

  /// Arithmetic in the body, not counting casts, constants, index queries
  /// and the terminator: 2 for a matmul or convolution (multiply, add),
  /// 1 for max pooling, 0 for fill, copy and transpose.
  double getFlopsPerIteration(Operation *op) const {
    auto linalgOp = cast<linalg::LinalgOp>(op);
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

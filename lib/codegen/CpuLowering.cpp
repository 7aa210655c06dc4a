//===- CpuLowering.cpp - a training step to LLVM for x86-64 CPUs ---------===//
//
// The order of the steps:
//   1. describe the entry (soap.* attributes) and rename it
//      soap_train_step; its arguments become read-only buffers; functions
//      it does not call are dropped; SGD updates of tables read by
//      gathers become scatters into the parameter (SparseUpdates.cpp);
//      products that accumulate into one another (a weight's gradient
//      summed over its uses) become one, also through device guards on
//      the same devices (AccumulationChains.cpp);
//   2. bracket every linalg op with trace hooks;
//   3. kernels=vector (and, with kernels=blas, convolutions BLAS does not
//      take): tile and vectorize contractions and convolutions on tensors;
//   4. one-shot bufferization (function boundaries, identity layouts),
//      results to out-params, ownership-based deallocation; SOAP
//      communication ops (CommunicationOps.cpp) are calls on buffers by then;
//   5. kernels=blas: contractions and 2-D convolutions (any layout, the
//      transposes around them folded first) become libsoaprt calls;
//      the generics left merge the adjacent loops their operands read
//      contiguously (CollapseLoops.cpp); kernels=vector: vector ops are
//      lowered;
//   6. loop nests whose innermost loops are reductions carry their
//      outputs through them as values (RegisterReductions.cpp); everything
//      else to loops, and to the LLVM dialect (bare pointers);
//   7. the C ABI for the driver.
//
//===----------------------------------------------------------------------===//

#include "soap/codegen/CpuLowering.h"

#include "LoweringSteps.h"
#include "soap/Dialect/SoapDialect.h"
#include "soap/codegen/Vectorize.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Hoisting.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace soap {

namespace {

const char *kBufferizePipeline =
    "symbol-dce, "
    "one-shot-bufferize{bufferize-function-boundaries=true "
    "function-boundary-type-conversion=identity-layout-map "
    "unknown-type-conversion=identity-layout-map}, "
    // Loops that carry a buffer yield it unchanged once bufferized; folding
    // them lets the result's allocation become the out-param (a scatter
    // nest writing a parameter's new value, SparseUpdates.cpp).
    "func.func(canonicalize), "
    "buffer-results-to-out-params{modify-public-functions=true "
    "hoist-static-allocs=true}, "
    "func.func(canonicalize, cse), "
    // Upstream's buffer-deallocation-pipeline, with soap-split-deallocs
    // ahead of the simplification (lib/codegen/Deallocations.cpp).
    "func.func(expand-realloc{emit-deallocs=false}, canonicalize, "
    "ownership-based-buffer-deallocation, canonicalize, soap-split-deallocs, "
    "buffer-deallocation-simplification), "
    "bufferization-lower-deallocations, func.func(cse, canonicalize), "
    "convert-bufferization-to-memref, "
    // The helper deallocation makes for buffers of unknown ownership (results
    // of soap.on_devices guards) takes dynamic memrefs, which the bare-pointer
    // calling convention cannot pass: it goes inline (cloned in place,
    // lib/codegen/Deallocations.cpp; upstream's inliner for anything else).
    "soap-inline-single-block-calls, inline, symbol-dce";

/// After vectorized kernels are bufferized: fold the tiles' subviews into
/// the transfers and hoist loop-invariant code, so output tiles stay in
/// registers across reduction loops.
const char *kVectorCleanupPipeline =
    "func.func(canonicalize, cse, fold-memref-alias-ops, "
    "loop-invariant-code-motion, canonicalize, cse)";

const char *kToLLVMPipeline =
    "func.func(convert-vector-to-scf{full-unroll=true}, "
    "convert-linalg-to-loops, canonicalize, cse), "
    "expand-strided-metadata, lower-affine, soap-scf-to-cf, "
    "func.func(canonicalize, cse), "
    "convert-vector-to-llvm, "
    "finalize-memref-to-llvm{use-generic-functions=true}, "
    "convert-math-to-llvm, convert-math-to-libm, convert-arith-to-llvm, "
    "convert-ub-to-llvm, convert-index-to-llvm, "
    "convert-func-to-llvm{use-bare-ptr-memref-call-conv=true}, "
    "convert-cf-to-llvm, reconcile-unrealized-casts";

} // namespace

namespace codegen {

LogicalResult runParsed(ModuleOp module, const char *pipeline,
                        PipelineRunner run) {
  registerLoweringPasses();
  OpPassManager pm(ModuleOp::getOperationName());
  std::string error;
  llvm::raw_string_ostream os(error);
  if (failed(parsePassPipeline(pipeline, pm, os)))
    return module.emitError() << "internal: bad pipeline: " << error;
  return run(pm);
}

const char *getBufferizePipeline() { return kBufferizePipeline; }

bool blasTakes(linalg::LinalgOp op) {
  Type element;
  for (Value operand : op->getOperands()) {
    auto type = dyn_cast<RankedTensorType>(operand.getType());
    if (!type || !type.hasStaticShape() ||
        (element && element != type.getElementType()))
      return false;
    element = type.getElementType();
  }
  if (!element || !(element.isF32() || element.isF64()))
    return false;
  return conv2dRoles(op).has_value() || linalg::isaContractionOpInterface(op);
}

std::optional<Transposed> transposeStep(Value value) {
  if (auto transpose = value.getDefiningOp<linalg::TransposeOp>())
    return Transposed{transpose.getInput(),
                      llvm::to_vector(transpose.getPermutation())};
  auto generic = value.getDefiningOp<linalg::GenericOp>();
  if (!generic || !generic.hasPureTensorSemantics())
    return std::nullopt;
  // A plain copy that writes through permuted loops (the output's map not
  // the identity).
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  if (maps.size() == 2 && generic.getNumDpsInputs() == 1 &&
      !maps[1].isIdentity()) {
    Value source = generic.getDpsInputs().front();
    std::optional<SmallVector<int64_t>> perm;
    if (generic.getRegion().front().getOperations().size() == 1)
      perm = codegen::permutingCopy(generic, source);
    if (!perm)
      return std::nullopt;
    return Transposed{source, std::move(*perm)};
  }
  std::optional<SmallVector<codegen::RelayoutRead>> reads =
      codegen::copyRelayout(generic);
  if (!reads || llvm::any_of(*reads, [](const codegen::RelayoutRead &read) {
        return read.backwards;
      }))
    return std::nullopt;
  // The copy's dimension j is its loop j (an identity-mapped output), which
  // reads source dimension r where reads[r].loop == j.
  Transposed transposed{generic.getDpsInputs().front(),
                        SmallVector<int64_t>(reads->size())};
  for (auto [r, read] : llvm::enumerate(*reads))
    transposed.perm[read.loop] = static_cast<int64_t>(r);
  return transposed;
}

/// `value` as a transpose of a tensor no transpose produces: a chain of
/// transposing steps (transposeStep; torch-mlir transposes a linear
/// layer's weight with a generic, and the autodiff transposes that copy
/// again for the input gradient), their permutations composed.
static std::optional<Transposed> asTransposed(Value value) {
  std::optional<Transposed> outer = transposeStep(value);
  if (!outer)
    return std::nullopt;
  while (std::optional<Transposed> inner = transposeStep(outer->source)) {
    // Dimension j of the outer tensor is dimension perm[j] of the inner
    // one, which is dimension inner.perm[perm[j]] of its source.
    for (int64_t &dim : outer->perm)
      dim = inner->perm[dim];
    outer->source = inner->source;
  }
  return outer;
}

/// The inputs of `generic` that a transpose produces (asTransposed) are
/// read from the transpose's input through the permuted map.
static void foldInputTransposes(linalg::GenericOp generic) {
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  for (OpOperand *input : generic.getDpsInputOperands()) {
    std::optional<Transposed> transpose = asTransposed(input->get());
    if (!transpose)
      continue;
    // Dimension j of the transposed tensor is dimension perm[j] of the
    // original: read the original where the transposed one was read.
    ArrayRef<int64_t> perm = transpose->perm;
    AffineMap &map = maps[input->getOperandNumber()];
    SmallVector<AffineExpr> results(perm.size());
    for (auto [j, source] : llvm::enumerate(perm))
      results[source] = map.getResult(j);
    map = AffineMap::get(map.getNumDims(), map.getNumSymbols(), results,
                         generic.getContext());
    input->set(transpose->source);
  }
  generic.setIndexingMapsAttr(
      Builder(generic.getContext()).getAffineMapArrayAttr(maps));
}

/// CSE merges equal fills; bufferization would then fill one buffer and
/// copy it into a new buffer for each use that writes into it (twice the
/// memory traffic of a fill), and the convolution over an adjoint spread
/// into zeros would not see its image's fill (spreadImage). (Empty tensors
/// are one per user by then: emptyTensorPerUser, which also gives a flipped
/// filter's copy a buffer of its own.)
void unshareInits(ModuleOp module) {
  SmallVector<linalg::FillOp> shared;
  module.walk([&](linalg::FillOp fill) {
    if (fill.hasPureTensorSemantics() &&
        fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>() &&
        !fill->hasOneUse())
      shared.push_back(fill);
  });
  IRRewriter rewriter(module.getContext());
  auto writesInto = [](OpOperand &use) {
    Operation *owner = use.getOwner();
    if (auto insert = dyn_cast<tensor::InsertSliceOp>(owner))
      return use.get() == insert.getDest();
    if (auto dps = dyn_cast<DestinationStyleOpInterface>(owner))
      return dps.isDpsInit(&use);
    return false;
  };
  // An insertion into the fill at the slice that an extraction of the fill
  // gives the op computing what is inserted (a max pool's gradient, one
  // window at a time) updates it in place: its own fill would make
  // bufferization copy the extracted slice into the new buffer.
  auto updatesInPlace = [](OpOperand &use) {
    auto insert = dyn_cast<tensor::InsertSliceOp>(use.getOwner());
    return insert && llvm::any_of(use.get().getUsers(), [&](Operation *user) {
             auto extract = dyn_cast<tensor::ExtractSliceOp>(user);
             return extract && extract.getSource() == use.get() &&
                    extract.getMixedOffsets() == insert.getMixedOffsets() &&
                    extract.getMixedSizes() == insert.getMixedSizes() &&
                    extract.getMixedStrides() == insert.getMixedStrides();
           });
  };
  for (linalg::FillOp fill : shared) {
    Operation *empty = fill.getOutputs()[0].getDefiningOp();
    for (OpOperand &use :
         llvm::make_early_inc_range(fill->getResult(0).getUses())) {
      if (!writesInto(use) || updatesInPlace(use))
        continue;
      rewriter.setInsertionPoint(use.getOwner());
      Operation *ownEmpty = rewriter.clone(*empty);
      IRMapping mapping;
      mapping.map(empty->getResult(0), ownEmpty->getResult(0));
      Operation *ownFill = rewriter.clone(*fill, mapping);
      use.set(ownFill->getResult(0));
    }
    if (fill->use_empty())
      rewriter.eraseOp(fill);
  }
}

/// An empty tensor with several users (CSE merges equal ones: the
/// training step's forward and backward ops write results of one shape
/// into one tensor.empty) becomes one per user, right before it. Shared,
/// bufferization gives them one buffer, allocated where the first is made
/// and reused by later writers, which holds a forward result (a ReLU's
/// output that only a pad reads) until the backward pass writes its
/// gradient there: the step's peak memory then exceeds what liveness needs
/// (the simulator's memory model, lib/sim/Memory.cpp).
void emptyTensorPerUser(ModuleOp module) {
  SmallVector<tensor::EmptyOp> shared;
  module.walk([&](tensor::EmptyOp empty) {
    if (!empty->hasOneUse() && !empty->use_empty())
      shared.push_back(empty);
  });
  IRRewriter rewriter(module.getContext());
  for (tensor::EmptyOp empty : shared) {
    for (OpOperand &use : llvm::make_early_inc_range(empty->getUses())) {
      rewriter.setInsertionPoint(use.getOwner());
      use.set(rewriter.clone(*empty)->getResult(0));
    }
    rewriter.eraseOp(empty);
  }
}

/// `op` as a linalg.generic: itself, or its generalization (at the
/// rewriter's insertion point).
static FailureOr<linalg::GenericOp> asGeneric(RewriterBase &rewriter,
                                              linalg::LinalgOp op) {
  if (auto generic = dyn_cast<linalg::GenericOp>(op.getOperation()))
    return generic;
  return linalg::generalizeNamedOp(rewriter, op);
}

/// Transposes (asTransposed) read by nothing else go (after bufferization
/// they would be copies into buffers, which nothing removes).
static void eraseUnusedTransposes(ModuleOp module) {
  IRRewriter rewriter(module.getContext());
  module.walk([&](linalg::LinalgOp op) {
    if (op->getNumResults() == 1 && op->use_empty() &&
        asTransposed(op->getResult(0)))
      rewriter.eraseOp(op);
  });
}

namespace {
/// A result that only a permuting copy reads (permutingCopy: the
/// autodiff's transposed weight gradients), from an output that starts as
/// a fill of an empty tensor, which can be made in the copy's layout.
struct WrittenTransposed {
  Operation *copy;
  SmallVector<int64_t> perm;
  Value fillValue; // what the output starts as
};
} // namespace

static std::optional<WrittenTransposed> writtenTransposed(linalg::LinalgOp op) {
  if (op->getNumResults() != 1 || op.getNumDpsInits() != 1 ||
      !op->getResult(0).hasOneUse())
    return std::nullopt;
  auto fill = op.getDpsInitOperand(0)->get().getDefiningOp<linalg::FillOp>();
  if (!fill || !fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>())
    return std::nullopt;
  Operation *copy = *op->getResult(0).getUsers().begin();
  std::optional<SmallVector<int64_t>> perm =
      permutingCopy(copy, op->getResult(0));
  if (!perm)
    return std::nullopt;
  return WrittenTransposed{copy, std::move(*perm), fill.getInputs()[0]};
}

/// `generic` writes the copy's layout directly (out^T: element j of the
/// copy is element perm[j] of the result), into a fill of that layout, and
/// replaces the copy.
static void writeTransposed(linalg::GenericOp generic,
                            const WrittenTransposed &written,
                            RewriterBase &rewriter) {
  rewriter.setInsertionPoint(generic);
  Location loc = generic->getLoc();
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  AffineMap &outMap = maps.back();
  SmallVector<AffineExpr> results;
  for (int64_t source : written.perm)
    results.push_back(outMap.getResult(source));
  outMap =
      AffineMap::get(outMap.getNumDims(), 0, results, generic.getContext());
  auto type = cast<RankedTensorType>(written.copy->getResult(0).getType());
  Value empty = tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                        type.getElementType());
  Value init = linalg::FillOp::create(rewriter, loc, written.fillValue, empty)
                   .getResult(0);
  auto replacement = linalg::GenericOp::create(
      rewriter, loc, TypeRange{type}, generic.getDpsInputs(), ValueRange{init},
      maps, generic.getIteratorTypesArray());
  rewriter.inlineRegionBefore(generic.getRegion(), replacement.getRegion(),
                              replacement.getRegion().end());
  rewriter.replaceOp(written.copy, replacement.getResults());
  rewriter.eraseOp(generic);
}

void foldTransposesIntoContractions(ModuleOp module) {
  SmallVector<std::pair<linalg::LinalgOp, std::optional<WrittenTransposed>>>
      contractions;
  module.walk([&](linalg::LinalgOp op) {
    if (!op.hasPureTensorSemantics() || !linalg::isaContractionOpInterface(op))
      return;
    std::optional<WrittenTransposed> written = writtenTransposed(op);
    if (written || llvm::any_of(op.getDpsInputs(), [](Value input) {
          return asTransposed(input).has_value();
        }))
      contractions.push_back({op, std::move(written)});
  });
  IRRewriter rewriter(module.getContext());
  for (auto &[op, written] : contractions) {
    rewriter.setInsertionPoint(op);
    FailureOr<linalg::GenericOp> generic = asGeneric(rewriter, op);
    if (failed(generic))
      continue;
    foldInputTransposes(*generic);
    if (written)
      writeTransposed(*generic, *written, rewriter);
  }
  eraseUnusedTransposes(module);
}

bool sumIntoFill(linalg::LinalgOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInits() != 1 ||
      op->getNumResults() != 1 || op.getNumReductionLoops() == 0 ||
      linalg::isaContractionOpInterface(op) ||
      linalg::isaConvolutionOpInterface(op) ||
      !llvm::all_of(op.getIndexingMapsArray(),
                    [](AffineMap map) {
                      return map.isProjectedPermutation(
                          /*allowZeroInResults=*/true);
                    }) ||
      !op.getMatchingIndexingMap(op.getDpsInitOperand(0))
           .isProjectedPermutation())
    return false;
  auto fill = op.getDpsInitOperand(0)->get().getDefiningOp<linalg::FillOp>();
  return fill && fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>();
}

int foldTransposesIntoSums(ModuleOp module) {
  SmallVector<std::pair<linalg::GenericOp, WrittenTransposed>> sums;
  module.walk([&](linalg::GenericOp op) {
    if (!sumIntoFill(op))
      return;
    if (std::optional<WrittenTransposed> written = writtenTransposed(op))
      sums.push_back({op, std::move(*written)});
  });
  IRRewriter rewriter(module.getContext());
  for (auto &[op, written] : sums)
    writeTransposed(op, written, rewriter);
  return static_cast<int>(sums.size());
}

void normalizeConvolutionOperands(ModuleOp module) {
  SmallVector<linalg::GenericOp> candidates;
  module.walk([&](linalg::GenericOp op) {
    if (op.hasPureTensorSemantics() && op.getNumDpsInits() == 1 &&
        op.getNumDpsInputs() >= 2 && op.getNumLoops() >= 6 &&
        op.getNumLoops() <= 8 && !conv2dRoles(op))
      candidates.push_back(op);
  });
  IRRewriter rewriter(module.getContext());
  for (linalg::GenericOp op : candidates) {
    Block &body = op.getRegion().front();
    SmallVector<OpOperand *> read;
    for (OpOperand *input : op.getDpsInputOperands())
      if (!body.getArgument(input->getOperandNumber()).use_empty())
        read.push_back(input);
    if (read.size() != 2)
      continue;
    // The image is the input read through a window (a sum of loops).
    auto windowed = [&](OpOperand *input) {
      return !op.getMatchingIndexingMap(input).isProjectedPermutation();
    };
    if (windowed(read[1]) && !windowed(read[0]))
      std::swap(read[0], read[1]);
    OpOperand *init = op.getDpsInitOperand(0);
    SmallVector<AffineMap> maps = {op.getMatchingIndexingMap(read[0]),
                                   op.getMatchingIndexingMap(read[1]),
                                   op.getMatchingIndexingMap(init)};
    rewriter.setInsertionPoint(op);
    auto candidate = linalg::GenericOp::create(
        rewriter, op.getLoc(), op->getResultTypes(),
        ValueRange{read[0]->get(), read[1]->get()}, ValueRange{init->get()},
        maps, op.getIteratorTypesArray());
    Block *block =
        rewriter.createBlock(&candidate.getRegion(), {},
                             {getElementTypeOrSelf(read[0]->get()),
                              getElementTypeOrSelf(read[1]->get()),
                              getElementTypeOrSelf(init->get())},
                             {op.getLoc(), op.getLoc(), op.getLoc()});
    IRMapping mapping;
    mapping.map(body.getArgument(read[0]->getOperandNumber()),
                block->getArgument(0));
    mapping.map(body.getArgument(read[1]->getOperandNumber()),
                block->getArgument(1));
    mapping.map(body.getArgument(init->getOperandNumber()),
                block->getArgument(2));
    rewriter.setInsertionPointToEnd(block);
    for (Operation &inner : body)
      rewriter.clone(inner, mapping);
    if (conv2dRoles(candidate) &&
        candidate.getStaticLoopRanges() == op.getStaticLoopRanges())
      rewriter.replaceOp(op, candidate->getResults());
    else
      rewriter.eraseOp(candidate);
  }
}

void foldTransposesIntoConvolutions(ModuleOp module) {
  SmallVector<linalg::LinalgOp> convolutions;
  module.walk([&](linalg::LinalgOp op) {
    if (op.hasPureTensorSemantics() && conv2dRoles(op) && blasTakes(op))
      convolutions.push_back(op);
  });
  IRRewriter rewriter(module.getContext());
  for (linalg::LinalgOp op : convolutions) {
    auto readsTranspose = [](OpOperand *input) {
      return asTransposed(input->get()).has_value();
    };
    // A transposing copy that is the result's only use.
    std::optional<WrittenTransposed> written = writtenTransposed(op);
    if (!written && llvm::none_of(op.getDpsInputOperands(), readsTranspose))
      continue;
    rewriter.setInsertionPoint(op);
    FailureOr<linalg::GenericOp> generic = asGeneric(rewriter, op);
    if (failed(generic))
      continue;
    foldInputTransposes(*generic);
    if (written)
      writeTransposed(*generic, *written, rewriter);
  }
  eraseUnusedTransposes(module);
}

void vectorizeKernels(ModuleOp module, bool skipBlasKernels) {
  SmallVector<linalg::LinalgOp> targets;
  module.walk([&](linalg::LinalgOp op) {
    if (vectorizedByLowering(op, skipBlasKernels))
      targets.push_back(op);
  });
  for (linalg::LinalgOp op : targets) {
    std::string error;
    // Declined ops stay linalg (possibly tiled) and become loops.
    (void)tileAndVectorize(op, error);
  }
}

LogicalResult lowerVectorKernels(ModuleOp module) {
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal())
      continue;
    linalg::hoistRedundantVectorTransfers(func);
    std::string error;
    if (!lowerVectorOps(func, error))
      return func.emitError() << error;
  }
  return success();
}

namespace {
struct FoldTransposesPass
    : PassWrapper<FoldTransposesPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(FoldTransposesPass)

  StringRef getArgument() const override { return "soap-fold-transposes"; }
  StringRef getDescription() const override {
    return "contractions and 2-D convolutions read the transposes they read, "
           "and write the permuting copies that alone read their results, "
           "through permuted maps (steps of --soap-lower-cpu's kernels=blas), "
           "as sums into zeros write theirs (a step of --soap-lower-cpu)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<linalg::LinalgDialect, tensor::TensorDialect>();
  }
  void runOnOperation() override {
    foldTransposesIntoContractions(getOperation());
    foldTransposesIntoConvolutions(getOperation());
    foldTransposesIntoSums(getOperation());
  }
};
} // namespace

std::unique_ptr<Pass> createFoldTransposesPass() {
  return std::make_unique<FoldTransposesPass>();
}

} // namespace codegen

/// Every result of the entry becomes an out-parameter the driver owns
/// (buffer-results-to-out-params). A result that is an argument of the
/// entry, or a value returned twice, would share its buffer with that
/// argument or with the other result (upstream's pass crashes on the latter):
/// each such result is returned as a copy of its own.
static void giveResultsOwnBuffers(func::FuncOp entry) {
  entry.walk([&](func::ReturnOp ret) {
    llvm::SmallPtrSet<Value, 8> returned;
    OpBuilder builder(ret);
    for (OpOperand &operand : ret->getOpOperands()) {
      Value value = operand.get();
      auto type = dyn_cast<RankedTensorType>(value.getType());
      if (!type)
        continue;
      bool isArgument = isa<BlockArgument>(value) &&
                        cast<BlockArgument>(value).getOwner()->getParentOp() ==
                            entry.getOperation();
      if (returned.insert(value).second && !isArgument)
        continue;
      SmallVector<Value> dynamicSizes;
      operand.set(bufferization::AllocTensorOp::create(
          builder, ret.getLoc(), type, dynamicSizes, value));
    }
  });
}

LogicalResult codegen::prepareEntry(ModuleOp module, StringRef entryName,
                                    codegen::ModelDescription &description) {
  auto entry = module.lookupSymbol<func::FuncOp>(entryName);
  if (!entry || entry.isExternal())
    return module.emitError()
           << "no function @" << entryName
           << " with a body to compile (a training step: see "
              "docs/train-step.md; --soap-mark-train-step marks a plain "
              "function as one)";
  if (entryName != kEntrySymbol && module.lookupSymbol(kEntrySymbol))
    return module.emitError() << "the symbol @" << kEntrySymbol
                              << " is reserved for the lowered entry";
  if (failed(codegen::describeEntry(entry, description)))
    return failure();
  if (llvm::none_of(description.results,
                    [](const auto &r) { return r.role == "loss"; }))
    return entry.emitError()
           << "no result has soap.role = \"loss\"; the driver reports it "
              "every step";

  if (std::optional<int64_t> devices = getDeclaredNumDevices(module)) {
    if (*devices < 1)
      return module.emitError()
             << "soap.num_devices = " << *devices << " must be at least 1";
    description.numDevices = *devices;
  }

  if (failed(SymbolTable::replaceAllSymbolUses(
          entry, StringAttr::get(module.getContext(), kEntrySymbol), module)))
    return entry.emitError() << "cannot rename the entry";
  entry.setSymName(kEntrySymbol);
  entry.setPublic();
  // The executable runs the entry alone: other functions (the loss function
  // the training step was made from, an exporter's printing @main) are
  // dropped unless the entry calls them, so they cost no compile time.
  for (auto function : module.getOps<FunctionOpInterface>())
    if (function != entry.getOperation())
      function.setPrivate();
  // The driver keeps the arguments of a step (warm-up steps discard their
  // results), so the step must not update them in place.
  for (unsigned i = 0; i < entry.getNumArguments(); ++i)
    entry.setArgAttr(i, bufferization::BufferizationDialect::kWritableAttrName,
                     BoolAttr::get(module.getContext(), false));

  giveResultsOwnBuffers(entry);

  // Partition configs say how to split ops that are split by now (or that
  // run whole on one device): the lowering rewrites the ops they describe
  // (a gather's table becomes a buffer), so they go first.
  module.walk([](Operation *op) {
    for (StringRef name : {SoapDialect::getConfigAttrName(),
                           SoapDialect::getScatterConfigAttrName(),
                           SoapDialect::getTransposedConfigAttrName(),
                           SoapDialect::getReplicatedAttrName()})
      op->removeAttr(name);
  });

  // SPMD programs: guards, the rank and communication (on tensors, so that
  // bufferization gives every result a buffer of its own).
  return codegen::lowerCommunicationOps(module, description.target != "gpu");
}

LogicalResult lowerModuleForCpu(ModuleOp module,
                                const CpuLoweringOptions &options,
                                PipelineRunner runPipeline) {
  codegen::ModelDescription description;
  if (options.overlapComm)
    codegen::startAllReducesEarly(module);
  // Before prepareEntry lowers device guards: a table's scatter and its
  // update may lie in two guards on the same devices.
  if (options.sparseUpdates)
    scatterUpdatesIntoParameters(module);
  // Also before: a chain of products through guards on the same devices
  // moves into one guard, to merge there below.
  if (options.mergeAccumulations)
    codegen::gatherAccumulationChains(module);
  if (failed(codegen::prepareEntry(module, options.entry, description)))
    return failure();
  if (options.mergeAccumulations)
    codegen::mergeAccumulatingProducts(module);
  // Before the transposes fold: a weight gradient's product then meets the
  // transpose that reads it directly.
  codegen::dropUnitDimensionSums(module);

  // Transposes fold into the contractions and convolutions that read or
  // write them before elementwise fusion, which would otherwise fuse a
  // transposed result into its consumer (a weight gradient into the
  // optimizer update), leaving the update to read it through a permutation.
  if (options.kernels == KernelCodegen::Blas) {
    codegen::normalizeConvolutionOperands(module);
    if (options.foldBroadcasts) {
      codegen::foldBroadcastsIntoContractions(module);
      codegen::foldSumsIntoContractions(module);
    }
    codegen::foldTransposesIntoContractions(module);
    codegen::foldTransposesIntoConvolutions(module);
  }
  codegen::foldTransposesIntoSums(module);
  codegen::dropZeroAccumulations(module);
  if (options.fuseElementwise && failed(codegen::fuseElementwiseChains(module)))
    return failure();
  if (options.mergeReductions)
    codegen::mergeSiblingReductions(module);
  if (options.planeUpdates)
    codegen::runUpdatesByPlanes(module);
  codegen::writeIntoDyingInputs(module);
  codegen::emptyTensorPerUser(module);
  if (options.stopAfterKernels)
    return success();
  // Hooks first, so that they bracket the loop nests of vectorized ops.
  if (options.traceOps)
    codegen::insertTraceHooks(module, description.ops);
  if (options.kernels != KernelCodegen::Loops)
    codegen::vectorizeKernels(module, options.kernels == KernelCodegen::Blas);

  if (options.kernels == KernelCodegen::Blas)
    codegen::unshareInits(module);
  if (failed(codegen::runParsed(module, kBufferizePipeline, runPipeline)))
    return failure();
  if (auto entry = module.lookupSymbol<func::FuncOp>(codegen::kEntrySymbol))
    codegen::writeGuardedResultsIntoOutParams(entry);
  // Temporaries are freed after their last use, not when the step returns
  // (lib/codegen/Deallocations.cpp; the GPU lowering keeps its order).
  if (failed(codegen::runParsed(
          module, "func.func(soap-dealloc-after-last-use)", runPipeline)))
    return failure();
  if (options.kernels == KernelCodegen::Blas) {
    // Blocks of oneDNN's f32 kernels for this CPU: its vector lanes. The
    // entry takes its arguments, then a buffer per result (out-params).
    int64_t lanes = codegen::vectorLanesF32();
    int64_t block = options.blockedWeights && lanes >= 8 ? lanes : 0;
    auto entry = module.lookupSymbol<func::FuncOp>(codegen::kEntrySymbol);
    size_t described = description.args.size() + description.results.size();
    if (!entry || entry.getNumArguments() != described)
      block = 0;
    SmallVector<unsigned> blocked;
    codegen::replaceKernelsByBlasCalls(module, block, &blocked);
    for (unsigned i : blocked) {
      if (i < description.args.size())
        description.args[i].block = block;
      else
        description.results[i - description.args.size()].block = block;
    }
  }
  // After the kernels: blocked weights see all-reduces as placeholders.
  codegen::replaceCommunicationPlaceholders(module, options.overlapComm);
  if (options.collapseLoops)
    codegen::collapseLoopNests(module);
  if (options.tileTransposes)
    tileTransposingLoopNests(module);
  // Last on buffers, once every op reads what it will read.
  if (auto entry = module.lookupSymbol<func::FuncOp>(codegen::kEntrySymbol))
    codegen::markInPlaceResults(entry, description);
  // The copies left, each an event of the op it serves.
  if (options.traceOps)
    codegen::insertCopyTraceHooks(module, description.ops);
  if (options.kernels != KernelCodegen::Loops) {
    if (failed(codegen::runParsed(module, kVectorCleanupPipeline, runPipeline)) ||
        failed(codegen::lowerVectorKernels(module)))
      return failure();
  }
  if (options.registerReductions)
    accumulateReductionsInRegisters(module, options.reassociateReductions);
  codegen::approximateMathFunctions(module);
  if (failed(codegen::runParsed(module, kToLLVMPipeline, runPipeline)))
    return failure();
  return codegen::emitRuntimeInterface(module, codegen::kEntrySymbol,
                                       description);
}

const char *getCpuToLLVMPipeline() {
  registerLoweringPasses();
  return kToLLVMPipeline;
}

void getCpuLoweringDependentDialects(DialectRegistry &registry) {
  registerLoweringPasses();
  for (const char *pipeline :
       {kBufferizePipeline, kVectorCleanupPipeline, kToLLVMPipeline}) {
    OpPassManager pm(ModuleOp::getOperationName());
    if (succeeded(parsePassPipeline(pipeline, pm)))
      pm.getDependentDialects(registry);
  }
  registry.insert<arith::ArithDialect, func::FuncDialect, linalg::LinalgDialect,
                  LLVM::LLVMDialect, memref::MemRefDialect, scf::SCFDialect,
                  vector::VectorDialect, bufferization::BufferizationDialect,
                  tensor::TensorDialect, ub::UBDialect>();
}

} // namespace soap

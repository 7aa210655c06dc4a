//===- LoweringSteps.h - the steps of the CPU lowering --------*- C++ -*-===//
//
// Internal to lib/codegen: what CpuLowering.cpp strings together.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_LIB_CODEGEN_LOWERINGSTEPS_H
#define SOAP_LIB_CODEGEN_LOWERINGSTEPS_H

#include "soap/Dialect/IdentityCopy.h" // copiesItsInput
#include "soap/codegen/BlasKernels.h"
#include "soap/codegen/CpuLowering.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace soap {
class OnDevicesOp;
} // namespace soap

namespace mlir {
class Pass;
class RewriterBase;
namespace linalg {
class GenericOp;
class LinalgOp;
} // namespace linalg
} // namespace mlir

namespace soap::codegen {

/// One argument or result of the entry, as soap_model_info lists it.
struct TensorDescription {
  std::string role, name, dtype, init;
  std::vector<int64_t> shape;
  int64_t range = -1;            // soap.range, or -1
  mlir::ElementsAttr initValues; // soap.init as an elements attribute
  /// soap.shard: this value is each device's part of a tensor of
  /// globalShape (initValues are the whole tensor's), at the offsets of
  /// shardOffsets (device-major); both empty when not sharded.
  std::vector<int64_t> globalShape, shardOffsets;
  /// The devices that hold a part (soap.shard's holders); empty: all.
  std::vector<int64_t> shardHolders;
  /// > 0: convolution weights [O][I][KH][KW] stored in oneDNN's blocked
  /// layout with this block (runtime/BlockedLayout.h; findBlockedWeights).
  int64_t block = 0;
  /// A result the step may write into the buffer of the argument it
  /// replaces (markInPlaceResults).
  bool inPlace = false;
};

/// What the driver needs to know about the entry function.
struct ModelDescription {
  std::string entry;
  std::vector<TensorDescription> args, results;
  std::vector<std::string> ops; // traced ops, by id
  int64_t numDevices = 1;        // soap.num_devices of the module
  std::string target = "cpu";    // where the step runs: cpu or gpu
};

/// The steps every lowering starts with: finds the entry `entryName`,
/// describes it (and checks that it has a loss), renames it
/// soap_train_step (public; every other function private), makes its
/// arguments read-only, and lowers guards, the rank and communication ops
/// (lowerCommunicationOps). Emits an error and fails when it cannot.
mlir::LogicalResult prepareEntry(mlir::ModuleOp module,
                                 llvm::StringRef entryName,
                                 ModelDescription &description);

/// Parses `pipeline` (textual, on the module) and runs it with `run`.
mlir::LogicalResult runParsed(mlir::ModuleOp module, const char *pipeline,
                              PipelineRunner run);

/// One-shot bufferization across function boundaries with identity
/// layouts, results to out-params and ownership-based deallocation.
const char *getBufferizePipeline();

/// The name the entry has after prepareEntry.
inline constexpr const char *kEntrySymbol = "soap_train_step";

/// Reads the entry's signature and soap.* attributes; fails with an error
/// on the function when an argument or result is not a statically shaped
/// tensor of numbers.
mlir::LogicalResult describeEntry(mlir::func::FuncOp entry,
                                  ModelDescription &description);

/// Brackets every linalg op of the module with soaprt_op_begin/end(id)
/// calls and appends "name (location)" to `ops` for each id.
void insertTraceHooks(mlir::ModuleOp module, std::vector<std::string> &ops);
/// The same for each memref.copy left after bufferization (the copies of
/// slices, pads and concatenations it could not do in place): with the
/// location of the op it comes from, so that a copy counts for that op.
void insertCopyTraceHooks(mlir::ModuleOp module, std::vector<std::string> &ops);

/// On tensors: an elementwise producer with one use fuses into the linalg
/// op that uses it, unless that op is a contraction or a convolution
/// (ElementwiseFusion.cpp). Fails when the rewrite does not converge.
mlir::LogicalResult fuseElementwiseChains(mlir::ModuleOp module);

/// After bufferization: merges the adjacent loops of loop-nest generics
/// that every operand reads contiguously (CollapseLoops.cpp).
void collapseLoopNests(mlir::ModuleOp module);

/// accumulateReductionsInRegisters (CpuLowering.h) as the pass
/// soap-register-reductions (on functions).
std::unique_ptr<mlir::Pass> createRegisterReductionsPass();

/// After bufferization: a result that a guard (a lowered soap.on_devices)
/// makes in a buffer of its own, which a top-level copy then fills the
/// out-parameter from (buffer-results-to-out-params cannot see through the
/// guard), is made in the out-parameter itself: the guard writes it there,
/// the copy and the buffer's frees go. A parameter updated on a device
/// subset (model parallelism) no longer holds a third copy and copies
/// itself every step (InPlaceResults.cpp). Returns how many.
int writeGuardedResultsIntoOutParams(mlir::func::FuncOp entry);

/// After bufferization: a result filled by a top-level copy of the
/// argument it replaces, where the argument is read only before the copy
/// and the result only from it on, is marked inPlace and the copy runs
/// only when the two buffers differ (InPlaceResults.cpp). Returns how many.
int markInPlaceResults(mlir::func::FuncOp entry,
                       ModelDescription &description);

/// On tensors: an elementwise generic that accumulates into a fill of
/// zero yields its addend into an empty tensor, and an elementwise generic
/// that copies an input unchanged is that input (ZeroAccumulations.cpp).
/// Returns the rewrites made.
int dropZeroAccumulations(mlir::Operation *root);
/// On tensors: a sum into a fill of zero over loops of size one (the
/// gradient of a broadcast that adds unit dimensions) becomes its input
/// without those dimensions (ZeroAccumulations.cpp). Returns how many.
int dropUnitDimensionSums(mlir::Operation *root);
/// One such sum: replaces `op`, unless the function returns it, with its
/// input without the unit dimensions (a tensor.collapse_shape made before
/// `op`), which it returns; null where `op` is no such sum.
mlir::Value dropUnitDimensionSum(mlir::linalg::GenericOp op,
                                 mlir::RewriterBase &rewriter);
/// On tensors: an elementwise generic that writes into an empty tensor
/// writes into an input of its result's type and map instead, where that
/// input is a linalg op's result it alone reads, so that bufferization
/// reuses the input's buffer (ZeroAccumulations.cpp). Returns how many.
int writeIntoDyingInputs(mlir::Operation *root);
/// soap-drop-zero-accumulations (dropZeroAccumulations on functions).
std::unique_ptr<mlir::Pass> createDropZeroAccumulationsPass();

/// soap-sparse-updates (on functions).
std::unique_ptr<mlir::Pass> createSparseUpdatesPass();

/// On tensors: a chain of linalg.matmul ops each accumulating into the
/// previous one's result (a weight's gradient summed over its uses) becomes
/// one product over the concatenated reduction dimension where that moves
/// fewer bytes (AccumulationChains.cpp). Returns the chains merged.
int mergeAccumulatingProducts(mlir::Operation *root);
/// Before the guards are lowered: a chain of such products that runs through
/// several soap.on_devices guards on the same devices (a layer pipeline's
/// LSTM weight gradient, one product per time step in each time step's
/// guard) moves into one guard on those devices before the op that reads
/// its sum, where mergeAccumulatingProducts merges it; the guards yield the
/// products' operands instead of the sum (AccumulationChains.cpp). Returns
/// the chains moved.
int gatherAccumulationChains(mlir::Operation *root);
/// soap-merge-accumulations (mergeAccumulatingProducts on functions).
std::unique_ptr<mlir::Pass> createMergeAccumulationsPass();

/// The loop nests runUpdatesByPlanes makes carry this unit attribute; trace
/// hooks bracket the nest, not the ops inside it.
inline constexpr const char *kPlaneUpdatesAttr = "soap_plane_updates";

/// On tensors: a chain of at least two elementwise updates of slices of
/// one tensor of at least `minBytes` (extract_slice, all-parallel generic,
/// insert_slice at the same place; the autodiff's max-pooling gradient, one
/// update per window offset), where every update spans the tensor's
/// leading dimensions whole, runs as one loop nest over those dimensions
/// with the updates inside (PlaneUpdates.cpp). Returns the chains rewritten.
int runUpdatesByPlanes(mlir::Operation *root, int64_t minBytes = 1 << 20);
/// soap-plane-updates (runUpdatesByPlanes on functions, any size).
std::unique_ptr<mlir::Pass> createPlaneUpdatesPass();

/// On tensors: independent reductions of one block over the same loops
/// that read one tensor through the same map (a batch norm's backward
/// sums) become one generic with all their outputs, which reads each input
/// once (SiblingReductions.cpp). Returns the merges made.
int mergeSiblingReductions(mlir::Operation *root);
/// soap-merge-reductions (mergeSiblingReductions on functions).
std::unique_ptr<mlir::Pass> createMergeSiblingReductionsPass();

/// kernels=blas: a contraction that reads a linalg.transpose reads the
/// transpose's input through the permuted map instead (as a linalg.generic),
/// so BLAS gets the transposition as strides and no copy is made; one
/// whose result only a permuting copy reads (permutingCopy: the autodiff's
/// transposed weight gradient of a linear layer, which the optimizer's
/// update would read strided) writes the copy's layout directly.
void foldTransposesIntoContractions(mlir::ModuleOp module);

/// kernels=blas, before fusion: a linalg.generic whose body reads two of
/// its inputs, with the windowed one (the image) not first, or beside
/// inputs it does not read, becomes the generic of those two, image first,
/// when that is a 2-D convolution (conv2dRoles) over the same loops. The
/// autodiff's input gradients (which carry the differentiated operand
/// unread, and read the spread adjoint last) then run as convolutions.
void normalizeConvolutionOperands(mlir::ModuleOp module);
/// kernels=blas: a 2-D convolution (conv2dRoles) that reads a
/// linalg.transpose, or whose result only a permuting copy reads, reads
/// or writes the transpose's other side through the permuted map (as a
/// linalg.generic): the runtime's convolution gets the layouts as strides,
/// and the autodiff's weight gradients (a convolution of transposed
/// tensors, transposed) copy nothing.
void foldTransposesIntoConvolutions(mlir::ModuleOp module);
/// soap-fold-transposes (the two folds above, on a module).
std::unique_ptr<mlir::Pass> createFoldTransposesPass();
/// replaceKernelsByBlasCalls as a pass (soap-kernel-calls), for tests.
std::unique_ptr<mlir::Pass> createKernelCallsPass();
/// Whether `op` (on tensors, not a contraction or a convolution) sums
/// over some of its loops into a fill of an empty tensor, every map a
/// projected permutation: it can write its result in any layout.
bool sumIntoFill(mlir::linalg::LinalgOp op);
/// A sum into a fill (sumIntoFill) whose result only a permuting copy
/// reads (permutingCopy: a weight gradient's parts summed over the batch
/// after owt's all_to_all, then transposed) writes the copy's layout
/// directly, so that the optimizer's update reads its gradient in order
/// (the strided writes run in tiles: TransposeTiles.cpp). Returns how many.
int foldTransposesIntoSums(mlir::ModuleOp module);
/// soap-tile-transposes (tileTransposingLoopNests on functions).
std::unique_ptr<mlir::Pass> createTileTransposesPass();

/// kernels=blas, before bufferization: a fill of a fresh tensor that
/// several ops write into becomes one fill per such use, so bufferization
/// fills each buffer instead of copying one filled buffer (but an
/// insertion into the fill at the slice an extraction of it feeds, which
/// updates it in place). A relayout copy (copyRelayout) already writes into
/// a fresh tensor of its own (emptyTensorPerUser), so that its buffer is
/// its own and the convolution that reads it can read its source instead
/// (KernelCalls.cpp).
void unshareInits(mlir::ModuleOp module);

/// One tensor.empty per user, made right before it (CpuLowering.cpp).
void emptyTensorPerUser(mlir::ModuleOp module);

/// How a relayout copy reads its source: for each source dimension, the
/// loop (= the copy's result dimension) it holds and whether it is read
/// backwards (`K - 1 - d`).
struct RelayoutRead {
  unsigned loop;
  bool backwards;
};
/// A linalg.generic (on tensors or buffers) that copies its one input into
/// its identity-mapped output through loops each read forwards or
/// backwards (a transpose, the autodiff's flipped filter): how it reads the
/// input; nothing for anything else.
std::optional<llvm::SmallVector<RelayoutRead>>
copyRelayout(mlir::linalg::GenericOp op);

/// `op` (on tensors) copies `source` through a permutation: a
/// linalg.transpose of it, or an all-parallel linalg.generic whose body
/// yields its one read input, `source`, or adds it to an output that starts
/// as zeros (the autodiff's first contribution to an adjoint), both read
/// and written through permutations, other inputs unread. The permutation
/// as linalg.transpose's (dimension j of the result is dimension perm[j]
/// of `source`); nothing for anything else.
std::optional<llvm::SmallVector<int64_t>> permutingCopy(mlir::Operation *op,
                                                        mlir::Value source);

/// A tensor that is another one's dimensions permuted: dimension j of it is
/// dimension perm[j] of `source`.
struct Transposed {
  mlir::Value source;
  llvm::SmallVector<int64_t> perm;
};
/// One transposing step (CpuLowering.cpp): a linalg.transpose, or a
/// linalg.generic that copies its input through permuted loops.
std::optional<Transposed> transposeStep(mlir::Value value);

/// kernels=blas, before fusion, on tensors (BroadcastContractions.cpp): a
/// contraction that reads a copy of a tensor broadcast along some of its
/// dimensions (a linalg.broadcast, or a linalg.generic that yields its one
/// input read through fewer loops), through transposes and broadcasts in
/// any order, reads that tensor itself through the composed map, when the
/// runtime's calls still take the product (matmulDimensions): torch-mlir's
/// linear layer on a 3-D input (its weight transposed, given a unit batch
/// dimension and broadcast along the batch into a batch_matmul) runs as one
/// GEMM, and the broadcast copy is never made.
void foldBroadcastsIntoContractions(mlir::ModuleOp module);
/// kernels=blas, before fusion, on tensors (BroadcastContractions.cpp): a
/// contraction whose result, started from zeros, only a sum over some of
/// its dimensions reads (a linalg.generic adding it into its output, other
/// inputs unread: the gradient of a broadcast, which sums the per-batch
/// weight gradients of a batch_matmul) adds into that sum's output itself,
/// those loops becoming reductions, when the runtime's calls still take it.
void foldSumsIntoContractions(mlir::ModuleOp module);
/// soap-fold-broadcasts (the two folds above, on a module), for tests.
std::unique_ptr<mlir::Pass> createFoldBroadcastsPass();

/// The (batch,) m, n and k loops of a contraction that the runtime's
/// matmul calls run (at most one of each, one k, no other loop; without a
/// batch loop, the outer of two m, n or k loops is the batch, with stride 0
/// in the operand that does not depend on it): what
/// replaceKernelsByBlasCalls makes a call of; nothing for other ops.
std::optional<mlir::linalg::ContractionDimensions>
matmulDimensions(mlir::linalg::LinalgOp op);

// replaceKernelsByBlasCalls, blasTakes, conv2dRoles:
// soap/codegen/BlasKernels.h.

/// The attribute that marks the placeholder functions of communication
/// calls (lowerCommunicationOps) with the runtime function each becomes.
inline constexpr const char *kCommCallAttr = "soap_comm_call";

/// The attribute that marks constants (memref.global) only the runtime's
/// host code reads (the device lists of communication calls): the GPU
/// lowering leaves them in host memory (copyGlobalsToDevice).
inline constexpr const char *kHostOnlyAttr = "soap_host_only";

/// A convolution that replaceKernelsByCalls is about to replace by a call
/// of the runtime: the op, its roles, the autodiff's flipped copy of the
/// filter that the call reads through (null when it reads its filter
/// operand) and how the copy reads its source, and whether the call writes
/// a view of the output instead of all of it (interiorOutput).
struct ConvolutionCall {
  mlir::Operation *op = nullptr;
  Conv2dRoles roles;
  mlir::Operation *relaidCopy = nullptr;
  llvm::SmallVector<RelayoutRead> relaidReads;
  bool writesView = false;
};
/// Which calls read or write weights kept in blocked layout, with the
/// block (filter, output; 0: plain), and which entry arguments hold them.
struct BlockedWeights {
  llvm::DenseMap<mlir::Operation *, std::pair<int64_t, int64_t>> calls;
  llvm::SmallVector<unsigned> arguments;
};
/// The buffers of `entry` (after bufferization) that can hold weights in
/// blocked layout with blocks of `block` across steps, given the
/// convolution calls about to be made (lib/codegen/BlockedWeights.cpp).
BlockedWeights findBlockedWeights(mlir::func::FuncOp entry,
                                  llvm::ArrayRef<ConvolutionCall> calls,
                                  int64_t block);

/// Tiles and vectorizes contractions and convolutions on tensors (before
/// bufferization); ops the vectorizer declines stay linalg.
/// With `skipBlasKernels`, ops that replaceKernelsByBlasCalls will take are
/// left alone.
void vectorizeKernels(mlir::ModuleOp module, bool skipBlasKernels);
/// After bufferization of vectorized kernels: hoists loop-invariant
/// transfers and lowers vector ops to forms LLVM handles well.
mlir::LogicalResult lowerVectorKernels(mlir::ModuleOp module);

/// Sinks ops without memory effects into the one soap.on_devices guard that
/// uses them and merges neighbouring guards on the same devices into one
/// (lib/codegen/Guards.cpp). lowerCommunicationOps calls it first.
void mergeGuards(mlir::ModuleOp module);
/// The soap-merge-guards pass (mergeGuards on a module).
std::unique_ptr<mlir::Pass> createMergeGuardsPass();
/// Replaces `guard` by one that also yields `values` (made inside it), which
/// replace them where they are used after it, and drops the results nothing
/// uses (Guards.cpp). Returns the new guard: its results are the old ones
/// still used, then one per value.
OnDevicesOp yieldAlso(OnDevicesOp guard, mlir::ValueRange values);

/// Where `op` can move up to in its block, walking up from it: `passes(at,
/// makes)` says whether the walk goes past `at` (`makes`: `at` makes what
/// `op` reads, directly or through ops collected). An op that makes it and
/// has no regions or memory effects (a slice, a rank-table lookup) is
/// collected into `makers` (in reverse block order) to move along; any
/// other maker ends the walk. Returns the op the walk stopped at, null at
/// the block's start.
mlir::Operation *
walkUpToMove(mlir::Operation *op,
             llvm::function_ref<bool(mlir::Operation *at, bool makes)> passes,
             llvm::SmallVectorImpl<mlir::Operation *> &makers);
/// Moves `makers` (as walkUpToMove collected them) and then `op` to right
/// after `after` (the start of `op`'s block if null).
void moveUpAfter(mlir::Operation *op, llvm::ArrayRef<mlir::Operation *> makers,
                 mlir::Operation *after);

/// Moves each soap.send outside loops up to right after what makes what it
/// sends (lib/codegen/CommunicationOps.cpp); lowerCommunicationOps calls it
/// on the CPU, where a send does not wait.
void sendEarly(mlir::ModuleOp module);
/// The soap-send-early pass (sendEarly on a module).
std::unique_ptr<mlir::Pass> createSendEarlyPass();

/// Before bufferization: soap.on_devices becomes an scf.if on the rank,
/// soap.rank a call of soaprt_rank, and every communication op a call of a
/// placeholder on buffers (a new buffer for its result). Fails with an
/// error on an op the runtime cannot run (element type, dynamic shape).
/// `hostBuffers` (the CPU): a guard's results are, on the other ranks,
/// views of uninitialized globals (one per result) instead of new buffers.
mlir::LogicalResult lowerCommunicationOps(mlir::ModuleOp module,
                                          bool hostBuffers);
/// The bytes an element of `type` takes in memory: i1 takes a whole byte,
/// as LLVM stores it.
int64_t elementBytes(mlir::ShapedType type);
/// A pointer (!llvm.ptr) to element 0 of `memref` (its aligned pointer
/// plus its offset), for calls of the runtime.
mlir::Value pointerTo(mlir::OpBuilder &b, mlir::Location loc,
                      mlir::Value memref);

/// After bufferization and deallocation: the placeholder calls become
/// calls of libsoaprt's soaprt_* communication functions. With
/// `startAllReduces`, an all-reduce is soaprt_all_reduce_start, waited for
/// (soaprt_wait) right before the first op that touches its buffers
/// (waitBeforeFirstUse).
void replaceCommunicationPlaceholders(mlir::ModuleOp module,
                                      bool startAllReduces = false);

/// On tensors, before prepareEntry: every soap.all_reduce moves up to right
/// after the op that computes its operand, never above another
/// communication op but an all-reduce (CommunicationOverlap.cpp).
void startAllReducesEarly(mlir::ModuleOp module);

/// Inserts `wait`(`handle`) after `start`, in its block, right before the
/// first op that touches any of `buffers` or the buffers they are views of
/// (or before the terminator); deallocations of them met before move after
/// the wait.
void waitBeforeFirstUse(mlir::OpBuilder &b, mlir::Operation *start,
                        mlir::Value handle, mlir::ValueRange buffers,
                        mlir::func::FuncOp wait);

/// Adds soap_train_step_packed (calling `function`, already in the LLVM
/// dialect with bare-pointer arguments), soap_model_info and
/// soap_init_data.
mlir::LogicalResult emitRuntimeInterface(mlir::ModuleOp module,
                                         llvm::StringRef function,
                                         const ModelDescription &description);

} // namespace soap::codegen

#endif // SOAP_LIB_CODEGEN_LOWERINGSTEPS_H

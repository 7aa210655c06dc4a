//===- CpuLowering.h - a training step to LLVM for x86-64 CPUs -*- C++ -*-===//
//
// lowerModuleForCpu turns a module with an entry function on tensors (the
// @train_step of docs/train-step.md) into the LLVM dialect: one-shot
// bufferization, results to out-params, deallocation, contractions and
// NCHW convolutions as calls of libsoaprt's BLAS kernels (or tiled and
// vectorized code), everything else as loops; then it adds the C ABI that
// the runtime driver reads (include/soap/Runtime/Runtime.h):
// soap_train_step_packed, soap_model_info and soap_init_data.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_CODEGEN_CPULOWERING_H
#define SOAP_CODEGEN_CPULOWERING_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <string>

namespace soap {

/// How contractions (matmul, batch_matmul, matvec, contraction generics)
/// and convolutions are compiled.
enum class KernelCodegen {
  /// Calls of libsoaprt's OpenBLAS-backed kernels (conv_2d_nchw_fchw by
  /// im2col + GEMM); other convolutions as Vector.
  Blas,
  /// Tiled for registers and vectorized (what soap-profile measures).
  Vector,
  /// Scalar loops (LLVM may vectorize them).
  Loops,
};

struct CpuLoweringOptions {
  /// The function to compile; it becomes soap_train_step.
  std::string entry = "train_step";
  KernelCodegen kernels = KernelCodegen::Blas;
  /// Brackets each linalg op with soaprt_op_begin/end(id).
  bool traceOps = true;
  /// All-reduces start early (MPI_Iallreduce) and are waited for at their
  /// first use (CommunicationOverlap.cpp).
  bool overlapComm = false;
  /// Elementwise chains run as one loop nest (ElementwiseFusion.cpp).
  bool fuseElementwise = true;
  /// Loop nests merge the adjacent loops their operands read contiguously
  /// (CollapseLoops.cpp).
  bool collapseLoops = true;
  /// Loop nests that walk an operand across its rows in their innermost
  /// loop run in tiles (TransposeTiles.cpp).
  bool tileTransposes = true;
  /// Loop nests whose innermost loops are reductions accumulate in
  /// registers (RegisterReductions.cpp).
  bool registerReductions = true;
  /// ... and their sums may be reassociated, so that LLVM vectorizes them.
  bool reassociateReductions = true;
  /// SGD updates of tables read by gathers scatter into the parameter
  /// (SparseUpdates.cpp).
  bool sparseUpdates = true;
  /// Products that accumulate into one another (a weight's gradient over
  /// its uses) run as one product (AccumulationChains.cpp).
  bool mergeAccumulations = true;
  /// kernels=blas: products read the tensors broadcast copies copy, and add
  /// into the sums that alone read them (BroadcastContractions.cpp).
  bool foldBroadcasts = true;
  /// Independent reductions over the same loops that read one tensor
  /// share a pass over their inputs (SiblingReductions.cpp).
  bool mergeReductions = true;
  /// Chains of elementwise updates of slices of one large tensor (a max
  /// pooling's gradient) run one plane of its leading dimensions at a time
  /// (PlaneUpdates.cpp).
  bool planeUpdates = true;
  /// Convolution weights stay in oneDNN's blocked layout across steps
  /// where nothing else touches them (BlockedWeights.cpp).
  bool blockedWeights = true;
  /// Stop once the kernels are formed (transposes folded, elementwise
  /// chains fused, sibling reductions merged), still on tensors and before
  /// trace hooks: the linalg ops left are the kernels the executable runs
  /// (soap-profile --program times them).
  bool stopAfterKernels = false;
};

/// Runs a pass pipeline on the module being lowered (a pass gives its
/// runPipeline; a tool may give a PassManager's run).
using PipelineRunner =
    llvm::function_ref<mlir::LogicalResult(mlir::OpPassManager &)>;

/// Lowers `module` in place; emits an error on the module (or the op
/// concerned) and fails when it cannot.
mlir::LogicalResult lowerModuleForCpu(mlir::ModuleOp module,
                                      const CpuLoweringOptions &options,
                                      PipelineRunner runPipeline);

/// The last step of the lowering: bufferized linalg, vector, memref and
/// arith/math to the LLVM dialect with bare-pointer calls. soap-profile
/// lowers its kernels with it, so that it times the code executables run.
const char *getCpuToLLVMPipeline();

/// The lowering's step before that pipeline (register-reductions): on
/// buffers, linalg.generic loop nests whose innermost loops are reductions
/// that no output reads become scf loops that carry the outputs' values
/// through those loops instead of loading and storing them every
/// iteration (lib/codegen/RegisterReductions.cpp; bitwise the same
/// results). With `reassociate`, the sums into those values are marked
/// fastmath<reassoc>, so that LLVM vectorizes them (results then differ
/// by rounding). Returns how many; soap-profile runs it on its kernels too.
int accumulateReductionsInRegisters(mlir::Operation *root, bool reassociate);

/// The lowering's step after collapse-loops (tile-transposes): on
/// buffers, a linalg.generic whose innermost loop is parallel and walks an
/// operand of at least 32 KiB across its rows (the loop is one of the
/// operand's dimensions but not its last: a transposed gradient that the
/// optimizer update reads, a sum that writes its result transposed) runs
/// in 16x16 tiles over that loop and the one the operand reads
/// contiguously (a parallel loop), every other loop in tiles of one
/// (lib/codegen/TransposeTiles.cpp; bitwise the same results). Returns how
/// many; soap-profile runs it on its kernels too.
int tileTransposingLoopNests(mlir::Operation *root);

/// The lowering's first step (sparse-updates): on tensors, an SGD update
/// p -/+ f(g) (f(g) = g, g * c or c * g) whose gradient g is a gather's
/// scatter-add nest from zeros, its only use, becomes that nest started
/// from p, each contribution x applied as p[i] -/+ f(x)
/// (lib/codegen/SparseUpdates.cpp; equal in real arithmetic, rounded per
/// contribution in floating point). Returns how many.
int scatterUpdatesIntoParameters(mlir::Operation *root);

/// Registers `soap-scf-to-cf` (lib/codegen/ScfToCf.cpp), which the lowering
/// pipelines use instead of upstream's convert-scf-to-cf; once is enough,
/// later calls do nothing.
void registerScfToCfPass();

/// Registers the passes the lowering pipelines name: soap-scf-to-cf,
/// soap-split-deallocs, soap-dealloc-after-last-use,
/// soap-inline-single-block-calls (lib/codegen/Deallocations.cpp),
/// soap-merge-guards (lib/codegen/Guards.cpp), soap-register-reductions
/// (lib/codegen/RegisterReductions.cpp), soap-tile-transposes
/// (lib/codegen/TransposeTiles.cpp), soap-sparse-updates
/// (lib/codegen/SparseUpdates.cpp) and the other steps' passes; once is
/// enough.
/// runParsed and getCpuToLLVMPipeline call it.
void registerLoweringPasses();

/// Adds the dialects the lowering creates to `registry` (call from a
/// pass's getDependentDialects).
void getCpuLoweringDependentDialects(mlir::DialectRegistry &registry);

} // namespace soap

#endif // SOAP_CODEGEN_CPULOWERING_H

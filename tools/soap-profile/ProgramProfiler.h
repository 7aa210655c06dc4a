//===- ProgramProfiler.h - time the kernels a training step runs -*- C++
//-*-===//
//
// soap-profile --program: instead of compiling each op of the model alone,
// builds the training step the executable runs (for one device and for
// every strategy asked for: --soap-apply-strategy, --soap-training-step,
// --soap-partition), lowers it as --soap-lower-cpu does up to the point
// where its kernels are formed (transposes folded into products,
// elementwise chains fused, sibling reductions merged), and times each
// kernel left, on its local shapes, as a kernel of its own. Each kernel
// counts for the op of the model it comes from: ops are tagged with their
// node before the training step, and the tag follows an op through the
// training step (its gradient ops carry it too, marked as backward work),
// the partitioner and fusion (a fused kernel keeps its consumer's). An op
// whose forward work fused into a later kernel costs nothing forward, and
// the kernel it fused into costs what the fused loop nest takes. The sums
// per op, per device, become the database's forward and backward times at
// the op's shard (the slowest device's). With --run, each program is
// lowered whole instead, linked by soap-translate and run (on its ranks),
// and each kernel's time comes from the running step's trace.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_TOOLS_PROFILE_PROGRAMPROFILER_H
#define SOAP_TOOLS_PROFILE_PROGRAMPROFILER_H

#include "KernelProfiler.h"

#include "mlir/IR/BuiltinOps.h"

#include <map>

namespace soap::profile {

struct ProgramProfileSummary {
  /// Programs built and timed (one device, then each strategy).
  int programs = 0;
  /// Kernels timed, and how many of them merged the work of several ops of
  /// the model (sibling reductions sharing a pass: each op counts an equal
  /// part).
  int kernels = 0;
  int mergedKernels = 0;
  /// Ops of the model whose forward work runs inside another op's kernel.
  int forwardFusedAway = 0;
  /// Kernels that belong to no op of the model (the partitioner's copies;
  /// without --run the optimizer update, which has entries of its own).
  int unattributed = 0;
  std::map<std::string, int> unattributedByOp;
  /// --run: copies outside the traced kernels and copies (each memref.copy
  /// the bufferization left is traced with the op it serves and counts for
  /// it), which carry no op, in seconds per step and rank, summed over the
  /// programs.
  double copySecondsPerStep = 0;
  /// Database entries written.
  int entries = 0;
  /// --run: the optimizer update's kernels timed (rank 0's), and the
  /// entries of updates and collectives as the steps ran them
  /// (ProfileDatabase::updateKey with a group, collectiveKey).
  int updateKernels = 0;
  int inStepEntries = 0;
  std::vector<std::string> notes;
};

/// Profiles the training steps of `module` (whose function `built` was
/// built from) on this CPU, for one device and the strategies of
/// `options`, with `optimizer` ("sgd", ...) and `loss` (the training
/// step's loss=: "none", "softmax-xent", "mse"), recording an entry per op and
/// shard in `db` (keys for devices of kind `deviceKind`). Fails with
/// `error` when a program cannot be built.
std::optional<ProgramProfileSummary>
profilePrograms(mlir::ModuleOp module, const BuiltOpGraph &built,
                const KernelProfileOptions &options,
                const std::string &optimizer, const std::string &loss,
                const std::string &deviceKind, ProfileDatabase &db,
                llvm::raw_ostream &os, std::string &error);

} // namespace soap::profile

#endif // SOAP_TOOLS_PROFILE_PROGRAMPROFILER_H

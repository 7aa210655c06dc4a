//===- KernelProfiler.h - measure the ops of a model ------------*- C++ -*-===//
//
// For every op of a model and every shard (loop extents) that the given
// strategies give it, compiles the op alone on buffers of the shard's local
// shapes (KernelCodegen.h), times it on this CPU, or on the GPU
// (GpuProfiler.h), and records it in a ProfileDatabase under the key the
// simulator's cost model looks up.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_TOOLS_PROFILE_KERNELPROFILER_H
#define SOAP_TOOLS_PROFILE_KERNELPROFILER_H

#include "KernelCodegen.h"

#include "soap/cost/CostModel.h"
#include "soap/graph/OpGraphBuilder.h"
#include "soap/machine/Machine.h"

#include "llvm/Support/raw_ostream.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace soap::profile {

class GpuShardTimer;

struct KernelProfileOptions {
  /// Strategy names (strategyByName) or strategy JSON files; each is applied
  /// at every count of `deviceCounts` (files carry their own count).
  std::vector<std::string> strategies = {"data-parallel"};
  std::vector<int> deviceCounts = {2};
  int warmup = 3;
  int repeat = 10;
  /// Stop measuring after this many seconds (what is measured is kept).
  double maxSeconds = 300;
  /// Skip a shard whose roofline estimate or first run exceeds this.
  double maxOpSeconds = 2;
  /// Skip a shard whose buffers need more bytes than this.
  int64_t maxBufferBytes = int64_t(1) << 30;
  Codegen codegen = Codegen::Blas;
  bool quiet = false;   ///< no line per measured kernel
  bool verbose = false; ///< say why a kernel was not vectorized
  /// Also compile each blas or vectorized kernel as scalar loops and compare
  /// their results (a check of the code generator and the BLAS calls).
  bool check = false;
  /// Also measure each shard's backward ops (autodiff's rule for the op,
  /// each op timed as a kernel); otherwise backward = forward × gradients.
  bool backward = true;
  /// When set (--device gpu), kernels are compiled for and timed on the
  /// GPU by it instead of on this CPU (`codegen` and `check` do not apply).
  GpuShardTimer *gpu = nullptr;
  /// --program --run: time each kernel inside the running training step
  /// (the executable soap-translate links, run with --trace for `repeat`
  /// steps after `warmup`; several ranks through `launcher`) instead of
  /// each kernel alone.
  bool runPrograms = false;
  /// --program --merge: keys the database already holds keep their entries
  /// (the programs of an earlier run measured those shards first).
  bool keepRecorded = false;
  /// Rounds in which each step runs once (the steps taking turns); the
  /// kernels are timed over each step's fastest quarter of steps of all
  /// its runs.
  int runs = 3;
  /// The MPI launcher and its options, before "-np N executable ...".
  std::vector<std::string> launcher = {"mpirun"};
  /// With runPrograms: a shell command run before each run of a step (empty:
  /// none); bench/validate.sh waits there for a quiet host.
  std::string beforeRun;
};

/// The strategies of `options` (named ones at each device count, and
/// files), each with a name for messages ("megatron on 2 devices"); fails,
/// naming it, for an unknown strategy or one that does not fit `graph`.
std::optional<std::vector<std::pair<std::string, Strategy>>>
resolveStrategies(const OpGraph &graph, const KernelProfileOptions &options,
                  std::string &error);

/// One op shard to measure.
struct ShardToMeasure {
  int node = -1;
  std::vector<int64_t> shard;
  std::string key;
  int nodesSharingKey = 1;
};

/// The distinct shards (by database key) of the linalg structured ops of
/// `built` under the whole-op placement and the strategies of `options` on
/// devices of kind `deviceKind`; other ops are listed in `skipped` as
/// "op name -> count". Fails, naming the strategy, for an unknown strategy
/// or one that does not fit the graph.
std::optional<std::vector<ShardToMeasure>>
collectShards(const BuiltOpGraph &built, const KernelProfileOptions &options,
              const std::string &deviceKind,
              std::vector<std::pair<std::string, int>> &skipped,
              std::string &error);

/// Local shapes of the tensor operands of node `node`'s op (inputs, then
/// outputs) for a task with loop extents `shard`: the index range each
/// operand dimension covers.
std::vector<std::vector<int64_t>>
localOperandShapes(const OpGraph &graph, int node,
                   const std::vector<int64_t> &shard);

/// What profileKernels did.
struct KernelProfileSummary {
  int measured = 0;
  /// On the GPU: measured kernels by what runs them (cublas, cudnn,
  /// kernel).
  std::map<std::string, int> byGpuLibrary;
  int blas = 0;       ///< measured kernels that call libsoaprt's BLAS
  int vectorized = 0; ///< measured kernels that Codegen::Vector compiled
  /// Shards not measured, with the reason (one line each).
  std::vector<std::string> notes;
  int notMeasuredForTime = 0; ///< left when the time budget ran out
  int checked = 0; ///< blas or vectorized kernels that matched loops
  int backwardMeasured = 0; ///< shards whose backward ops were timed
  std::vector<std::string> mismatches; ///< kernels that did not
};

/// Measures `shards` of `built`'s ops and records them in `db`: the
/// forward time (median of `repeat` runs after `warmup`), and the backward
/// time: the sum of the times of the ops the training step emits for the
/// op's gradients (options.backward), or, when they cannot be built or
/// compiled, the forward time times CostModel::gradientCount, marked
/// estimated.
/// `machine` names the device kind and gives the roofline estimate used to
/// skip shards too slow to measure. Prints a line per kernel unless quiet.
KernelProfileSummary profileKernels(const BuiltOpGraph &built,
                                    const std::vector<ShardToMeasure> &shards,
                                    const Machine &machine,
                                    const KernelProfileOptions &options,
                                    ProfileDatabase &db, llvm::raw_ostream &os);

} // namespace soap::profile

#endif // SOAP_TOOLS_PROFILE_KERNELPROFILER_H

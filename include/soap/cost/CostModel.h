//===- CostModel.h - time of a task on a device -----------------*- C++ -*-===//
//
// A task's time comes from the profile database when the same op, local
// shapes, dtype and device kind were measured; otherwise from a roofline
// estimate: launch overhead + max(FLOPs / (peak * efficiency), bytes /
// bandwidth), with per-device, per-op-class efficiency factors.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_COST_COSTMODEL_H
#define SOAP_COST_COSTMODEL_H

#include "soap/graph/OpGraph.h"
#include "soap/graph/ParallelConfig.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace soap {

class Machine;
enum class CollectiveKind;

/// Measured forward and backward times (seconds) of op shards, keyed by
/// op name, local operand shapes, dtype and device kind.
class ProfileDatabase {
public:
  struct Entry {
    double forward = 0;
    double backward = 0;
    /// The backward time was derived from the forward one (no backward ops
    /// were measured); "backward_estimated" in the JSON, optional.
    bool backwardEstimated = false;
    /// The backward time includes the adds that sum the op's input
    /// gradients into those of the tensor's other readers (its
    /// accumulatedReads): soap-profile --program times the program's
    /// kernels, those adds among them. "includes_gradient_sums" in the
    /// JSON, optional.
    bool includesGradientSums = false;
    /// The ranks of the training step that ran the kernels measured
    /// (soap-profile --program --run; 1: one device, or a kernel timed
    /// alone). "ranks" in the JSON, optional.
    int ranks = 1;
  };

  /// The key of node `node` of `graph` run with loop extents `shard` on a
  /// device of kind `deviceKind`: "linalg.matmul f32 [16x64,64x32,16x32] P100".
  /// A transposing or broadcasting copy (OpNode::relayoutCopy) costs nothing
  /// where the CPU lowering folds it into the products that read it, and a
  /// kernel where it cannot (a reader needs the copy moved): `madeCopy`
  /// names the latter, its key ending in " made".
  static std::string key(const OpGraph &graph, int node,
                         const std::vector<int64_t> &shard,
                         const std::string &deviceKind, bool madeCopy = false);

  /// `key` (an op's shard) as a training step on `ranks` ranks ran it,
  /// where an earlier program on another number of ranks measured the
  /// shard first (soap-profile --program --run: a whole op under model
  /// parallelism, which one device measured first): "<key> on x2". A rank's
  /// kernels share the host's cores, caches and memory with the others',
  /// and a waiting rank spins in MPI. CostModel prices a shard on a
  /// machine of that many devices by it first.
  static std::string onRanksKey(const std::string &key, int ranks);
  /// Whether any entry is keyed by onRanksKey for `ranks` ranks.
  bool hasOnRanksEntries(int ranks) const;

  /// The key of the optimizer update of `elements` parameter elements:
  /// "soap.update sgd [4096] f32 x86-64-core" (soap-profile measures a few
  /// sizes alone; the cost model interpolates). With `inStepGroup` > 0, the
  /// update as a training step ran it (soap-profile --program --run), its
  /// gradient all-reduced over a group of that many devices first (1: no
  /// all-reduce): "soap.update sgd [4096] f32 x86-64-core in-step x2".
  static std::string updateKey(const std::string &optimizer, int64_t elements,
                               const std::string &deviceKind,
                               int inStepGroup = 0);
  /// The measured update times of `optimizer` on `deviceKind` (alone, or in
  /// a step after an all-reduce over `inStepGroup` devices, as updateKey),
  /// by element count, sorted.
  std::vector<std::pair<int64_t, double>>
  updateCurve(const std::string &optimizer, const std::string &deviceKind,
              int inStepGroup = 0) const;
  /// The key of a blocking collective of kind `kind` over a group of
  /// `group` devices as a training step ran it, the time its last rank to
  /// arrive spent in it (soap-profile --program --run), `bytes` as
  /// Machine::collectiveCost counts them: "soap.all_reduce [4194304]
  /// x86-64-core in-step x2", "soap.reduce_scatter [65536] x86-64-core
  /// in-step x2".
  static std::string collectiveKey(CollectiveKind kind, int64_t bytes,
                                   const std::string &deviceKind, int group);
  /// Those times of `kind` on `deviceKind`: per group size, by bytes,
  /// sorted.
  std::map<int, std::vector<std::pair<int64_t, double>>>
  collectiveCurves(CollectiveKind kind, const std::string &deviceKind) const;

  std::optional<Entry> lookup(const std::string &key) const;
  void record(const std::string &key, Entry entry);
  size_t size() const { return entries.size(); }

  std::string toJSON() const;
  static std::optional<ProfileDatabase> fromJSON(const std::string &text,
                                                 std::string &error);
  static std::optional<ProfileDatabase> load(const std::string &path,
                                             std::string &error);
  /// Writes atomically (temporary file, then rename).
  bool save(const std::string &path, std::string &error) const;

private:
  std::map<std::string, Entry> entries;
};

/// A database entry that prices a shard of a node: measured for that shard
/// (`shard` is the one asked for), or for another shard of the same node,
/// the nearest in work: the same number of tasks split along another loop,
/// or the whole op (what soap-profile measures of every op). CostModel
/// scales the latter by the ratio of the two shards' roofline times.
struct ProfiledShard {
  ProfileDatabase::Entry entry;
  std::vector<int64_t> shard;
  bool exact = true;
};
std::optional<ProfiledShard>
findProfiledShard(const OpGraph &graph, int node,
                  const std::vector<int64_t> &shard,
                  const ProfileDatabase &profile, const std::string &deviceKind,
                  bool madeCopy = false);

/// How the ops of a strategy are priced: from the profile database (the
/// shard each op runs is in it), from another shard of the same op in it,
/// scaled (findProfiledShard), or by the roofline (no shard of the op was
/// measured: an op kind soap-profile skips), as CostModel::forwardTime
/// prices them. Ops that move no data and compute nothing (views) are in
/// none. `madeCopies`, per node (empty: none): a relayout copy that runs as
/// a kernel of its own, priced by its made entry (Simulator::madeCopies).
struct ProfileCoverage {
  int measured = 0;
  int scaled = 0;
  int roofline = 0;
  /// The ops priced by the roofline, by op name.
  std::map<std::string, int> rooflineByOp;
};
ProfileCoverage profileCoverage(const OpGraph &graph,
                                const std::vector<ParallelConfig> &configs,
                                const ProfileDatabase &profile,
                                const std::string &deviceKind,
                                const std::vector<char> &madeCopies = {});

/// Optimizers differ in the state they keep per parameter element.
enum class Optimizer { SGD, Momentum, Adam };
/// Copies of the parameters an optimizer keeps (0, 1, 2).
int optimizerStateCopies(Optimizer optimizer);
/// "sgd", "momentum", "adam" (the --soap-training-step names).
const char *optimizerName(Optimizer optimizer);
std::optional<Optimizer> parseOptimizer(const std::string &name);

class CostModel {
public:
  CostModel(const Machine &machine, const ProfileDatabase *profile = nullptr,
            Optimizer optimizer = Optimizer::SGD);

  /// Seconds to run one forward task of `node` with loop extents `shard`:
  /// the profile's time of that shard, or of the nearest shard of the node
  /// it measured scaled by the two shards' roofline ratio
  /// (findProfiledShard), else the roofline.
  /// `madeCopy`: a relayout copy run as a kernel of its own
  /// (ProfileDatabase::key).
  double forwardTime(const OpGraph &graph, int node,
                     const std::vector<int64_t> &shard, int device,
                     bool madeCopy = false) const;
  /// Seconds of its backward work: the gradient for every input that needs
  /// one, each costed like the forward task (or as the profile measured
  /// the op's backward ops), plus the adds of the node's accumulatedReads
  /// (accumulateTime of what the task reads of each).
  double backwardTime(const OpGraph &graph, int node,
                      const std::vector<int64_t> &shard, int device,
                      bool madeCopy = false) const;
  /// Seconds to apply the optimizer to `bytes` of f32 parameters on
  /// `device`, whose gradient an all-reduce over `syncGroup` devices made
  /// (1: none): interpolated from the profile's updates (linear in the
  /// element count) timed in training steps after an all-reduce over as
  /// many devices when it has them, else from those it timed alone, else
  /// the roofline.
  double updateTime(int64_t bytes, int device, int syncGroup = 1) const;
  /// Seconds of a collective of kind `kind` over `bytes` (as
  /// Machine::collectiveCost counts them) and `group` in a training step:
  /// the machine's time, times the ratio of the profile's collectives of
  /// that kind timed in training steps over as many devices to the
  /// machine's time for theirs (interpolated in log bytes, the nearest
  /// beyond them), when it has them. A step reduces and gathers tensors
  /// that its kernels just wrote, where the machine's calibration repeats
  /// one collective on the same buffers.
  double collectiveTime(CollectiveKind kind, int64_t bytes,
                        const std::vector<int> &group) const;
  /// Seconds to add a gradient of `bytes` of f32 to another (read two,
  /// write one): the profile's measured SGD updates when it has them (the
  /// same traffic), else the elementwise roofline.
  double accumulateTime(int64_t bytes, int device) const;
  /// The roofline estimate alone.
  double rooflineTime(double flops, double bytes, const std::string &dtype,
                      OpClass opClass, int device) const;

  Optimizer optimizer() const { return optimizerKind; }
  const Machine &machine() const { return target; }

  /// Number of gradients node `node`'s backward computes (inputs that are
  /// parameters or depend on them), at least 1 when it has backward work.
  static int gradientCount(const OpGraph &graph, int node);

private:
  /// The profile's entry for `shard` of `node` and the factor its times
  /// take (1 when measured for this shard).
  std::optional<std::pair<ProfileDatabase::Entry, double>>
  profiled(const OpGraph &graph, int node, const std::vector<int64_t> &shard,
           int device, bool madeCopy) const;

  const Machine &target;
  const ProfileDatabase *profile;
  Optimizer optimizerKind;
  /// Measured update times (profile), by element count: the optimizer's
  /// and SGD's.
  std::vector<std::pair<int64_t, double>> updateCurve, sgdCurve;
  /// Updates timed in training steps, by group size.
  std::map<int, std::vector<std::pair<int64_t, double>>> inStepUpdates;
  /// The profile has entries for as many ranks as the machine has devices
  /// (ProfileDatabase::onRanksKey), so profiled() looks for them.
  bool onRanksEntries = false;
  /// Collectives timed in training steps, by kind and group size.
  std::map<std::pair<CollectiveKind, int>,
           std::vector<std::pair<int64_t, double>>>
      inStepCollectives;
};

} // namespace soap

#endif // SOAP_COST_COSTMODEL_H

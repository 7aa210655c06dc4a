//===- Simulator.h - the execution simulator --------------------*- C++ -*-===//
//
// From an OpGraph, a Strategy and a Machine, builds the task graph (forward
// and backward tasks per shard, the collectives and transfers of each
// producer/consumer edge as lib/layout's reshard planner plans them for the
// partitioner, gradient all-reduces for parameters read on several
// devices, optimizer updates) and schedules it op by op: the tasks
// of one op and kind form a group, groups are taken in the partitioned
// program's order (then ready time, key), as each rank runs its part of
// the step, each task starts when it is ready and its resources (device,
// links) are free, and each resource serves tasks in the order they were
// taken.
//
// Delta simulation: after one op's config changes, only the tasks of that op
// and of its edges are rebuilt, and scheduling resumes after the last group
// the change cannot affect, from a checkpoint of the resources' state. Its
// report equals the full simulation's exactly.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_SIM_SIMULATOR_H
#define SOAP_SIM_SIMULATOR_H

#include "soap/cost/CostModel.h"
#include "soap/graph/Strategy.h"

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace soap {

class Machine;
enum class CollectiveKind;
namespace layout {
struct Layout;
struct SharedCompletion;
struct ReshardPlan;
struct TensorShape;
} // namespace layout

struct SimOptions {
  /// Simulate a training step (backward, gradient sync, updates); otherwise
  /// the forward pass only.
  bool training = true;
};

/// One communication of a simulated step: a collective over `group`
/// ("all_reduce", "all_gather", "reduce_scatter", "all_to_all",
/// "broadcast"; `bytes` as Machine::collectiveCost counts them) or a
/// point-to-point transfer ("send", group = {from, to}).
struct CommStep {
  std::string kind;
  std::vector<int> group;
  int64_t bytes = 0;
  /// What it moves, for people reading a mismatch: "forward edge
  /// linalg.matmul (m.mlir:3:8) -> linalg.generic (m.mlir:4:8)",
  /// "gradient of parameter 'fc.weight'", ...
  std::string what;
};

/// What each device holds at one point of the step, in the partitioned
/// program's order (lib/sim/Memory.cpp): an op's forward work, its backward
/// work, or the optimizer's updates.
struct MemoryPoint {
  std::string what;           ///< "forward linalg.matmul (model.mlir:12:8)"
  std::vector<int64_t> bytes; ///< per device
};

/// What a simulation predicts.
struct SimReport {
  double stepTime = 0;                   ///< seconds
  std::vector<double> deviceBusy;        ///< seconds of compute per device
  std::vector<int64_t> devicePeakMemory; ///< bytes per device (liveness)
  std::vector<int64_t> linkBytes;        ///< bytes carried per machine link
  int64_t totalCommBytes = 0;            ///< transfers + collective traffic
  int64_t numTasks = 0;
  /// How the ops were priced, where a profile database was given
  /// (profileCoverage; set by the caller, not compared).
  std::optional<ProfileCoverage> coverage;
  /// Memory at every point of the step (Simulator::memoryTimeline; set by
  /// the caller, not compared).
  std::vector<MemoryPoint> memoryTimeline;

  bool operator==(const SimReport &other) const;
  /// The JSON report of --soap-simulate.
  std::string toJSON(const class Machine &machine) const;
};

enum class TaskKind : uint8_t {
  Forward,
  Backward,
  Transfer,
  GradTransfer,
  AllReduce,
  Update,
  /// A collective of a reshard (lib/layout's all_gather, all_to_all, ...).
  Collective
};
const char *taskKindName(TaskKind kind);

class Simulator {
public:
  Simulator(const OpGraph &graph, const CostModel &cost,
            SimOptions options = {});
  ~Simulator();

  /// Full simulation of `strategy` (which must validate against the graph
  /// and the machine).
  SimReport simulate(const Strategy &strategy);

  /// Changes node `node`'s config in the last simulated strategy and
  /// re-simulates incrementally. Requires a prior simulate().
  SimReport simulateDelta(int node, const ParallelConfig &config);
  /// The same for several ops changed at once (their shared edges and
  /// parameters are rebuilt once).
  SimReport
  simulateDelta(const std::vector<std::pair<int, ParallelConfig>> &changes);

  /// Reverts the last simulateDelta call (only that one), restoring the task
  /// graph, the strategy and the schedule as they were; false when there
  /// is nothing to undo. Cheaper than a second delta back.
  bool undo();

  /// The strategy of the last (delta) simulation.
  const Strategy &strategy() const { return current; }

  /// Chrome trace JSON of the last schedule: one event per task, one
  /// process per device and per link.
  std::string chromeTrace() const;
  /// The communication of the last simulation, in a fixed order: what the
  /// partitioned program must emit for the same strategy.
  std::vector<CommStep> communication() const;
  /// What each device holds at each point of the last simulated step (its
  /// peaks are the report's devicePeakMemory).
  std::vector<MemoryPoint> memoryTimeline();
  /// Per node of the last simulated strategy: whether it is a relayout copy
  /// that runs as a kernel of its own (copyIsMade), priced by its profile
  /// entry's made key (profileCoverage).
  std::vector<char> madeCopies();

private:
  struct Task;
  struct Group;
  struct NodeTasks;
  struct EdgeTasks;
  struct Placement;
  struct UndoLog;
  struct Accounts;
  struct TransferPath;
  struct ParameterTasks;

  void buildAll();
  /// The config under which a tensor.pad `node`, whose own config the
  /// partitioner cannot follow, runs: each task pads one producer task's
  /// block of the source, where the producer splits only unpadded
  /// dimensions, one block per device (SpmdPartitioner's
  /// partitionPassThrough); none when it runs whole everywhere.
  std::optional<ParallelConfig> padPassThroughConfig(int node);
  /// Sets lazyGradients.
  void findLazyGradients();
  /// Sets adjointReaders (after findLazyGradients).
  void findAdjointReaders();
  /// Sets wholeViews.
  void findWholeViews();
  /// The steps that make the loss `node` writes whole on every device.
  void buildReturn(int node);
  void buildNode(int node);
  /// Whether `reader`'s operand from `producer` (its edge's producer
  /// end) comes to `device` through a collective of that edge's reshard.
  bool readsThroughCollective(int producer, int reader, int device) const;
  /// Whether a reshard of `producer`'s result for any reader sends from,
  /// or takes part in a collective on, `device` (`gradient`: a reshard of
  /// the readers' gradients back to it that brings some to `device`).
  bool communicatesFrom(int producer, int device, bool gradient) const;
  /// Whether some task of `edge`'s reshard satisfies `pred`.
  bool anyReshardTask(int edge,
                      const std::function<bool(const Task &)> &pred) const;
  void buildEdge(int edge);
  /// The readers (node, access) of `tensor`, made by `producer`, that
  /// have backward work and read its value, in consumersOf's order.
  std::vector<std::pair<int, int>> gradientReadersOf(int producer,
                                                     int tensor) const;
  /// The readers (node, access) of `tensor`, made by `producer`, when
  /// they are two or more slices of disjoint parts of it (an LSTM's gates):
  /// their gradients, zero elsewhere, add up without moving
  /// (SpmdPartitioner::addDisjointParts) and reach the producer as one
  /// value. In program order; empty otherwise.
  std::vector<std::pair<int, int>> disjointSliceReaders(int producer,
                                                        int tensor);
  /// Whether `node` is a view (a slice, reshape, concatenation or static
  /// pad) whose operands are all whole on every device: inputs,
  /// parameters that their synchronization keeps whole everywhere, results
  /// of replicated ops (not fills), such views of them. The partitioner
  /// runs it whole everywhere, where its operands are, and its backward
  /// work by its config.
  bool viewOfWholeOperands(int node);
  /// Whether reads of `node` from two or more producers have gradients that
  /// are its adjoint itself (NodeAccess::gradientIsAdjoint): one value,
  /// whose reshards for one producer serve the others.
  bool sharesAdjointCopies(int node) const;
  /// The readers of the result of `node`, a pad, reshape or concatenation
  /// that is not replicated, when they are all replicated: its adjoint is
  /// then whole on every device, where the partitioner runs its backward
  /// view. Empty otherwise.
  std::vector<std::pair<int, int>> wholeAdjointReaders(int node);
  /// The readers (node, access) of `tensor`, made by the replicated op
  /// `producer`, whose gradients the training step adds where the first
  /// reader's gradient is before the producer's backward work takes the
  /// sum whole (SpmdPartitioner::normalizeOperands: an adjoint sum read by
  /// an op without a config): each gradient one block per device, none
  /// whole everywhere, or complete parts of several tasks per device (which
  /// move alone), not all in one layout, one reader's complete,
  /// no contraction accumulating the sum in place, no lazy transpose. In
  /// program order; empty when the gradients move as buildEdge's other
  /// readers' do.
  std::vector<std::pair<int, int>> addendsSummedAtFirst(int producer,
                                                        int tensor);
  /// A parameter's synchronization (lib/sim/Parameters.cpp): owned (its
  /// readers' gradients in different layouts are summed where the first
  /// reader's is, updated and kept there) when buildOwnedParameter
  /// applies, else shared (all-reduced among the devices that read a
  /// region, updated on each).
  void buildParameter(int tensor);
  bool buildOwnedParameter(int tensor);
  /// One reader whose gradient's layout no update without a config runs in
  /// (layout::isGridLayout): gathered whole to every device and updated
  /// there.
  bool buildGatheredParameter(int tensor);
  void buildSharedParameter(int tensor);
  /// The tasks that bring each reader of a parameter kept in `held` (one
  /// layout per piece, there at the start of the step) its blocks, in
  /// `steps`; the readers' forward tasks wait for them
  /// (ParameterTasks::forwardDeps).
  void readKeptParameter(int tensor, std::vector<layout::Layout> held,
                         std::vector<std::vector<int>> &steps);
  /// Where group `id`'s work lies in the partitioned program's order by
  /// what it is alone (its tasks' key; 0: right after its predecessors).
  /// Its place is the largest of that and its predecessors' places.
  int64_t programPosition(int id) const;
  /// An update of `bytes` of parameter `tensor` on `device` after `preds`;
  /// `inScatter`: applied inside a gather's scatter-add (sparseSgdStep), no
  /// work of its own. sealGroup prices it (priceUpdate).
  int addUpdate(int tensor, int region, int device, int64_t bytes,
                const std::vector<int> &preds, bool inScatter = false);
  /// Update task `id`'s time, once its predecessors are linked: as the
  /// training step runs it after what they are (syncGroupOf).
  void priceUpdate(int id);
  /// The devices of the all-reduce whose result update task `update`
  /// reads (1: none), through the backward tasks of ops that only move
  /// elements (the lowering moves a transpose of a weight gradient ahead
  /// of its all-reduce), as soap-profile keys the updates a step ran
  /// (ProgramTags' sizeUpdates): right after an all-reduce, the gradient
  /// is what the other ranks' writes made.
  int syncGroupOf(int update) const;
  /// Whether `node` only moves the elements of its one input (a transpose,
  /// a reshape): its backward moves the gradient back.
  bool movesElementsOnly(int node) const;
  /// Whether the SGD step of parameter `tensor` goes into the scatter-add
  /// of the one gather that reads it as its table, where no all-reduce
  /// sums its gradient (--soap-lower-cpu's sparse-updates).
  bool sparseSgdStep(int tensor) const;
  /// Adds `devices` to a communication task's resources when the machine's
  /// devices cannot compute while their data moves.
  void occupyDevices(Task &task, const int *first, const int *last);
  /// The route from src to dst and its cost, computed once per source.
  const TransferPath &path(int src, int dst);
  /// A point-to-point transfer task over the route from src to dst that
  /// waits for `preds`.
  int addTransfer(TaskKind kind, const std::array<int32_t, 6> &key,
                  int64_t bytes, int src, int dst,
                  const std::vector<int> &preds);
  /// A collective task over `group` priced by Machine::collectiveCost.
  int addCollective(CollectiveKind kind, const std::array<int32_t, 6> &key,
                    int64_t bytes, const std::vector<int> &group,
                    const std::vector<int> &preds);
  static bool sameBlocksOnSameDevices(const Placement &pp, size_t pa,
                                      const Placement &cp, size_t ca,
                                      bool backward,
                                      std::vector<int> &producerOf,
                                      std::vector<int> &consumerOf);
  /// layout::planReshardBesideCopies (the pieces from `firstCopy` on are
  /// copies earlier readers made), remembered by its arguments.
  const layout::ReshardPlan &planFor(const layout::TensorShape &shape,
                                     const std::vector<layout::Layout> &pieces,
                                     const layout::Layout &target,
                                     bool zerosElsewhere,
                                     size_t firstCopy = SIZE_MAX);
  struct SlotLayouts;
  /// What slotLayouts describe of an access: each task's block of it, its
  /// gradient of it (partial sums where tasks read the same elements), or
  /// what the tasks write (partial sums where a split reduction leaves
  /// them for the readers to combine: Placement::partialOutputs).
  enum class SlotKind { Blocks, Gradients, Produced };
  /// The layouts of one access of a placement, one per slot (kept with the
  /// placement).
  const SlotLayouts &slotLayouts(const Placement &p, size_t access,
                                 SlotKind kind) const;
  SlotLayouts buildSlotLayouts(const Placement &p, size_t access,
                               SlotKind kind) const;
  /// Whether an op reads the tensor `node` writes through access `access`.
  bool hasReaders(int node, size_t access) const;
  /// The gradients of a broadcast read (Placement::expandedGradient) in
  /// several pieces, joined into one whole block on each device that holds
  /// some, where those pieces tile the tensor there; none otherwise.
  std::optional<SlotLayouts> joinedOnHolders(const Placement &p, size_t access,
                                             const SlotLayouts &pieces) const;
  /// The tasks that make piece `piece`'s block on `device` (none: it is
  /// not there).
  using SourceTask = std::function<std::vector<int>(int piece, int device)>;
  /// Adds the tasks of `plan`'s steps (transfers, or gradient transfers
  /// when not `forward`, and collectives), one group per step appended to
  /// `groups`; returns, per device, the tasks its result waits for.
  std::vector<std::vector<int>>
  addPlanTasks(const layout::ReshardPlan &plan, bool forward,
               const std::array<int32_t, 6> &base, const SourceTask &sourceOf,
               int64_t elementBytes, std::vector<std::vector<int>> &groups);
  /// Adds the all-reduces that complete partial sums held in several
  /// slots (layout::completeSharedPartials), one per group of devices, key
  /// `base` with its fourth field the group, each after the tasks
  /// `sourceOf` names for the group's partials; appends them as one group
  /// to `groups`. Returns, per piece of the complete value
  /// (SharedCompletion::pieces) and device, the tasks after which its
  /// block there is complete.
  std::vector<std::vector<std::vector<int>>>
  addCompletionTasks(const layout::SharedCompletion &completion,
                     const layout::TensorShape &shape,
                     std::array<int32_t, 6> base, const SourceTask &sourceOf,
                     std::vector<std::vector<int>> &groups);
  void linkForward(int node);
  void linkBackward(int node);
  /// Appends to the preds of each task `ids[i]` its dependencies from one
  /// edge, deps[start[i] .. start[i + 1]) (groupByTask's flat lists).
  void appendEdgeDeps(const std::vector<int> &ids,
                      const std::vector<int> &start,
                      const std::vector<int> &deps);
  void removeNode(int node, std::vector<int> &removed);
  void removeEdge(int edge, std::vector<int> &removed);
  int newTask();
  /// Makes the tasks one group (nothing when empty; returns -1 then) and
  /// counts them in the report's totals.
  int addGroup(std::vector<int> taskIds);
  /// Takes a group's tasks out (their ids go to `removed`), keeps the
  /// group for undo() and frees its id.
  void removeGroup(int group, std::vector<int> &removed);
  /// Rebuilds a group's scheduling view from its tasks' predecessors.
  void sealGroup(int group);
  /// Adds (sign 1) or takes out (-1) a task's or an op's share of the
  /// report's totals (busy time, traffic, memory).
  void accountTask(const Task &task, int sign);
  /// Sets the report's peak memory per device from the buffers' lifetimes
  /// in program order (lib/sim/Memory.cpp), and `timeline` when given.
  void accountMemory(std::vector<MemoryPoint> *timeline);
  /// Adds (sign 1) or takes out (-1) what a transfer's destination holds
  /// over the memory timeline (Accounts::received).
  void accountReceived(const Task &task, int sign);
  /// A device's row in the memory timeline's difference arrays: one entry
  /// per point (an op's forward and backward work, the updates) and one
  /// past the last.
  size_t memoryStride() const { return 2 * graph.nodes.size() + 2; }
  /// When a group is ready in the current schedule; each of its tasks'
  /// ready times is appended to `taskReady` when given.
  double readyTimeOf(const Group &group,
                     std::vector<double> *taskReady) const;
  /// Keeps the schedule's first `prefix` groups and schedules the rest.
  void schedule(size_t prefix, bool logForUndo);
  SimReport report() const;
  const Placement &placement(int node);
  /// Whether gather `node`, placed as `p` (one task on every device, its
  /// table's rows not split), runs its gradient whole on each device, as
  /// the partitioner does by layout::scatterRunsWhole:
  /// its tasks would each hold a partial sum of the table, and the table
  /// is larger than what the gradient reads (the output's gradient and the
  /// gather's other inputs, whole).
  bool scatterRunsWhole(int node, const Placement &p) const;
  /// An access's block whole on each device of `p`'s tasks (one task per
  /// device), complete: a wholeScatter gather's gradients, and what its
  /// backward work reads of its output's gradient.
  SlotLayouts wholeOnDevices(const Placement &p, size_t access) const;
  /// Whether the relayout copy `node` (placed as `p`) runs as a kernel of
  /// its own: a reader is no product (nor another such copy), or reads a
  /// block of it on a device where the copy does not make that block (it
  /// moves there). Otherwise the CPU lowering folds it into its readers.
  bool copyIsMade(int node, const Placement &p);

  const OpGraph &graph;
  const CostModel &cost;
  const Machine &machine;
  SimOptions options;
  Strategy current;

  /// Per op: the ops it reads from and those that read it, and the ids of
  /// those edges (indices into edgeEnds and edges).
  std::vector<std::vector<int>> producersOf, consumersOf;
  /// A transpose whose gradient the training step transposes lazily (the
  /// gradient transpose has no config: each reader transposes what it
  /// reads), so that its backward work is nothing and its producer's
  /// gradient comes from its one reader's (node `reader`, access `access`)
  /// with the dimensions permuted: input dimension j is output dimension
  /// outputDim[j]. Per node; reader -1 for every other op.
  struct LazyGradient {
    int reader = -1, access = -1;
    std::vector<int> outputDim;
  };
  std::vector<LazyGradient> lazyGradients;
  /// Per node that accumulates into an init it reads (a bias broadcast
  /// into a convolution's output): the one reader with backward work of
  /// its result (node, access), whose gradient is the result's adjoint,
  /// which the training step gives the init as its gradient; the
  /// partitioner moves it from that reader's layout, not through the
  /// node's blocks; {kSeedAdjoint, -1} when the result is the loss, whose
  /// adjoint every device makes. {-1, -1} for every other node.
  std::vector<std::pair<int, int>> adjointReaders;
  static constexpr int kSeedAdjoint = -2;
  /// Whether the tasks of split-reduction `consumer` take the init they
  /// read through access `ca` from `producer`'s blocks where they run
  /// (SpmdPartitioner::accumulatingInit, embeddedInit): the producer's
  /// partial sums in exactly the consumer's blocks, or parts that tile the
  /// block of each group of tasks writing one block.
  bool initStaysLocal(int producer, size_t pa, int consumer, size_t ca);
  /// The blocks of a lazy transpose's input gradient: its reader's
  /// gradient blocks, dimensions permuted.
  SlotLayouts lazyGradientLayouts(const LazyGradient &lazy);
  /// One addend of a gradient sum: the layouts of its pieces (several
  /// where a device runs several of its reader's tasks) and, per piece and
  /// device, the tasks that made it there.
  struct GradientAddend {
    std::vector<const layout::Layout *> pieces;
    std::vector<std::vector<std::vector<int>>> madeBy; ///< [piece][device]
  };
  /// The sum of `addends` in `target` (the partitioner's materializeSum):
  /// the addends of one layout add up where they are, then each such group
  /// (and each addend of several pieces, alone) moves there as lib/layout
  /// plans it, its steps keyed from `base` with base[3] counting plans.
  /// Per device, the tasks its block waits for.
  std::vector<std::vector<int>>
  gradientSumIn(const std::vector<GradientAddend> &addends,
                const layout::Layout &target, const layout::TensorShape &shape,
                bool zerosElsewhere, std::array<int32_t, 6> &base,
                std::vector<std::vector<int>> &groups);
  /// The gradient blocks of `reader`'s access `access`: its own, or,
  /// through a lazy transpose, its reader's permuted (kept in `storage`).
  const SlotLayouts &readerGradients(int reader, int access,
                                     SlotLayouts &storage);
  /// Whether the training step's gradient of `node`'s operand `access`
  /// is a contraction or convolution into zeros, which the sum so far of
  /// the operand's gradient becomes the init of (accumulated in place:
  /// autodiff::GradientBuilder::accumulate): a matmul's operands, a
  /// convolution's input when its windows read all of it.
  bool accumulatesInPlace(int node, int access);
  /// Whether ops `a` and `b` run by one config (both replicated, or the
  /// same degrees on the same devices), as the training step compares
  /// their soap.config.
  bool sameConfig(int a, int b);
  /// Whether the configs of `readers` (node, access; in program order)
  /// interleave, one coming back after another
  /// (autodiff::GradientBuilder::interleaved).
  bool configsInterleave(const std::vector<std::pair<int, int>> &readers);
  /// The readers (node, access) of `tensor`, made by `producer`, in the
  /// backward pass's order, when one of them other than the first
  /// accumulates the sum so far of the gradient in place: each reader's
  /// gradient one complete block per device, one access per reader, no
  /// lazy transpose, no configs that come back after another
  /// (GradientBuilder::interleaved). Empty otherwise.
  std::vector<std::pair<int, int>> inPlaceChain(int producer, int tensor);
  /// For each reader of `chain` (the backward pass's order), whether the
  /// sum its gradient joins already has an addend: the value's own sum, or
  /// the adjoint of the erased identity copy it reads through
  /// (NodeAccess::viaCopyBefore), which joins the value's own sum when the
  /// backward pass reaches the copy.
  std::vector<bool>
  joinsStartedSum(const std::vector<std::pair<int, int>> &chain) const;
  /// The steps of an in-place chain's gradient sum (inPlaceChain's
  /// `chain`): the sum so far moves to each reader that accumulates into
  /// it, the other readers' gradients are addends summed where their
  /// reader needs them, and the sum reaches `target` (the producer's
  /// blocks). Per target slot and device, the tasks its block waits for.
  std::vector<std::vector<std::vector<int>>>
  chainedGradientSum(const std::vector<std::pair<int, int>> &chain,
                     int producer, const SlotLayouts &target,
                     std::vector<std::vector<int>> &groups);
  /// The op (and its access) whose backward work computes the gradient
  /// that the reader `node` of a parameter takes (access `access`): the
  /// reader, or the reader of a lazily transposed parameter.
  std::pair<int, int> gradientReader(int node, int access) const {
    const LazyGradient &lazy = lazyGradients[node];
    return lazy.reader >= 0 ? std::make_pair(lazy.reader, lazy.access)
                            : std::make_pair(node, access);
  }
  /// Per node: a view (a slice, reshape, concatenation or static pad) of
  /// tensors whole on every device whatever the strategy (inputs,
  /// constants, such views of them): it runs whole everywhere, where its
  /// operands are, whatever its config says, as the partitioner runs it.
  std::vector<char> wholeViews;
  std::vector<std::vector<int>> producerEdges, consumerEdges;
  std::vector<std::pair<int, int>> edgeEnds; ///< (producer, consumer)
  std::vector<Task> tasks;
  std::vector<int> freeIds;
  std::vector<Group> groups;
  std::vector<int> freeGroupIds;
  std::vector<char> changedGroup; ///< rebuilt or relinked by this delta
  std::vector<int> changedGroups;
  std::vector<NodeTasks> nodeTasks;
  std::vector<EdgeTasks> edges;
  std::vector<std::unique_ptr<Placement>> placements;
  std::unique_ptr<UndoLog> undoLog;
  std::unique_ptr<Accounts> accounts;
  /// accountMemory's difference arrays, and what it needs of the graph
  /// alone (built on first use).
  struct MemoryPlan;
  MemoryPlan &memoryPlan();
  std::vector<int64_t> memoryScratch;
  std::unique_ptr<MemoryPlan> memoryPlanCache;
  /// Per parameter tensor: the tasks of its synchronization, and the
  /// (node, access) pairs that read it; per node, the parameters it reads.
  std::vector<ParameterTasks> parameterTasks;
  std::vector<std::vector<std::pair<int, int>>> parameterReaders;
  std::vector<std::vector<int>> parametersReadBy;

  // The last schedule: every task's end (it started `duration` before);
  // per group, its ready time and its place in the program's order
  // (programPosition); the groups in the order they were taken, with their
  // places (non-decreasing); every kCheckpoint groups, the resources' free
  // times and the latest end so far.
  std::vector<double> endTime, groupReady;
  std::vector<int64_t> groupPosition;
  std::vector<int> order;
  std::vector<int64_t> orderPosition;
  std::vector<double> checkpointFree, checkpointEnd;
  double scheduleEnd = 0;
  bool haveSchedule = false;
  // Scratch space of schedule(), kept to avoid reallocating it.
  std::vector<double> readyScratch, resourceFree;
  std::vector<int> remaining, succStart, succFill, succ, suffix;
  std::vector<char> inSuffix;
  // Scratch space of buildEdge(): (consumer task, dependency) and
  // (producer task, dependency) pairs.
  std::vector<std::pair<int, int>> fwdPairs, bwdPairs;
  struct PlanCache;
  std::unique_ptr<PlanCache> plans;
  /// Per source device, once used: the path to every device.
  std::vector<std::vector<TransferPath>> paths;
  bool overlapsCommunication = false;
};

} // namespace soap

#endif // SOAP_SIM_SIMULATOR_H

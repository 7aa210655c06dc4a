//===- ProgramProfiler.cpp - time the kernels a training step runs --------===//

#include "ProgramProfiler.h"
#include "CalibrationMath.h"
#include "ProgramTags.h"
#include "StepTraces.h"

#include "soap/Dialect/SoapDialect.h"
#include "soap/codegen/BlasKernels.h"
#include "soap/codegen/CpuLowering.h"
#include "soap/machine/Machine.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Matchers.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

extern char **environ;

using namespace mlir;

namespace soap::profile {

namespace {

/// One program to build: a name for messages and the strategy (none: one
/// device, every op whole).
struct Program {
  std::string name;
  std::optional<Strategy> strategy;
};

/// Per node: seconds of forward and backward kernels on each device (key
/// -1: kernels every device runs). No forward entry: its forward work runs
/// in another op's kernel.
struct NodeTimes {
  std::map<int64_t, double> forward, backward;
};

double slowestDevice(const std::map<int64_t, double> &byDevice) {
  double everywhere = 0;
  auto it = byDevice.find(-1);
  if (it != byDevice.end())
    everywhere = it->second;
  double slowest = everywhere;
  for (const auto &[device, seconds] : byDevice)
    if (device >= 0)
      slowest = std::max(slowest, everywhere + seconds);
  return slowest;
}

/// What timing a program's kernels found, before it goes into the summary.
struct KernelTimes {
  std::map<int, NodeTimes> times;
  /// Kernels timed, and those of them that merged several ops' work.
  int kernels = 0, merged = 0;
  /// Kernels of no op of the model, by op name.
  int unattributed = 0;
  std::map<std::string, int> unattributedByOp;
  /// --run: the runtime's copies per step and rank (seconds).
  double copySeconds = 0;
  /// --run: the step as it ran (the median of the fastest quarter of the
  /// steps, the slowest rank's), seconds.
  double stepSeconds = 0;
  /// --run: per parameter and rank, its update (tag, seconds), and the
  /// update kernels timed.
  std::map<std::pair<int, int>, std::pair<UpdateTag, double>> updates;
  int updateKernels = 0;
  /// --run: per (kind, bytes, group size), a blocking collective's seconds
  /// in the rank that arrived last (the least time of its ranks).
  std::map<CollectiveSize, double> collectives;
};

/// Charges `seconds` of a kernel to the ops `tags` name (those of no node
/// of the `numNodes` dropped), an equal part each: on `rank` when given
/// (a kernel timed in the running step), else on each tag's devices (-1:
/// every device). A kernel of no op is counted under `opName`.
void chargeKernel(std::vector<Tag> tags, double seconds, size_t numNodes,
                  std::optional<int64_t> rank, StringRef opName,
                  KernelTimes &out) {
  llvm::erase_if(tags, [&](const Tag &tag) {
    return tag.node < 0 || static_cast<size_t>(tag.node) >= numNodes;
  });
  bool counted = !rank || *rank == 0;
  if (tags.empty()) {
    if (counted) {
      ++out.unattributed;
      ++out.unattributedByOp[opName.str()];
    }
    return;
  }
  if (counted) {
    ++out.kernels;
    out.merged += tags.size() > 1;
  }
  double share = seconds / static_cast<double>(tags.size());
  for (const Tag &tag : tags) {
    NodeTimes &node = out.times[tag.node];
    std::map<int64_t, double> &byDevice =
        tag.backward ? node.backward : node.forward;
    if (rank)
      byDevice[*rank] += share;
    else if (tag.devices.empty())
      byDevice[-1] += share;
    else
      for (int64_t device : tag.devices)
        byDevice[device] += share;
  }
}

/// Runs `program` and waits, its output in `log`; false with `error` (the
/// end of the log) when it cannot start or fails.
bool runAndWait(StringRef program, ArrayRef<StringRef> args,
                std::optional<ArrayRef<StringRef>> environment, StringRef log,
                StringRef what, std::string &error) {
  std::optional<StringRef> redirects[] = {std::nullopt, log, log};
  std::string message;
  int status = llvm::sys::ExecuteAndWait(program, args, environment, redirects,
                                         /*SecondsToWait=*/1800,
                                         /*MemoryLimit=*/0, &message);
  if (status == 0)
    return true;
  error = what.str() + " failed" +
          (message.empty() ? " (exit status " + std::to_string(status) + ")"
                           : ": " + message);
  if (auto text = llvm::MemoryBuffer::getFile(log)) {
    StringRef out = (*text)->getBuffer().trim();
    error += out.empty() ? "" : ":\n" + out.take_back(2000).str();
  }
  return false;
}

/// The kernels of `samples`' fastest steps: the quarter of the steps (at
/// least one) with the lowest slowest-rank time, the steps a quiet host
/// runs. Each kernel's median over those steps goes to the nodes its name
/// carries, on its rank; `out.copySeconds` gets the runtime's copies per
/// step and rank.
void chargeFastSteps(const StepSamples &samples, size_t numNodes,
                     KernelTimes &out) {
  std::vector<size_t> order(samples.steps.size());
  for (size_t s = 0; s < order.size(); ++s)
    order[s] = s;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return samples.steps[a] < samples.steps[b];
  });
  order.resize(std::max<size_t>(1, order.size() / 4));
  auto over = [&](const std::vector<double> &perStep) {
    std::vector<double> picked;
    for (size_t s : order)
      picked.push_back(perStep[s]);
    return median(picked);
  };
  out.stepSeconds = over(samples.steps);
  int numRanks = samples.ranks.size();
  for (int rank = 0; rank < numRanks; ++rank) {
    const StepSamples::Rank &mine = samples.ranks[rank];
    out.copySeconds += over(mine.copies) / numRanks;
    for (const auto &[id, perStep] : mine.kernels) {
      StringRef name = mine.names.at(id);
      if (std::optional<UpdateTag> update = updateTagOfTraceName(name)) {
        if (update->elements > 0) {
          auto &[tag, seconds] = out.updates[{update->parameter, rank}];
          tag = *update;
          seconds += over(perStep);
          out.updateKernels += rank == 0;
        }
        continue;
      }
      chargeKernel(tagsOfTraceName(name), over(perStep), numNodes, rank,
                   name.take_until([](char c) { return c == ' '; }), out);
    }
  }
  // A collective's time in each step is the least of its ranks' (each
  // rank's mean over the collectives of that kind and size in the step):
  // the rank that arrives last waits for no other.
  std::set<CollectiveSize> keys;
  for (const StepSamples::Rank &mine : samples.ranks)
    for (const auto &[key, perStep] : mine.collectives)
      keys.insert(key);
  for (const auto &key : keys) {
    std::vector<double> perStep(samples.steps.size(), -1);
    for (const StepSamples::Rank &mine : samples.ranks) {
      auto it = mine.collectives.find(key);
      if (it == mine.collectives.end())
        continue;
      const auto &[times, counts] = it->second;
      for (size_t s = 0; s < perStep.size(); ++s)
        if (counts[s] > 0) {
          double mean = times[s] / counts[s];
          perStep[s] = perStep[s] < 0 ? mean : std::min(perStep[s], mean);
        }
    }
    for (double &seconds : perStep)
      seconds = std::max(seconds, 0.0);
    out.collectives[key] = over(perStep);
  }
}

/// --program --run: a program's training step, linked into an executable
/// in a temporary directory (removed with it), and the command that runs it
/// on its ranks.
struct LinkedStep {
  SmallString<128> dir;
  std::string exe, trace;
  int numDevices = 1;
  std::string program;
  std::vector<std::string> command, environment;
  /// The shell that runs --before-run (empty without one).
  std::string shell;

  LinkedStep() = default;
  LinkedStep(const LinkedStep &) = delete;
  LinkedStep &operator=(const LinkedStep &) = delete;
  ~LinkedStep() {
    if (!dir.empty())
      llvm::sys::fs::remove_directories(dir);
  }
  std::string inDir(StringRef name) const {
    SmallString<128> path(dir);
    llvm::sys::path::append(path, name);
    return path.str().str();
  }
};

/// Links `module` (lowered, trace hooks in) as soap-translate does, into
/// `step`, with the command that runs it on `numDevices` ranks (through the
/// launcher beyond one) for `options.repeat` steps after `options.warmup`
/// with --trace and one BLAS thread per rank.
bool linkStep(ModuleOp module, int numDevices,
              const KernelProfileOptions &options, LinkedStep &step,
              std::string &error) {
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("soap-profile", step.dir)) {
    error = "cannot make a temporary directory: " + ec.message();
    return false;
  }
  step.numDevices = numDevices;
  std::string source = step.inDir("step.mlir"), log = step.inDir("log.txt");
  step.exe = step.inDir("step");
  step.trace = step.inDir("trace.json");
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(source, ec);
    if (ec) {
      error = "cannot write " + source + ": " + ec.message();
      return false;
    }
    module->print(os);
  }
  // soap-translate lies beside this tool.
  std::string self = llvm::sys::fs::getMainExecutable(
      nullptr, reinterpret_cast<void *>(&linkStep));
  SmallString<128> translate(llvm::sys::path::parent_path(self));
  llvm::sys::path::append(translate, "soap-translate");
  if (!runAndWait(translate,
                  {translate, "--soap-to-executable", source, "-o", step.exe},
                  std::nullopt, log, "soap-translate", error))
    return false;

  // One BLAS thread per rank, as the simulator's devices are one core.
  for (char **e = environ; *e; ++e)
    if (!StringRef(*e).starts_with("OPENBLAS_NUM_THREADS="))
      step.environment.push_back(*e);
  step.environment.push_back("OPENBLAS_NUM_THREADS=1");
  if (numDevices > 1) {
    step.command = options.launcher;
    step.command.insert(step.command.end(),
                        {"-np", std::to_string(numDevices)});
  }
  step.command.insert(step.command.end(),
                      {step.exe, "--steps", std::to_string(options.repeat),
                       "--warmup", std::to_string(options.warmup), "--trace",
                       step.trace});
  llvm::ErrorOr<std::string> program =
      llvm::sys::findProgramByName(step.command.front());
  if (!program) {
    error = "cannot find '" + step.command.front() + "' to run the step";
    return false;
  }
  step.program = *program;
  if (!options.beforeRun.empty()) {
    llvm::ErrorOr<std::string> shell = llvm::sys::findProgramByName("sh");
    if (!shell) {
      error = "cannot find 'sh' to run --before-run";
      return false;
    }
    step.shell = *shell;
  }
  return true;
}

/// Runs `step` once and appends its steps to `samples`.
bool runStep(const LinkedStep &step, const KernelProfileOptions &options,
             StepSamples &samples, std::string &error) {
  if (!step.shell.empty()) {
    if (!runAndWait(step.shell, {step.shell, "-c", options.beforeRun},
                    std::nullopt, step.inDir("before-run.txt"),
                    "--before-run command", error))
      return false;
  }
  std::vector<StringRef> args(step.command.begin(), step.command.end());
  std::vector<StringRef> env(step.environment.begin(), step.environment.end());
  if (!runAndWait(step.program, args, ArrayRef<StringRef>(env),
                  step.inDir("log.txt"), "running the training step", error))
    return false;
  std::vector<std::string> paths;
  for (int rank = 0; rank < step.numDevices; ++rank)
    paths.push_back(
        step.numDevices == 1
            ? step.trace
            : step.inDir("trace.rank" + std::to_string(rank) + ".json"));
  return readRunTraces(paths, samples, error);
}

/// --program alone: compiles every linalg op left in `module` (lowered up
/// to its kernels) as a kernel of its own, times it at its local shapes and
/// charges it to the ops its location names, on their devices.
void timeKernelsAlone(ModuleOp module, const OpGraph &graph,
                      const std::string &programName,
                      const KernelProfileOptions &options, KernelTimes &out,
                      std::vector<std::string> &notes) {
  // prepareEntry renamed the step (codegen's kEntrySymbol).
  Operation *entry = module.lookupSymbol("soap_train_step");
  if (!entry)
    entry = module.getOperation();
  std::vector<linalg::LinalgOp> work;
  walkOps(entry, [&](Operation *op) {
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
      if (linalgOp.hasPureTensorSemantics())
        work.push_back(linalgOp);
  });
  for (linalg::LinalgOp op : work) {
    // A zero fill that only products and convolutions BLAS takes start
    // from: they overwrite their output instead, and the fill goes
    // (zeroFillBefore).
    if (auto fill = dyn_cast<linalg::FillOp>(op.getOperation()))
      if (matchPattern(fill.value(), m_AnyZeroFloat()) &&
          llvm::all_of(fill->getUses(), [](OpOperand &use) {
            auto user = dyn_cast<linalg::LinalgOp>(use.getOwner());
            return user && user.isDpsInit(&use) && codegen::blasTakes(user);
          }))
        continue;
    std::vector<Tag> tags = tagsOf(op->getLoc());
    StringRef opName = op->getName().getStringRef();
    auto first = llvm::find_if(tags, [&](const Tag &tag) {
      return tag.node >= 0 && static_cast<size_t>(tag.node) < graph.nodes.size();
    });
    if (first == tags.end()) {
      chargeKernel({}, 0, graph.nodes.size(), std::nullopt, opName, out);
      continue;
    }
    const OpNode &node = graph.nodes[first->node];
    Codegen used;
    std::string why;
    std::unique_ptr<CompiledKernel> kernel = compileOpKernel(
        op, tensorOperandShapes(op), options.codegen, used, why);
    if (!kernel) {
      notes.push_back(programName + ": " + opName.str() + " of " +
                      node.opName + " at " + node.location +
                      " not timed: " + why.substr(0, why.find('\n')));
      continue;
    }
    chargeKernel(std::move(tags),
                 kernel->medianSeconds(options.warmup, options.repeat),
                 graph.nodes.size(), std::nullopt, opName, out);
  }
}

} // namespace

std::optional<ProgramProfileSummary>
profilePrograms(ModuleOp module, const BuiltOpGraph &built,
                const KernelProfileOptions &options,
                const std::string &optimizer, const std::string &loss,
                const std::string &deviceKind, ProfileDatabase &db,
                llvm::raw_ostream &os, std::string &error) {
  const OpGraph &graph = built.graph;
  MLIRContext *context = module.getContext();
  ProgramProfileSummary summary;

  // The programs: one device, then each strategy at each device count.
  std::vector<Program> programs = {{"one device", std::nullopt}};
  auto strategies = resolveStrategies(graph, options, error);
  if (!strategies)
    return std::nullopt;
  for (auto &[name, strategy] : *strategies)
    programs.push_back({name, std::move(strategy)});

  // Each op of the model carries its node, through clones and rewrites.
  for (size_t n = 0; n < built.ops.size(); ++n)
    if (Operation *op = built.ops[n])
      op->setLoc(
          withTag(context, Tag{static_cast<int>(n), false, {}}, op->getLoc()));
  auto function = built.ops.empty()
                      ? func::FuncOp()
                      : built.ops.front()->getParentOfType<func::FuncOp>();
  if (!function) {
    error = "the model has no op to profile";
    return std::nullopt;
  }
  std::string lossName = function.getSymName().str();

  std::vector<std::unique_ptr<LinkedStep>> linked(programs.size());
  std::vector<std::optional<KernelTimes>> measured(programs.size());
  for (size_t index = 0; index < programs.size(); ++index) {
    const Program &program = programs[index];
    OwningOpRef<ModuleOp> copy(cast<ModuleOp>(module->clone()));
    auto lossFunction = copy->lookupSymbol<func::FuncOp>(lossName);
    int numDevices = program.strategy ? program.strategy->numDevices : 1;
    if (program.strategy) {
      std::optional<BuiltOpGraph> copyGraph = buildOpGraph(lossFunction, error);
      if (!copyGraph || copyGraph->graph.nodes.size() != graph.nodes.size()) {
        error = program.name + ": cannot rebuild the model's graph: " + error;
        return std::nullopt;
      }
      attachStrategy(*copyGraph, *program.strategy);
    }
    if (!runPipeline(*copy,
                     "soap-training-step{optimizer=" + optimizer +
                         " loss=" + loss + " func=" + lossName + "}",
                     "the training step", error)) {
      error = program.name + ": " + error;
      return std::nullopt;
    }
    auto step = copy->lookupSymbol<func::FuncOp>("train_step");
    if (!step) {
      error = program.name + ": the training step has no @train_step";
      return std::nullopt;
    }
    // Before partitioning (whose slices and copies carry the location of
    // the op they serve): the first op of a node in the step is its forward
    // op; the others (its gradient ops, which the training step builds with
    // the forward op's location) are backward work.
    std::set<int> seen;
    walkOps(step, [&](Operation *op) {
      std::optional<Tag> tag = tagOf(op->getLoc());
      if (!tag)
        return;
      // A constant does no work: one the training step made for a
      // gradient (a loop bound) and hoisted to the top is not the forward.
      tag->backward = !op->hasTrait<OpTrait::ConstantLike>() &&
                      !seen.insert(tag->node).second;
      op->setLoc(withTag(context, *tag, op->getLoc()));
    });
    tagUpdates(step);
    if (numDevices > 1) {
      if (!runPipeline(*copy, "soap-partition", "partitioning", error)) {
        error = program.name + ": " + error;
        return std::nullopt;
      }
      // Ops in a device guard run on its devices alone.
      step = copy->lookupSymbol<func::FuncOp>("train_step");
      step.walk([&](OnDevicesOp guard) {
        guard.getBody().walk([&](Operation *op) {
          std::optional<Tag> tag = tagOf(op->getLoc());
          if (!tag || !tag->devices.empty())
            return;
          tag->devices.assign(guard.getDevices().begin(),
                              guard.getDevices().end());
          op->setLoc(withTag(context, *tag, op->getLoc()));
        });
      });
    }
    sizeUpdates(step);
    // --run: the whole lowering, with the trace hooks around every kernel.
    CpuLoweringOptions lowering;
    lowering.traceOps = options.runPrograms;
    lowering.stopAfterKernels = !options.runPrograms;
    {
      DiagnosticCollector diagnostics(context);
      auto run = [&](OpPassManager &pm) { return runPasses(*copy, pm); };
      if (failed(lowerModuleForCpu(*copy, lowering, run))) {
        error = program.name + ": the CPU lowering failed: " + diagnostics.text;
        return std::nullopt;
      }
    }
    ++summary.programs;

    // --run: link it now and run it with the others below; alone: time
    // every kernel left now.
    if (options.runPrograms) {
      linked[index] = std::make_unique<LinkedStep>();
      if (!linkStep(*copy, numDevices, options, *linked[index], error)) {
        error = program.name + ": " + error;
        return std::nullopt;
      }
    } else {
      measured[index].emplace();
      timeKernelsAlone(*copy, graph, program.name, options, *measured[index],
                       summary.notes);
    }
  }

  // --run: the programs take turns, `options.runs` rounds, so that the
  // runs of one program lie seconds apart; the kernels of each program's
  // fastest quarter of steps, over all its runs, are kept (chargeFastSteps):
  // this VM's host slows the machine down for seconds at a time, and those
  // steps are the ones it left alone.
  if (options.runPrograms) {
    std::vector<StepSamples> samples(programs.size());
    for (int round = 0; round < std::max(options.runs, 1); ++round)
      for (size_t index = 0; index < programs.size(); ++index)
        if (!runStep(*linked[index], options, samples[index], error)) {
          error = programs[index].name + ": " + error;
          return std::nullopt;
        }
    for (size_t index = 0; index < programs.size(); ++index) {
      measured[index].emplace();
      chargeFastSteps(samples[index], graph.nodes.size(), *measured[index]);
    }
  }
  linked.clear();

  // Every kernel timed goes into its node's work. A key's entry comes
  // from the first program that runs its shard; with --run, a program on
  // more ranks that runs a shard an earlier one measured (a whole op that
  // one device measured, under model parallelism) measures it again, keyed
  // for that many ranks (ProfileDatabase::onRanksKey): its ranks share the
  // host's cores, caches and memory, and each spins in MPI while it waits.
  std::set<std::string> recorded;
  for (size_t index = 0; index < programs.size(); ++index) {
    const Program &program = programs[index];
    int ranks = options.runPrograms && program.strategy
                    ? program.strategy->numDevices
                    : 1;
    const KernelTimes &kernels = *measured[index];
    const std::map<int, NodeTimes> &times = kernels.times;
    summary.kernels += kernels.kernels;
    summary.mergedKernels += kernels.merged;
    summary.unattributed += kernels.unattributed;
    for (const auto &[name, count] : kernels.unattributedByOp)
      summary.unattributedByOp[name] += count;
    summary.copySecondsPerStep += kernels.copySeconds;

    // An entry per op of the model that is a linalg op, at its shard. Ops
    // with the same key share the entry, so it holds their mean: a kernel
    // that does the work of several of them (the products of an LSTM's
    // weight gradient over its time steps, merged into one) counts for
    // all of them, as the simulator charges the key to each.
    struct KeyTimes {
      double forward = 0, backward = 0;
      int ops = 0;
    };
    std::map<std::string, KeyTimes> byKey;
    std::vector<std::string> order;
    for (size_t n = 0; n < graph.nodes.size(); ++n) {
      const OpNode &node = graph.nodes[n];
      if (!node.partitionable || !isa<linalg::LinalgOp>(built.ops[n]))
        continue;
      std::vector<int64_t> shard =
          program.strategy
              ? Strategy::shardOf(node, program.strategy->configs[n])
              : node.loopSizes;
      auto it = times.find(static_cast<int>(n));
      bool ranForward = it != times.end() && !it->second.forward.empty();
      // A relayout copy that runs as a kernel of its own (a reader needs it
      // moved) is another entry than the one folded into its readers.
      std::string key =
          ProfileDatabase::key(graph, static_cast<int>(n), shard, deviceKind,
                               /*madeCopy=*/node.relayoutCopy && ranForward);
      // The first program that runs a shard measures it (with --merge,
      // the programs of the run that wrote the database came first).
      auto known = [&](const std::string &key) {
        return recorded.count(key) || (options.keepRecorded && db.lookup(key));
      };
      if (known(key)) {
        std::optional<ProfileDatabase::Entry> first = db.lookup(key);
        if (ranks == 1 || !first || first->ranks == ranks)
          continue;
        key = ProfileDatabase::onRanksKey(key, ranks);
        if (known(key))
          continue;
      }
      auto [at, isNew] = byKey.try_emplace(key);
      if (isNew)
        order.push_back(key);
      KeyTimes &sum = at->second;
      ++sum.ops;
      if (!ranForward)
        ++summary.forwardFusedAway;
      if (it == times.end())
        continue;
      sum.forward += slowestDevice(it->second.forward);
      sum.backward += slowestDevice(it->second.backward);
    }
    for (const std::string &key : order) {
      const KeyTimes &sum = byKey[key];
      ProfileDatabase::Entry entry;
      entry.includesGradientSums = true;
      entry.ranks = ranks;
      entry.forward = sum.forward / sum.ops;
      entry.backward = sum.backward / sum.ops;
      db.record(key, entry);
      recorded.insert(key);
      ++summary.entries;
      if (!options.quiet) {
        os << "  " << key << ": "
           << llvm::format("%.2f us", entry.forward * 1e6) << " forward, "
           << llvm::format("%.2f us", entry.backward * 1e6) << " backward";
        if (sum.ops > 1)
          os << ", mean of " << sum.ops << " ops";
        os << " (" << program.name << ")\n";
      }
    }
    if (!options.quiet) {
      os << "soap-profile: program (" << program.name
         << "): " << kernels.kernels << " kernel(s) timed";
      if (kernels.stepSeconds > 0)
        os << llvm::format(", the step ran %.4g ms", kernels.stepSeconds * 1e3);
      os << "\n";
    }
  }

  // --run: the updates and blocking collectives as the steps ran them,
  // each key the mean over the parameters, ranks and programs that ran it.
  std::map<std::string, std::pair<double, int>> inStep;
  for (const std::optional<KernelTimes> &kernels : measured) {
    summary.updateKernels += kernels->updateKernels;
    for (const auto &[where, update] : kernels->updates) {
      const auto &[tag, seconds] = update;
      auto &sum = inStep[ProfileDatabase::updateKey(
          optimizer, tag.elements, deviceKind, static_cast<int>(tag.group))];
      sum.first += seconds;
      ++sum.second;
    }
    for (const auto &[size, seconds] : kernels->collectives) {
      const auto &[kind, bytes, group] = size;
      auto &sum = inStep[ProfileDatabase::collectiveKey(
          kind, bytes, deviceKind, static_cast<int>(group))];
      sum.first += seconds;
      ++sum.second;
    }
  }
  for (const auto &[key, sum] : inStep) {
    if (options.keepRecorded && db.lookup(key))
      continue;
    ProfileDatabase::Entry entry;
    entry.forward = sum.first / sum.second;
    db.record(key, entry);
    ++summary.inStepEntries;
    if (!options.quiet)
      os << "  " << key << ": " << llvm::format("%.2f us", entry.forward * 1e6)
         << "\n";
  }
  return summary;
}

} // namespace soap::profile

//===- KernelProfiler.cpp - measure the ops of a model --------------------===//

#include "KernelProfiler.h"

#include "GpuProfiler.h"

#include "soap/Autodiff/Autodiff.h"
#include "soap/codegen/BlasKernels.h"
#include "soap/search/Strategies.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"

#include <chrono>
#include <map>
#include <set>

using namespace mlir;

namespace soap::profile {

std::optional<std::vector<std::pair<std::string, Strategy>>>
resolveStrategies(const OpGraph &graph, const KernelProfileOptions &options,
                  std::string &error) {
  std::vector<std::pair<std::string, Strategy>> result;
  for (const std::string &name : options.strategies) {
    bool isFile = name.find(".json") != std::string::npos ||
                  name.find('/') != std::string::npos;
    if (isFile) {
      auto buffer = llvm::MemoryBuffer::getFile(name);
      if (!buffer) {
        error = "cannot read strategy file '" + name +
                "': " + buffer.getError().message();
        return std::nullopt;
      }
      std::string problem;
      std::optional<Strategy> strategy =
          Strategy::fromJSON((*buffer)->getBuffer().str(), graph, problem);
      if (!strategy) {
        error = name + ": " + problem;
        return std::nullopt;
      }
      result.emplace_back(name, std::move(*strategy));
      continue;
    }
    for (int devices : options.deviceCounts) {
      std::optional<Strategy> strategy = strategyByName(name, graph, devices);
      if (!strategy) {
        std::string names;
        for (const std::string &n : baselineStrategyNames())
          names += (names.empty() ? "" : ", ") + n;
        error = "unknown strategy '" + name + "'; expected " + names +
                ", or a strategy .json file";
        return std::nullopt;
      }
      result.emplace_back(name + " on " + std::to_string(devices) + " devices",
                          std::move(*strategy));
    }
  }
  for (const auto &[name, strategy] : result)
    if (auto problem = strategy.validate(graph)) {
      error = "strategy '" + name + "' does not fit the model: " + *problem;
      return std::nullopt;
    }
  return result;
}

std::optional<std::vector<ShardToMeasure>>
collectShards(const BuiltOpGraph &built, const KernelProfileOptions &options,
              const std::string &deviceKind,
              std::vector<std::pair<std::string, int>> &skipped,
              std::string &error) {
  const OpGraph &graph = built.graph;
  auto strategies = resolveStrategies(graph, options, error);
  if (!strategies)
    return std::nullopt;

  std::vector<ShardToMeasure> shards;
  std::map<std::string, size_t> byKey;
  std::map<std::string, int> skippedOps;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const OpNode &node = graph.nodes[n];
    if (!node.partitionable || !isa<linalg::LinalgOp>(built.ops[n])) {
      ++skippedOps[node.opName];
      continue;
    }
    // The whole op (one device, or a replicated op), then each strategy's
    // shard.
    std::vector<std::vector<int64_t>> candidates = {node.loopSizes};
    for (const auto &[name, strategy] : *strategies) {
      const ParallelConfig &config = strategy.configs[n];
      if (!Strategy::isReplicated(config))
        candidates.push_back(config.shardSizes(node.loopSizes));
    }
    std::set<std::string> keysOfNode;
    for (const std::vector<int64_t> &shard : candidates) {
      std::string key =
          ProfileDatabase::key(graph, static_cast<int>(n), shard, deviceKind);
      if (!keysOfNode.insert(key).second)
        continue;
      auto it = byKey.find(key);
      if (it != byKey.end()) {
        ++shards[it->second].nodesSharingKey;
        continue;
      }
      byKey[key] = shards.size();
      shards.push_back({static_cast<int>(n), shard, key, 1});
    }
  }
  skipped.assign(skippedOps.begin(), skippedOps.end());
  return shards;
}

std::vector<std::vector<int64_t>>
localOperandShapes(const OpGraph &graph, int node,
                   const std::vector<int64_t> &shard) {
  const OpNode &n = graph.nodes[node];
  std::vector<std::vector<int64_t>> shapes;
  for (const NodeAccess &access : n.accesses) {
    const GraphTensor &tensor = graph.tensors[access.tensor];
    // Results come after the operands: they have no buffer of their own.
    if (access.role == AccessRole::Write && !access.isDestination)
      break;
    std::vector<int64_t> shape;
    for (size_t d = 0; d < access.indices.size(); ++d) {
      const IndexExpr &expr = access.indices[d];
      int64_t full = tensor.shape[d];
      if (!expr.isLinear) {
        shape.push_back(full);
        continue;
      }
      // The highest index the task reaches, plus one: a convolution window
      // or a strided access covers a span, not just its distinct values.
      int64_t highest = expr.constant;
      for (const IndexTerm &term : expr.terms)
        if (term.coefficient > 0 && term.loop < shard.size())
          highest += term.coefficient * (shard[term.loop] - 1);
      int64_t size = std::max<int64_t>(highest + 1, 1);
      if (full >= 0)
        size = std::min(size, full);
      shape.push_back(size);
    }
    shapes.push_back(std::move(shape));
  }
  return shapes;
}

static std::string formatSeconds(double seconds) {
  std::string s;
  llvm::raw_string_ostream os(s);
  if (seconds < 1e-6)
    os << llvm::format("%.1f ns", seconds * 1e9);
  else if (seconds < 1e-3)
    os << llvm::format("%.2f us", seconds * 1e6);
  else if (seconds < 1)
    os << llvm::format("%.3f ms", seconds * 1e3);
  else
    os << llvm::format("%.2f s", seconds);
  return s;
}

/// The operand numbers of node `node`'s op whose gradients the training
/// step computes: inputs that are parameters or depend on them (as
/// CostModel::gradientCount counts them).
static SmallVector<unsigned> gradientOperands(const OpGraph &graph, int node,
                                              Operation *op) {
  const OpNode &n = graph.nodes[node];
  SmallVector<unsigned> result;
  if (!n.needsBackward)
    return result;
  size_t access = 0;
  for (OpOperand &operand : op->getOpOperands()) {
    if (!isa<RankedTensorType>(operand.get().getType()))
      continue;
    if (access >= n.accesses.size())
      break;
    const NodeAccess &a = n.accesses[access++];
    if (a.role != AccessRole::Read)
      continue;
    const GraphTensor &t = graph.tensors[a.tensor];
    if ((t.isParameter && t.producer < 0) ||
        (t.producer >= 0 && graph.nodes[t.producer].needsBackward))
      result.push_back(operand.getOperandNumber());
  }
  return result;
}

/// The ops the training step emits for the gradients of `op` at a task's
/// local operand `shapes`: a module holding
///   @backward(operands at local shapes..., adjoints of the results...)
///       -> (gradients...)
/// with a copy of the op (`forwardCopy`: autodiff's rule may read its
/// results) and the gradient ops after it.
struct BackwardModule {
  OwningOpRef<ModuleOp> module;
  Operation *forwardCopy = nullptr;
};

static std::optional<BackwardModule>
buildBackwardModule(Operation *op,
                    const std::vector<std::vector<int64_t>> &shapes,
                    ArrayRef<unsigned> wrt, std::string &error) {
  MLIRContext *context = op->getContext();
  Location loc = UnknownLoc::get(context);
  auto dps = dyn_cast<DestinationStyleOpInterface>(op);
  if (!dps) {
    error = "not a destination-style op";
    return std::nullopt;
  }
  SmallVector<Type> argTypes;
  size_t next = 0;
  for (Value operand : op->getOperands())
    if (auto tensor = dyn_cast<RankedTensorType>(operand.getType()))
      argTypes.push_back(
          RankedTensorType::get(shapes[next++], tensor.getElementType()));
  SmallVector<Type> resultTypes;
  {
    size_t index = 0;
    for (OpOperand &operand : op->getOpOperands()) {
      if (!isa<RankedTensorType>(operand.get().getType()))
        continue;
      if (dps.isDpsInit(&operand))
        resultTypes.push_back(argTypes[index]);
      ++index;
    }
  }
  llvm::append_range(argTypes, resultTypes);
  OpBuilder b(context);
  BackwardModule result;
  result.module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(result.module->getBody());
  auto func = func::FuncOp::create(b, loc, "backward",
                                   b.getFunctionType(argTypes, {}));
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  SmallVector<Value> operands;
  next = 0;
  for (Value operand : op->getOperands()) {
    if (isa<RankedTensorType>(operand.getType())) {
      operands.push_back(entry->getArgument(next++));
      continue;
    }
    operands.push_back(arith::ConstantOp::create(
        b, loc, cast<TypedAttr>(b.getZeroAttr(operand.getType()))));
  }
  Operation *copy = clone(b, op, resultTypes, operands);
  copy->setDiscardableAttrs(DictionaryAttr::get(context));
  result.forwardCopy = copy;
  DiagnosticCollector diagnostics(context);
  FailureOr<SmallVector<Value>> gradients = autodiff::buildOpGradients(
      b, copy, entry->getArguments().drop_front(next), wrt);
  if (failed(gradients)) {
    error = "no gradient rule: " + diagnostics.text;
    return std::nullopt;
  }
  // Returned, so that the GPU lowering keeps them.
  SmallVector<Value> returned;
  for (Value gradient : *gradients)
    if (gradient)
      returned.push_back(gradient);
  func::ReturnOp::create(b, loc, returned);
  func.setFunctionType(
      b.getFunctionType(argTypes, ValueRange(returned).getTypes()));
  return result;
}

/// The seconds the backward ops of `op` take at a task's local operand
/// `shapes`: the ops the training step emits for it (autodiff's rule for
/// the op, given adjoints of its results), each compiled and timed as a
/// kernel as the forward op is, and added up; on the GPU, the function
/// holding them is compiled as a training step is, and their times are
/// added up. On the CPU, a transpose that only feeds contractions BLAS
/// takes costs nothing (the CPU lowering folds it into them; the GPU
/// lowering does so itself). Nothing when the op has no gradient rule or a
/// backward op cannot be compiled (`error` says why).
static std::optional<double>
measureBackward(Operation *op, const std::vector<std::vector<int64_t>> &shapes,
                ArrayRef<unsigned> wrt, const KernelProfileOptions &options,
                std::string &error) {
  std::optional<BackwardModule> built =
      buildBackwardModule(op, shapes, wrt, error);
  if (!built)
    return std::nullopt;
  if (options.gpu)
    return options.gpu->timeFunction(*built->module, "backward",
                                     built->forwardCopy, error);
  Operation *copy = built->forwardCopy;
  auto func = cast<func::FuncOp>(copy->getParentOp());
  double total = 0;
  SmallVector<Operation *> backward;
  func.walk([&](linalg::LinalgOp linalgOp) {
    if (linalgOp.getOperation() != copy)
      backward.push_back(linalgOp);
  });
  for (Operation *grad : backward) {
    if (isa<linalg::TransposeOp>(grad) &&
        llvm::all_of(grad->getUsers(), [](Operation *user) {
          auto contraction = dyn_cast<linalg::LinalgOp>(user);
          return contraction && codegen::blasTakes(contraction);
        }))
      continue;
    Codegen used;
    std::unique_ptr<CompiledKernel> kernel = compileOpKernel(
        grad, tensorOperandShapes(grad), options.codegen, used, error);
    if (!kernel) {
      error = "'" + grad->getName().getStringRef().str() +
              "' of its backward: " + error.substr(0, error.find('\n'));
      return std::nullopt;
    }
    total += kernel->medianSeconds(options.warmup, options.repeat);
  }
  return total;
}

/// Compiles `op` as a CPU kernel with options.codegen (`used` says how,
/// `fallback` why it fell back to loops), checks it against scalar loops
/// with options.check, and returns its median time. Nothing when it is not
/// measured, with the note to print in `note`.
static std::optional<double>
measureOnCpu(Operation *op, const std::string &key, const std::string &where,
             const std::vector<std::vector<int64_t>> &shapes,
             const KernelProfileOptions &options, Codegen &used,
             std::string &fallback, KernelProfileSummary &summary,
             std::string &note) {
  using Clock = std::chrono::steady_clock;
  std::string error;
  std::unique_ptr<CompiledKernel> kernel =
      compileOpKernel(op, shapes, options.codegen, used, error, &fallback);
  if (!kernel) {
    note = key + " (" + where + "): skipped, " +
           error.substr(0, error.find('\n'));
    return std::nullopt;
  }
  if (options.check && used != Codegen::Loops) {
    Codegen loops = Codegen::Loops;
    std::unique_ptr<CompiledKernel> reference =
        compileOpKernel(op, shapes, Codegen::Loops, loops, error);
    std::string difference;
    if (!reference)
      summary.mismatches.push_back(key + ": no scalar-loop kernel: " +
                                   error.substr(0, error.find('\n')));
    else if (!sameResults(*kernel, *reference, difference))
      summary.mismatches.push_back(key + ": " + difference);
    else
      ++summary.checked;
  }
  auto first = Clock::now();
  kernel->run();
  double firstRun = std::chrono::duration<double>(Clock::now() - first).count();
  if (firstRun > options.maxOpSeconds) {
    note = key + ": skipped, one run took " + formatSeconds(firstRun) +
           " (--max-op-seconds)";
    return std::nullopt;
  }
  return kernel->medianSeconds(options.warmup - 1, options.repeat);
}

KernelProfileSummary profileKernels(const BuiltOpGraph &built,
                                    const std::vector<ShardToMeasure> &shards,
                                    const Machine &machine,
                                    const KernelProfileOptions &options,
                                    ProfileDatabase &db,
                                    llvm::raw_ostream &os) {
  using Clock = std::chrono::steady_clock;
  const OpGraph &graph = built.graph;
  CostModel roofline(machine);
  KernelProfileSummary summary;
  auto start = Clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(Clock::now() - start).count();
  };

  for (size_t i = 0; i < shards.size(); ++i) {
    const ShardToMeasure &item = shards[i];
    const OpNode &node = graph.nodes[item.node];
    std::string where = node.location.empty()
                            ? node.opName
                            : node.opName + " at " + node.location;
    if (elapsed() > options.maxSeconds) {
      summary.notMeasuredForTime = static_cast<int>(shards.size() - i);
      summary.notes.push_back(
          std::to_string(summary.notMeasuredForTime) +
          " shard(s) not measured: the time budget (--max-seconds " +
          llvm::formatv("{0}", llvm::format("%g", options.maxSeconds)).str() +
          ") ran out");
      break;
    }
    std::vector<std::vector<int64_t>> shapes =
        localOperandShapes(graph, item.node, item.shard);
    int64_t bufferBytes = 0;
    {
      size_t a = 0;
      for (const std::vector<int64_t> &shape : shapes) {
        int64_t elements = 1;
        for (int64_t s : shape)
          elements *= s;
        bufferBytes +=
            elements * graph.tensors[node.accesses[a++].tensor].elementBytes;
      }
    }
    if (bufferBytes > options.maxBufferBytes) {
      summary.notes.push_back(item.key + ": skipped, its buffers need " +
                              llvm::formatv("{0:F1}", bufferBytes / 1e6).str() +
                              " MB (--max-buffer-mb)");
      continue;
    }
    double estimate =
        roofline.forwardTime(graph, item.node, item.shard, /*device=*/0);
    if (estimate > options.maxOpSeconds) {
      summary.notes.push_back(item.key + ": skipped, the roofline predicts " +
                              formatSeconds(estimate) +
                              " per run (--max-op-seconds)");
      continue;
    }

    Codegen used = options.codegen;
    std::string error;
    std::string fallback;
    std::string how; // what runs the kernel, for its line
    double forward = 0;
    if (options.gpu) {
      std::optional<double> time =
          options.gpu->timeOp(built.ops[item.node], shapes, how, error);
      if (!time) {
        summary.notes.push_back(item.key + " (" + where + "): skipped, " +
                                error.substr(0, error.find('\n')));
        continue;
      }
      forward = *time;
    } else {
      std::optional<double> time =
          measureOnCpu(built.ops[item.node], item.key, where, shapes, options,
                       used, fallback, summary, error);
      if (!time) {
        summary.notes.push_back(error);
        continue;
      }
      forward = *time;
      how = codegenName(used);
    }
    ProfileDatabase::Entry entry;
    entry.forward = forward;
    entry.backward = forward * CostModel::gradientCount(graph, item.node);
    entry.backwardEstimated = true;
    std::optional<double> backward;
    if (options.backward && graph.nodes[item.node].needsBackward) {
      std::string why;
      backward = measureBackward(
          built.ops[item.node], shapes,
          gradientOperands(graph, item.node, built.ops[item.node]), options,
          why);
      if (backward) {
        entry.backward = *backward;
        entry.backwardEstimated = false;
        ++summary.backwardMeasured;
      } else {
        summary.notes.push_back(item.key + ": backward estimated (" + why +
                                ")");
      }
    }
    db.record(item.key, entry);
    // Timed alone, a relayout copy runs as the kernel it is where a reader
    // needs it moved (ProfileDatabase::key's madeCopy).
    if (graph.nodes[item.node].relayoutCopy)
      db.record(ProfileDatabase::key(graph, item.node, item.shard,
                                     machine.deviceType().name,
                                     /*madeCopy=*/true),
                entry);
    ++summary.measured;
    if (options.gpu) {
      ++summary.byGpuLibrary[how];
    } else {
      summary.blas += used == Codegen::Blas;
      summary.vectorized += used == Codegen::Vector;
    }
    if (!options.quiet) {
      os << "  " << item.key << ": " << formatSeconds(forward) << " ("
         << how << ", roofline " << formatSeconds(estimate);
      if (backward)
        os << "; backward " << formatSeconds(*backward);
      if (item.nodesSharingKey > 1)
        os << ", " << item.nodesSharingKey << " ops";
      if (options.verbose && !fallback.empty())
        os << "; " << fallback;
      os << ")\n";
    }
  }
  return summary;
}

} // namespace soap::profile

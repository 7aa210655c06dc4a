//===- OpGraphBuilder.cpp - OpGraph from MLIR -----------------------------===//

#include "soap/graph/OpGraphBuilder.h"
#include "soap/Dialect/Combiner.h"
#include "soap/Dialect/DimensionKinds.h"
#include "soap/Dialect/IdentityCopy.h"
#include "soap/Dialect/PartitionableInterface.h"
#include "soap/Dialect/SoapDialect.h"
#include "soap/Dialect/SpmdRewriter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace soap {

static std::string locationString(Location loc) {
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    return (file.getFilename().getValue() + ":" + Twine(file.getLine()) + ":" +
            Twine(file.getColumn()))
        .str();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (std::string s = locationString(inner); !s.empty())
        return s;
  // A name (soap-zoo --locations, torch-mlir's layer names) says more than
  // a position; keep the position after it when there is one.
  if (auto name = dyn_cast<NameLoc>(loc)) {
    std::string child = locationString(name.getChildLoc());
    std::string named = name.getName().str();
    return child.empty() ? named : named + " (" + child + ")";
  }
  return "";
}

static std::string dtypeName(Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  cast<ShapedType>(type).getElementType().print(os);
  return s;
}

/// A slice or reshape of a splat constant: it folds to a splat constant
/// (tensor.extract_slice's and the reshapes' folders), which is what the
/// training step's builders leave of it, so it is rebuilt where it is read.
static bool isViewOfSplatConstant(Operation *op) {
  if (!isa<tensor::ExtractSliceOp, tensor::ExpandShapeOp,
           tensor::CollapseShapeOp>(op))
    return false;
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  auto constant = op->getOperand(0).getDefiningOp<arith::ConstantOp>();
  return type && type.hasStaticShape() && constant && isRebuiltSplat(constant);
}

static OpClass classify(Operation *op, double flopsPerIteration,
                        ArrayRef<utils::IteratorType> iterators) {
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
    if (linalg::isaContractionOpInterface(linalgOp))
      return OpClass::Matmul;
    if (linalg::isaConvolutionOpInterface(linalgOp)) {
      auto dims = linalg::inferConvolutionDims(linalgOp);
      bool hasChannels = succeeded(dims) && (!dims->inputChannel.empty() ||
                                             !dims->outputChannel.empty());
      return hasChannels ? OpClass::Conv : OpClass::Reduction; // pooling
    }
  }
  if (flopsPerIteration == 0)
    return OpClass::DataMovement;
  if (llvm::is_contained(iterators, utils::IteratorType::reduction))
    return OpClass::Reduction;
  return OpClass::Elementwise;
}

/// Whether the gradient the training step builds for the generic's input
/// `value` is the adjoint of its result itself: the input has the result's
/// type and indexing map, the loops are all parallel, and the body adds its
/// element to others once (an addf's operand or a subf's minuend, through
/// to the yield) and reads it nowhere else. The derivative generic is then
/// an identity copy, which canonicalization erases.
static bool gradientIsAdjoint(Operation *op, Value value) {
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic || generic.getNumDpsInits() != 1 ||
      generic.getNumReductionLoops() != 0 ||
      value.getType() != generic->getResult(0).getType())
    return false;
  OpOperand *init = generic.getDpsInitOperand(0);
  OpOperand *input = nullptr;
  for (OpOperand *candidate : generic.getDpsInputOperands()) {
    if (candidate->get() != value)
      continue;
    if (input)
      return false; // read twice: its gradient is a sum
    input = candidate;
  }
  Block &body = generic.getRegion().front();
  if (!input ||
      generic.getMatchingIndexingMap(input) !=
          generic.getMatchingIndexingMap(init) ||
      !generic.getMatchingBlockArgument(init).use_empty())
    return false;
  Value element = generic.getMatchingBlockArgument(input);
  while (element.hasOneUse()) {
    Operation *user = *element.getUsers().begin();
    if (isa<linalg::YieldOp>(user))
      return true;
    bool passes = isa<arith::AddFOp>(user) ||
                  (isa<arith::SubFOp>(user) && user->getOperand(0) == element &&
                   user->getOperand(1) != element);
    if (!passes || user->getBlock() != &body)
      return false;
    element = user->getResult(0);
  }
  return false;
}

/// Whether `op`'s result is an affine function of its inputs (a sum of
/// inputs times values that depend on none), so that its gradient needs
/// none of their values: a body of adds, subtractions, negations, float
/// casts and products or quotients by input-independent values; ops that
/// only move data. Contractions and convolutions are not (their
/// gradients read the other operand), nor is anything else (a ReLU's
/// select, a gather's index cast).
static bool isAffineInInputs(Operation *op) {
  // Pads, concatenations, slices and reshapes: their gradients slice,
  // pad or reshape the adjoint.
  if (isa<tensor::PadOp, tensor::ConcatOp, tensor::InsertSliceOp,
          tensor::ExtractSliceOp, tensor::CollapseShapeOp,
          tensor::ExpandShapeOp>(op))
    return true;
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp || linalg::isaContractionOpInterface(linalgOp) ||
      linalg::isaConvolutionOpInterface(linalgOp))
    return false;
  if (op->getNumRegions() != 1 || op->getRegion(0).empty())
    return false;
  Block &body = op->getRegion(0).front();
  llvm::SmallPtrSet<Value, 8> dependent;
  for (BlockArgument arg : body.getArguments())
    dependent.insert(arg);
  for (Operation &inner : body) {
    auto depends = [&](Value v) { return dependent.contains(v); };
    bool any = llvm::any_of(inner.getOperands(), depends);
    if (isa<linalg::YieldOp>(inner))
      continue;
    if (!any)
      continue;
    if (isa<arith::AddFOp, arith::SubFOp, arith::NegFOp, arith::ExtFOp,
            arith::TruncFOp>(inner)) {
      // affine in what it takes
    } else if (isa<arith::MulFOp>(inner)) {
      if (depends(inner.getOperand(0)) && depends(inner.getOperand(1)))
        return false;
    } else if (isa<arith::DivFOp>(inner)) {
      if (depends(inner.getOperand(1)))
        return false;
    } else {
      return false;
    }
    for (Value r : inner.getResults())
      dependent.insert(r);
  }
  return true;
}

namespace {
class GraphBuilder {
public:
  GraphBuilder(FunctionOpInterface func) : func(func), kinds(func) {}

  std::optional<BuiltOpGraph> build(std::string &error) {
    Region &body = func.getFunctionBody();
    if (!body.hasOneBlock()) {
      error = locationString(func.getLoc()) +
              ": SOAP needs a function body of one block";
      return std::nullopt;
    }
    // An empty tensor has nothing to split or to time (and a split of a
    // zero-size dimension divides by zero downstream); a tensor of more
    // than 2^50 bytes (1 PiB) fits no machine, and near 2^63 its byte count
    // overflows: both refused by name.
    auto problem = [](Type type) -> std::optional<std::string> {
      auto tensor = dyn_cast<RankedTensorType>(type);
      if (!tensor)
        return std::nullopt;
      if (llvm::is_contained(tensor.getShape(), 0))
        return std::string("a zero-size dimension; SOAP partitions no empty "
                           "tensors");
      if (!tensor.hasStaticShape())
        return std::nullopt;
      Type element = tensor.getElementType();
      int64_t bytes = element.isIntOrFloat()
                          ? std::max<int64_t>(
                                1, element.getIntOrFloatBitWidth() / 8)
                          : 8;
      constexpr int64_t kMaxTensorBytes = int64_t(1) << 50;
      for (int64_t size : tensor.getShape())
        if (llvm::MulOverflow(bytes, size, bytes) ||
            bytes > kMaxTensorBytes) {
          std::string text;
          llvm::raw_string_ostream os(text);
          os << "type " << tensor
             << ", more than 2^50 bytes (1 PiB); no machine holds it";
          return text;
        }
      return std::nullopt;
    };
    for (BlockArgument arg : body.getArguments())
      if (auto why = problem(arg.getType())) {
        error = "argument " + std::to_string(arg.getArgNumber()) + " has " +
                *why;
        return std::nullopt;
      }
    for (Operation &op : body.front())
      for (Type type : op.getResultTypes())
        if (auto why = problem(type)) {
          error = locationString(op.getLoc()) + ": '" +
                  op.getName().getStringRef().str() +
                  "' makes a tensor with " + *why;
          return std::nullopt;
        }
    for (BlockArgument arg : body.getArguments())
      if (isa<RankedTensorType>(arg.getType()))
        tensorOf(arg);
    for (Operation &op : body.front())
      addOp(&op);
    result.graph.markBackward();
    if (auto problem = result.graph.validate()) {
      error = "internal: " + *problem;
      return std::nullopt;
    }
    return std::move(result);
  }

private:
  int tensorOf(Value value) {
    auto it = tensorIds.find(value);
    if (it != tensorIds.end())
      return it->second;
    auto type = cast<ShapedType>(value.getType());
    GraphTensor t;
    if (auto arg = dyn_cast<BlockArgument>(value))
      t.name = "arg" + std::to_string(arg.getArgNumber());
    else
      t.name = "%" + std::to_string(result.graph.tensors.size());
    for (int64_t size : type.getShape())
      t.shape.push_back(ShapedType::isDynamic(size) ? -1 : size);
    t.elementBytes = getElementBytes(type);
    t.dtype = dtypeName(type);
    // Integer tables (position ids) are constants, never trained.
    t.isParameter = kinds.isParameter(value) && t.isFloat();
    t.isInput = isa<BlockArgument>(value) && !t.isParameter;
    int id = result.graph.tensors.size();
    result.graph.tensors.push_back(std::move(t));
    tensorIds[value] = id;
    return id;
  }

  /// Every index of the tensor: a dimension the task reads whole.
  static std::vector<IndexExpr> wholeTensor(Value value) {
    std::vector<IndexExpr> indices(
        cast<ShapedType>(value.getType()).getRank());
    for (IndexExpr &e : indices)
      e.isLinear = false;
    return indices;
  }

  void addOp(Operation *op) {
    if (op->hasTrait<OpTrait::IsTerminator>()) {
      // The function's scalar result is its loss.
      if (op->getParentOp() == func.getOperation())
        for (Value operand : op->getOperands())
          if (auto type = dyn_cast<RankedTensorType>(operand.getType());
              type && type.getRank() == 0)
            result.graph.tensors[tensorOf(operand)].isLoss = true;
      return;
    }
    if (op->hasTrait<OpTrait::ConstantLike>()) {
      for (Value r : op->getResults())
        if (isa<RankedTensorType>(r.getType()))
          tensorOf(r);
      return;
    }
    bool touchesTensors =
        llvm::any_of(op->getOperandTypes(),
                     [](Type t) { return isa<RankedTensorType>(t); }) ||
        llvm::any_of(op->getResultTypes(),
                     [](Type t) { return isa<RankedTensorType>(t); });
    if (!touchesTensors)
      return;
    // An allocation moves no data and computes nothing: its result only
    // names the buffer an op writes into (an output whose old contents are
    // ignored), so it needs no node.
    if (isa<tensor::EmptyOp>(op)) {
      tensorOf(op->getResult(0));
      return;
    }
    // An identity copy is erased by the canonicalization that
    // --soap-training-step runs (linalg's EraseIdentityLinalgOp): its
    // readers read its source, so it needs no node either.
    if (SmallVector<Value> sources = identityCopySources(op);
        !sources.empty()) {
      int next = result.graph.nodes.size();
      for (auto [copy, source] : llvm::zip(op->getResults(), sources)) {
        tensorIds[copy] = tensorOf(source);
        copiedBefore[copy] = next;
      }
      return;
    }
    int nodeId = result.graph.nodes.size();
    OpNode node;
    node.opName = op->getName().getStringRef().str();
    node.location = locationString(op->getLoc());
    auto partitionable = dyn_cast<PartitionableOpInterface>(op);
    if (partitionable && !partitionable.getUnsupportedReason() &&
        !llvm::any_of(partitionable.getLoopSizes(), ShapedType::isDynamic)) {
      for (int64_t s : partitionable.getLoopSizes())
        node.loopSizes.push_back(s);
      for (const std::string &name : partitionable.getLoopNames())
        node.loopNames.push_back(name);
      for (DimKind k : kinds.getLoopKinds(partitionable))
        node.loopKinds.push_back(k);
      llvm::SmallBitVector batch = kinds.getBatchLoops(partitionable);
      for (unsigned l = 0; l < node.loopSizes.size(); ++l)
        node.overBatch.push_back(batch.test(l));
      node.flopsPerIteration = partitionable.getFlopsPerIteration();
      for (bool lookup : partitionable.getLookupLoops())
        node.lookupLoops.push_back(lookup);
      node.opClass = classify(op, node.flopsPerIteration,
                              partitionable.getLoopIteratorTypes());
      if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
        std::optional<ReductionKind> kind = combinerOf(linalgOp);
        if (kind)
          node.completesPartials = completesPartialsAtOnce(*kind);
        node.partialsUncombinable = hasUncombinablePartials(linalgOp);
      }
      bool affine = isAffineInInputs(op);
      for (const OperandAccess &access : partitionable.getOperandAccesses()) {
        NodeAccess a;
        a.role = access.role;
        a.isDestination = access.isDestination;
        // The value an op accumulates into is overwritten, never read again.
        a.savedForBackward = !affine && !access.isDestination;
        a.gradientIsAdjoint = access.role == AccessRole::Read &&
                              !access.isDestination &&
                              gradientIsAdjoint(op, access.value);
        if (auto copied = copiedBefore.find(access.value);
            copied != copiedBefore.end() && a.readsValue())
          a.viaCopyBefore = copied->second;
        for (AffineExpr e : access.map.getResults())
          a.indices.push_back(toIndexExpr(e));
        if (access.value.getDefiningOp() == op)
          producedBy(access.value, nodeId);
        a.tensor = tensorOf(access.value);
        node.accesses.push_back(std::move(a));
      }
      // Other tensors the body reads from above (tensor.extract at indices
      // the interface cannot describe): every task needs them whole, as the
      // partitioner materializes them.
      llvm::SetVector<Value> captured;
      getUsedValuesDefinedAbove(op->getRegions(), captured);
      for (Value value : captured) {
        if (!isa<RankedTensorType>(value.getType()))
          continue;
        int tensor = tensorOf(value);
        if (llvm::none_of(node.accesses, [&](const NodeAccess &a) {
              return a.tensor == tensor;
            }))
          node.accesses.push_back(
              {tensor, wholeTensor(value), AccessRole::Read});
      }
    } else {
      // Replicated: one task that reads and writes whole tensors.
      node.partitionable = false;
      node.opClass = OpClass::DataMovement;
      for (Value operand : op->getOperands())
        if (isa<RankedTensorType>(operand.getType()))
          node.accesses.push_back(
              {tensorOf(operand), wholeTensor(operand), AccessRole::Read});
      for (Value r : op->getResults())
        if (isa<RankedTensorType>(r.getType())) {
          producedBy(r, nodeId);
          node.accesses.push_back(
              {tensorOf(r), wholeTensor(r), AccessRole::Write});
        }
    }
    node.splat = isRebuiltSplat(op) || isViewOfSplatConstant(op);
    node.relayoutCopy = isRelayoutCopy(op);
    result.graph.nodes.push_back(std::move(node));
    result.ops.push_back(op);
  }

  void producedBy(Value value, int node) {
    int id = tensorOf(value);
    result.graph.tensors[id].producer = node;
  }

  FunctionOpInterface func;
  DimensionKindAnalysis kinds;
  llvm::DenseMap<Value, int> tensorIds;
  /// The results of erased identity copies: the id of the next node.
  llvm::DenseMap<Value, int> copiedBefore;
  BuiltOpGraph result;
};
} // namespace

std::optional<BuiltOpGraph> buildOpGraph(FunctionOpInterface func,
                                         std::string &error) {
  return GraphBuilder(func).build(error);
}

Strategy strategyFromIR(const BuiltOpGraph &built, int numDevices) {
  Strategy strategy;
  strategy.numDevices = numDevices;
  for (Operation *op : built.ops) {
    ParallelConfig config;
    if (auto attr = op->getAttrOfType<ConfigAttr>(
            SoapDialect::getConfigAttrName())) {
      config.degrees.assign(attr.getDegrees().begin(), attr.getDegrees().end());
      config.devices.assign(attr.getDevices().begin(), attr.getDevices().end());
    }
    strategy.configs.push_back(std::move(config));
  }
  return strategy;
}

void attachStrategy(const BuiltOpGraph &built, const Strategy &strategy) {
  for (size_t n = 0; n < built.ops.size(); ++n) {
    Operation *op = built.ops[n];
    const ParallelConfig &config = strategy.configs[n];
    op->removeAttr(SoapDialect::getReplicatedAttrName());
    if (Strategy::isReplicated(config) ||
        !isa<PartitionableOpInterface>(op)) {
      op->removeAttr(SoapDialect::getConfigAttrName());
      // A partitionable op the strategy runs whole on every device says
      // so: without a config the partitioner would have it follow its
      // operands. (Transposes without a config stay lazy, as the simulator
      // prices them.)
      if (isa<PartitionableOpInterface>(op) && !isa<linalg::TransposeOp>(op))
        op->setAttr(SoapDialect::getReplicatedAttrName(),
                    UnitAttr::get(op->getContext()));
      continue;
    }
    op->setAttr(SoapDialect::getConfigAttrName(),
                ConfigAttr::get(op->getContext(), config.degrees,
                                config.devices));
  }
  if (built.ops.empty())
    return;
  Operation *module = built.ops.front()->getParentOfType<ModuleOp>();
  if (!module)
    return;
  mlir::Builder b(module->getContext());
  module->setAttr(SoapDialect::getNumDevicesAttrName(),
                  b.getI64IntegerAttr(strategy.numDevices));
}

/// True when one of `func`'s arguments is marked {soap.param}.
static bool hasParams(FunctionOpInterface func) {
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    if (func.getArgAttr(i, SoapDialect::getParamAttrName()))
      return true;
  return false;
}

/// True when `func` takes or returns something: `@main() -> ()` drivers
/// that call a model and print its result are not models.
static bool hasInterface(FunctionOpInterface func) {
  return func.getNumArguments() != 0 || func.getNumResults() != 0;
}

/// The entry points among `candidates`: those no other candidate calls.
/// Helper functions a model calls (JAX's `@selu`, `@_mse`) are not entries.
static SmallVector<FunctionOpInterface>
uncalled(Operation *module, ArrayRef<FunctionOpInterface> candidates) {
  llvm::DenseSet<StringRef> called;
  for (FunctionOpInterface caller : candidates)
    caller->walk([&](CallOpInterface call) {
      if (auto symbol =
              dyn_cast<SymbolRefAttr>(call.getCallableForCallee()))
        if (symbol.getRootReference() != caller.getNameAttr())
          called.insert(symbol.getRootReference().getValue());
    });
  SmallVector<FunctionOpInterface> entries;
  for (FunctionOpInterface func : candidates)
    if (!called.contains(func.getName()))
      entries.push_back(func);
  return entries;
}

FunctionOpInterface findTargetFunction(Operation *module, StringRef name,
                                       std::string &error) {
  FunctionOpInterface found;
  SmallVector<FunctionOpInterface> withBody, withParams;
  module->walk([&](FunctionOpInterface func) {
    if (func.isExternal())
      return;
    if (!name.empty()) {
      if (func.getName() == name)
        found = func;
      return;
    }
    withBody.push_back(func);
    if (hasParams(func))
      withParams.push_back(func);
  });
  if (!name.empty()) {
    if (!found)
      error = ("no function named '" + name + "' with a body").str();
    return found;
  }
  if (withBody.empty()) {
    error = "the module has no function with a body";
    return {};
  }
  if (withBody.size() == 1)
    return withBody.front();
  // Several functions, one model: the one whose arguments are marked
  // {soap.param} (a loss function beside the @train_step made from it).
  if (withParams.size() == 1)
    return withParams.front();
  if (withParams.size() > 1) {
    error = "the module has " + std::to_string(withParams.size()) +
            " functions with {soap.param} arguments; name one with func=NAME";
    return {};
  }
  // Else the one function that takes or returns something and that no
  // other such function calls: the model, beside its helpers and a
  // printing @main.
  SmallVector<FunctionOpInterface> models;
  for (FunctionOpInterface func : withBody)
    if (hasInterface(func))
      models.push_back(func);
  SmallVector<FunctionOpInterface> entries = uncalled(module, models);
  if (entries.size() == 1)
    return entries.front();
  std::string names;
  for (FunctionOpInterface func : entries.empty() ? withBody : entries)
    names += (names.empty() ? "@" : ", @") + func.getName().str();
  error = "the module has " + std::to_string(withBody.size()) +
          " functions and no single entry (" + names +
          "); name one with func=NAME";
  return {};
}

} // namespace soap

//===- DimensionKinds.cpp - sample/attribute/parameter/reduction ----------===//

#include "soap/Dialect/DimensionKinds.h"
#include "soap/Dialect/SoapDialect.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Interfaces/CastInterfaces.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace soap;

static bool isRankedTensor(Value value) {
  return isa<RankedTensorType>(value.getType());
}

/// A linalg output whose old contents the body never reads carries no data
/// into the op.
static bool isUnreadInit(OpOperand &operand) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(operand.getOwner());
  return linalgOp && linalgOp.isDpsInit(&operand) &&
         !linalgOp.payloadUsesValueFromOperand(&operand);
}

DimensionKindAnalysis::DimensionKindAnalysis(Operation *root) {
  markParameters(root);
  seedSamples(root);
  SmallVector<Operation *> ops;
  root->walk([&](Operation *op) { ops.push_back(op); });
  // Batch dimensions flow forwards (input to loss) and backwards (into the
  // fills and broadcasts that initialise outputs); alternate sweeps until
  // nothing changes. Bits are only ever added, so this terminates.
  bool changed = true;
  for (unsigned sweep = 0; changed && sweep < 64; ++sweep) {
    changed = false;
    if (sweep % 2 == 0) {
      for (Operation *op : ops)
        changed |= propagateSamples(op);
    } else {
      for (Operation *op : llvm::reverse(ops))
        changed |= propagateSamples(op);
    }
  }
}

void DimensionKindAnalysis::markParameters(Operation *root) {
  // Three states: parameter, data (depends on an input), and neither
  // (allocations, fills with scalars). A value is a parameter when what it
  // depends on is parameters and nothing else.
  llvm::DenseSet<Value> data;
  root->walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (auto func = dyn_cast<FunctionOpInterface>(op)) {
      if (func.isExternal())
        return;
      for (BlockArgument arg : func.getArguments()) {
        if (func.getArgAttr(arg.getArgNumber(),
                            SoapDialect::getParamAttrName()))
          parameters.insert(arg);
        else
          data.insert(arg);
      }
      return;
    }
    // Arguments of other regions (loop-carried values) count as data.
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument arg : block.getArguments())
          if (!isa<linalg::LinalgOp>(op))
            data.insert(arg);
    if (op->hasTrait<OpTrait::ConstantLike>()) {
      // Weights of exported models are constant tensors.
      for (Value result : op->getResults())
        if (auto type = dyn_cast<RankedTensorType>(result.getType()))
          if (type.getRank() >= 1)
            parameters.insert(result);
      return;
    }
    bool anyData = false, anyParameter = false;
    for (OpOperand &use : op->getOpOperands()) {
      Value operand = use.get();
      if (!isRankedTensor(operand) || isUnreadInit(use))
        continue;
      anyData |= data.contains(operand);
      anyParameter |= parameters.contains(operand);
    }
    if (anyData) {
      for (Value result : op->getResults())
        data.insert(result);
      return;
    }
    if (!anyParameter)
      return;
    // Computed from parameters alone: which of its dimensions carry them?
    auto partitionable = dyn_cast<PartitionableOpInterface>(op);
    llvm::SmallBitVector loops;
    if (partitionable)
      loops = parameterLoops(partitionable);
    for (Value result : op->getResults()) {
      parameters.insert(result);
      if (!partitionable)
        continue; // all dimensions, by default
      auto type = dyn_cast<RankedTensorType>(result.getType());
      if (!type)
        continue;
      llvm::SmallBitVector dims(type.getRank());
      for (const OperandAccess &access : partitionable.getOperandAccesses()) {
        if (access.value != result)
          continue;
        for (unsigned dim = 0; dim < access.map.getNumResults() &&
                               dim < dims.size();
             ++dim)
          for (const IndexTerm &term :
               toIndexExpr(access.map.getResult(dim)).terms)
            if (term.loop < loops.size() && loops.test(term.loop))
              dims.set(dim);
      }
      parameterDims[result] = dims;
    }
  });
}

void DimensionKindAnalysis::seedSamples(Operation *root) {
  root->walk([&](FunctionOpInterface func) {
    if (func.isExternal())
      return;
    for (BlockArgument arg : func.getArguments()) {
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      if (!type || type.getRank() == 0 || parameters.contains(arg))
        continue;
      int64_t batchDim = 0;
      if (auto attr = func.getArgAttrOfType<IntegerAttr>(
              arg.getArgNumber(), SoapDialect::getBatchDimAttrName()))
        batchDim = attr.getInt();
      if (batchDim < 0 || batchDim >= type.getRank())
        continue;
      llvm::SmallBitVector dims(type.getRank());
      dims.set(batchDim);
      addSampleDims(arg, dims);
    }
  });
}

bool DimensionKindAnalysis::addSampleDims(Value value,
                                          const llvm::SmallBitVector &dims) {
  if (dims.none())
    return false;
  auto [it, inserted] = sampleDims.try_emplace(value, dims);
  if (inserted)
    return true;
  llvm::SmallBitVector merged = it->second;
  merged |= dims;
  if (merged == it->second)
    return false;
  it->second = merged;
  return true;
}

llvm::SmallBitVector DimensionKindAnalysis::getSampleDims(Value value) const {
  auto it = sampleDims.find(value);
  if (it != sampleDims.end())
    return it->second;
  if (auto type = dyn_cast<RankedTensorType>(value.getType()))
    return llvm::SmallBitVector(type.getRank());
  return {};
}

bool DimensionKindAnalysis::isParameter(Value value) const {
  return parameters.contains(value);
}

llvm::SmallBitVector DimensionKindAnalysis::getParameterDims(Value value) const {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || !isParameter(value))
    return llvm::SmallBitVector(type ? type.getRank() : 0);
  auto it = parameterDims.find(value);
  if (it != parameterDims.end())
    return it->second;
  return llvm::SmallBitVector(type.getRank(), true);
}

llvm::SmallBitVector
DimensionKindAnalysis::parameterLoops(PartitionableOpInterface op) const {
  llvm::SmallBitVector loops(op.getLoopSizes().size());
  Operation *operation = op.getOperation();
  for (const OperandAccess &access : op.getOperandAccesses()) {
    // What the op computes from: not its results, nor the outputs it
    // accumulates into.
    if (access.role == AccessRole::Write || access.isDestination ||
        access.value.getDefiningOp() == operation)
      continue;
    // A weight stored with a leading batch dimension of size 1 ([1, 512]
    // scales broadcast over the batch) takes the batch there, not a
    // parameter dimension.
    llvm::SmallBitVector dims = getParameterDims(access.value);
    llvm::SmallBitVector batch = getSampleDims(access.value);
    for (int dim : dims.set_bits()) {
      if (static_cast<unsigned>(dim) < batch.size() && batch.test(dim))
        continue;
      if (static_cast<unsigned>(dim) >= access.map.getNumResults())
        continue;
      for (const IndexTerm &term :
           toIndexExpr(access.map.getResult(dim)).terms)
        if (term.loop < loops.size())
          loops.set(term.loop);
    }
  }
  return loops;
}

llvm::SmallBitVector
DimensionKindAnalysis::sampleLoops(PartitionableOpInterface op) const {
  // Only parallel loops carry the batch from one tensor to another: a
  // contraction over a dimension that holds the batch (a flattened
  // batch x sequence) does not put the batch into its other operand.
  SmallVector<utils::IteratorType> iterators = op.getLoopIteratorTypes();
  llvm::SmallBitVector loops(iterators.size());
  for (const OperandAccess &access : op.getOperandAccesses()) {
    llvm::SmallBitVector dims = getSampleDims(access.value);
    for (int dim : dims.set_bits()) {
      if (static_cast<unsigned>(dim) >= access.map.getNumResults())
        continue;
      auto loop = outermostLoop(toIndexExpr(access.map.getResult(dim)));
      if (loop && *loop < iterators.size() &&
          iterators[*loop] == utils::IteratorType::parallel)
        loops.set(*loop);
    }
  }
  return loops;
}

llvm::SmallBitVector
DimensionKindAnalysis::getBatchLoops(PartitionableOpInterface op) const {
  llvm::SmallBitVector loops(op.getLoopSizes().size());
  Operation *operation = op.getOperation();
  for (const OperandAccess &access : op.getOperandAccesses()) {
    if (access.role != AccessRole::Read || access.isDestination ||
        access.value.getDefiningOp() == operation)
      continue;
    llvm::SmallBitVector dims = getSampleDims(access.value);
    for (int dim : dims.set_bits()) {
      if (static_cast<unsigned>(dim) >= access.map.getNumResults())
        continue;
      auto loop = outermostLoop(toIndexExpr(access.map.getResult(dim)));
      if (loop && *loop < loops.size())
        loops.set(*loop);
    }
  }
  return loops | sampleLoops(op);
}

bool DimensionKindAnalysis::propagateSamples(Operation *op) {
  if (auto partitionable = dyn_cast<PartitionableOpInterface>(op)) {
    llvm::SmallBitVector loops = sampleLoops(partitionable);
    if (loops.none())
      return false;
    bool changed = false;
    for (const OperandAccess &access : partitionable.getOperandAccesses()) {
      auto type = dyn_cast<RankedTensorType>(access.value.getType());
      if (!type)
        continue;
      llvm::SmallBitVector dims(type.getRank());
      for (unsigned dim = 0; dim < access.map.getNumResults() &&
                             dim < static_cast<unsigned>(type.getRank());
           ++dim) {
        auto loop = outermostLoop(toIndexExpr(access.map.getResult(dim)));
        if (loop && loops.test(*loop))
          dims.set(dim);
      }
      changed |= addSampleDims(access.value, dims);
    }
    return changed;
  }
  // Shape-preserving ops the interface does not cover (elementwise arith on
  // tensors, casts) keep the batch where it is.
  if (!op->hasTrait<OpTrait::Elementwise>() &&
      !op->hasTrait<OpTrait::SameOperandsAndResultShape>() &&
      !isa<CastOpInterface>(op))
    return false;
  std::optional<int64_t> rank;
  SmallVector<Value> tensors;
  for (Value value : llvm::concat<Value>(op->getOperands(), op->getResults())) {
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!type)
      continue;
    if (rank && *rank != type.getRank())
      return false;
    rank = type.getRank();
    tensors.push_back(value);
  }
  if (!rank)
    return false;
  llvm::SmallBitVector dims(*rank);
  for (Value value : tensors)
    dims |= getSampleDims(value);
  bool changed = false;
  for (Value value : tensors)
    changed |= addSampleDims(value, dims);
  return changed;
}

SmallVector<DimKind>
DimensionKindAnalysis::getLoopKinds(PartitionableOpInterface op) const {
  SmallVector<utils::IteratorType> iterators = op.getLoopIteratorTypes();
  llvm::SmallBitVector samples = sampleLoops(op);
  llvm::SmallBitVector params = parameterLoops(op);
  SmallVector<DimKind> kinds;
  for (auto [loop, iterator] : llvm::enumerate(iterators)) {
    if (iterator == utils::IteratorType::reduction)
      kinds.push_back(DimKind::Reduction);
    else if (params.test(loop))
      kinds.push_back(DimKind::Parameter);
    else if (loop < samples.size() && samples.test(loop))
      kinds.push_back(DimKind::Sample);
    else
      kinds.push_back(DimKind::Attribute);
  }
  return kinds;
}

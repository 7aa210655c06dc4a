//===- LiftParams.cpp - an export's weights become parameters -------------===//
//
// The rules are listed in LiftParams.h. Lifting works on uses, not on
// constants: MLIR's CSE merges equal constants, so one `dense<1.0>` can be
// the gamma of every batch norm of a width, the variance of the same batch
// norms, and a broadcast init. Each use is judged on its own; the uses that
// make up one parameter are redirected to one new argument.
//
//===----------------------------------------------------------------------===//

#include "soap/Import/LiftParams.h"

#include "ImportSupport.h"
#include "soap/Dialect/SoapDialect.h"
#include "soap/Import/BatchNorm.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace mlir;

namespace soap {

namespace {

/// One parameter to create: a constant and the uses that read it.
struct Lifted {
  arith::ConstantOp constant;
  SmallVector<OpOperand *> uses;
};

/// Whether a use of a splat constant is structural rather than a weight:
/// the destination (`outs`) of a destination-style op, or an input of an
/// elementwise linalg.generic read through the identity map beside a
/// computed input (not a constant, not a parameter) of the same shape, also
/// read through the identity map. JAX broadcasts the zero of `max(x, 0)` and
/// the scale of SELU to the activation's shape this way.
bool isStructuralUse(OpOperand &use,
                     llvm::function_ref<bool(Value)> isParameter) {
  Operation *owner = use.getOwner();
  if (auto dps = dyn_cast<DestinationStyleOpInterface>(owner))
    if (dps.isDpsInit(&use))
      return true;
  auto generic = dyn_cast<linalg::GenericOp>(owner);
  if (!generic || generic.getNumReductionLoops() != 0 ||
      !generic.isDpsInput(&use) ||
      !generic.getMatchingIndexingMap(&use).isIdentity())
    return false;
  auto type = cast<RankedTensorType>(use.get().getType());
  for (OpOperand *other : generic.getDpsInputOperands()) {
    if (other == &use || other->get().getDefiningOp<arith::ConstantOp>() ||
        isParameter(other->get()))
      continue;
    auto otherType = dyn_cast<RankedTensorType>(other->get().getType());
    if (otherType && otherType.getShape() == type.getShape() &&
        generic.getMatchingIndexingMap(other).isIdentity())
      return true;
  }
  return false;
}

/// Whether `constant` is a weight candidate: a float tensor of static shape
/// with at least `minElements` elements.
bool isWeightCandidate(arith::ConstantOp constant, int64_t minElements) {
  auto type = dyn_cast<RankedTensorType>(constant.getType());
  return type && type.hasStaticShape() &&
         isa<FloatType>(type.getElementType()) &&
         type.getNumElements() >= minElements;
}

/// Whether `use` is the input of an op that only moves its elements: a
/// transpose, a broadcast, a reshape, or a linalg.generic whose body yields
/// its one input (how exporters broadcast a bias or transpose a weight).
/// The role of a weight is that of the moved copy.
bool isLayoutCopy(OpOperand &use) {
  Operation *owner = use.getOwner();
  if (isa<linalg::TransposeOp, linalg::BroadcastOp, tensor::ExpandShapeOp,
          tensor::CollapseShapeOp>(owner))
    return use.getOperandNumber() == 0;
  auto generic = dyn_cast<linalg::GenericOp>(owner);
  if (!generic || generic.getNumDpsInputs() != 1 ||
      generic.getNumResults() != 1 || generic.getNumReductionLoops() != 0 ||
      !generic.isDpsInput(&use))
    return false;
  auto yield = cast<linalg::YieldOp>(generic.getBody()->getTerminator());
  return yield.getValues().front() == generic.getMatchingBlockArgument(&use);
}

/// The value a layout copy (isLayoutCopy) moves.
Value movedOperand(Operation *copy) {
  if (auto generic = dyn_cast<linalg::GenericOp>(copy))
    return generic.getDpsInputs().front();
  return copy->getOperand(0);
}

/// Whether `copy` is a layout copy that moves a splat weight candidate,
/// directly or through other layout copies.
bool movesSplat(Operation *copy, int64_t minElements) {
  while (true) {
    if (copy->getNumResults() != 1 || copy->getNumOperands() == 0 ||
        !isLayoutCopy(copy->getOpOperand(0)))
      return false;
    Value moved = movedOperand(copy);
    if (auto constant = moved.getDefiningOp<arith::ConstantOp>()) {
      auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
      return dense && dense.isSplat() &&
             isWeightCandidate(constant, minElements);
    }
    copy = moved.getDefiningOp();
    if (!copy)
      return false;
  }
}

/// Rule 3's "one parameter per op" for splats that reach their ops through
/// layout copies: CSE merges the copies too (torch-mlir's broadcast of a
/// zero bias into a convolution's init, one op for every convolution of a
/// shape, as in SqueezeNet's fire modules), so each op that reads such a
/// copy gets a copy of its own, and the chain of copies back to the
/// constant with it. Each convolution then has its own bias.
void unshareSplatCopies(func::FuncOp function, int64_t minElements) {
  SmallVector<Operation *> worklist;
  function.walk([&](Operation *op) {
    if (movesSplat(op, minElements))
      worklist.push_back(op);
  });
  while (!worklist.empty()) {
    Operation *copy = worklist.pop_back_val();
    llvm::SetVector<Operation *> users;
    for (Operation *user : copy->getResult(0).getUsers())
      users.insert(user);
    if (users.size() < 2)
      continue;
    OpBuilder builder(copy->getContext());
    builder.setInsertionPointAfter(copy);
    for (Operation *user : users.getArrayRef().drop_front()) {
      Operation *clone = builder.clone(*copy);
      user->replaceUsesOfWith(copy->getResult(0), clone->getResult(0));
    }
    // The copy this one moves now has a use per clone: split it too.
    if (Operation *producer = movedOperand(copy).getDefiningOp())
      if (!isa<arith::ConstantOp>(producer))
        worklist.push_back(producer);
  }
}

/// How a parameter without values starts, judged from its uses (rule 5),
/// the strongest role first whatever the order of the uses: the weight
/// operand of a contraction starts from the seeded fan-in of the dimensions
/// it is contracted over ("fan-in:N": K of a K x N matmul operand, C*KH*KW
/// of a filter); a table read by `tensor.extract` inside a body (an
/// embedding) uniform in [-1, 1) ("fan-in:1"); an elementwise factor (a
/// scale, a norm's gamma) ones; an elementwise addend (a bias, a beta)
/// zeros. Uses that say nothing (a call, a reshape, a transpose) leave the
/// runtime's rule: fan-in over all dimensions but the first.
StringAttr seededInit(MLIRContext *context, ArrayRef<OpOperand *> uses) {
  enum Role { Unknown, Addend, Factor, Table, Contracted };
  Role best = Unknown;
  int64_t bestFanIn = 1;
  SmallVector<OpOperand *> worklist(uses);
  llvm::SmallPtrSet<Operation *, 8> seen;
  while (!worklist.empty()) {
    OpOperand *use = worklist.pop_back_val();
    Operation *owner = use->getOwner();
    if (isLayoutCopy(*use)) {
      if (seen.insert(owner).second)
        for (OpOperand &next : owner->getResult(0).getUses())
          worklist.push_back(&next);
      continue;
    }
    if (isa<tensor::ExtractOp>(owner) &&
        owner->getParentOfType<linalg::LinalgOp>()) {
      best = std::max(best, Table);
      continue;
    }
    auto linalgOp = dyn_cast<linalg::LinalgOp>(owner);
    auto type = dyn_cast<RankedTensorType>(use->get().getType());
    if (!linalgOp || !linalgOp.isDpsInput(use) || !type)
      continue;
    AffineMap map = linalgOp.getMatchingIndexingMap(use);
    SmallVector<utils::IteratorType> iterators =
        linalgOp.getIteratorTypesArray();
    int64_t fanIn = 1;
    bool contracted = false;
    for (auto [dim, expr] : llvm::enumerate(map.getResults())) {
      auto loop = dyn_cast<AffineDimExpr>(expr);
      if (loop &&
          iterators[loop.getPosition()] == utils::IteratorType::reduction) {
        contracted = true;
        fanIn *= type.getDimSize(dim);
      }
    }
    if (contracted) {
      if (best != Contracted || fanIn > bestFanIn)
        bestFanIn = fanIn;
      best = Contracted;
      continue;
    }
    if (linalgOp.getNumReductionLoops() != 0)
      continue;
    BlockArgument element = linalgOp.getMatchingBlockArgument(use);
    for (Operation *user : element.getUsers()) {
      if (isa<arith::MulFOp>(user) ||
          (isa<arith::DivFOp>(user) && user->getOperand(1) == element))
        best = std::max(best, Factor);
      else if (isa<arith::AddFOp, arith::SubFOp>(user))
        best = std::max(best, Addend);
    }
  }
  switch (best) {
  case Contracted:
    return StringAttr::get(context, "fan-in:" + std::to_string(bestFanIn));
  case Table:
    return StringAttr::get(context, "fan-in:1");
  case Factor:
    return StringAttr::get(context, "ones");
  case Addend:
    return StringAttr::get(context, "zeros");
  case Unknown:
    break;
  }
  return StringAttr::get(context, "fan-in");
}

/// Rules 2 and 3: the normalizations, then the parameters to create, in
/// order of the constants, and of the ops that use a splat.
FailureOr<SmallVector<Lifted>> planParameters(func::FuncOp function,
                                              const LiftOptions &options,
                                              ArrayRef<bool> markedArguments,
                                              unsigned &normalizations) {
  SmallVector<linalg::GenericOp> generics;
  function.walk([&](linalg::GenericOp op) { generics.push_back(op); });
  llvm::SmallPtrSet<Operation *, 16> frozen;
  for (linalg::GenericOp op : generics) {
    std::optional<EvalNormalization> norm = matchEvalNormalization(op);
    if (!norm)
      continue;
    ++normalizations;
    if (options.batchNorm == BatchNormMode::Frozen)
      freezeStatistics(*norm, frozen);
    else if (failed(useBatchStatistics(*norm)))
      return failure();
  }

  unshareSplatCopies(function, options.minElements);

  Block &entry = function.getBody().front();
  auto isParameter = [&](Value value) {
    auto argument = dyn_cast<BlockArgument>(value);
    return argument && argument.getOwner() == &entry &&
           (markedArguments[argument.getArgNumber()] ||
            function.getArgAttr(argument.getArgNumber(),
                                SoapDialect::getParamAttrName()));
  };
  DenseMap<Operation *, unsigned> order;
  function.walk<WalkOrder::PreOrder>(
      [&](Operation *op) { order.try_emplace(op, order.size()); });

  SmallVector<Lifted> lifted;
  function.walk([&](arith::ConstantOp constant) {
    if (frozen.contains(constant) ||
        !isWeightCandidate(constant, options.minElements))
      return;
    auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
    bool splat = dense && dense.isSplat();
    SmallVector<OpOperand *> uses;
    for (OpOperand &use : constant->getUses())
      if (!splat || !isStructuralUse(use, isParameter))
        uses.push_back(&use);
    llvm::sort(uses, [&](OpOperand *a, OpOperand *b) {
      return std::pair(order.lookup(a->getOwner()), a->getOperandNumber()) <
             std::pair(order.lookup(b->getOwner()), b->getOperandNumber());
    });
    if (uses.empty())
      return;
    if (!splat) {
      lifted.push_back({constant, uses});
      return;
    }
    for (OpOperand *use : uses) {
      if (lifted.empty() || lifted.back().constant != constant ||
          lifted.back().uses.back()->getOwner() != use->getOwner())
        lifted.push_back({constant, {}});
      lifted.back().uses.push_back(use);
    }
  });
  return lifted;
}

} // namespace

bool parseArgumentList(StringRef text, SmallVectorImpl<unsigned> &indices,
                       std::string &error) {
  SmallVector<StringRef> items;
  text.split(items, ',', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  for (StringRef item : items) {
    item = item.trim();
    auto [first, last] = item.split('-');
    unsigned from = 0, to = 0;
    if (first.trim().getAsInteger(10, from) ||
        (!last.empty() && last.trim().getAsInteger(10, to)) ||
        (!last.empty() && to < from)) {
      error = "params: '" + item.str() +
              "' is not an argument index or a range such as 2-5";
      return false;
    }
    if (last.empty())
      to = from;
    for (unsigned index = from; index <= to; ++index)
      if (!llvm::is_contained(indices, index))
        indices.push_back(index);
  }
  return true;
}

LogicalResult liftParameters(ModuleOp module, func::FuncOp function,
                             const LiftOptions &options) {
  MLIRContext *context = module.getContext();
  unsigned oldArguments = function.getNumArguments();
  SmallVector<bool> marked(oldArguments, false);
  for (unsigned index : options.parameterArguments) {
    if (index >= oldArguments)
      return function.emitError()
             << "soap-lift-params: params=" << index << ": @"
             << function.getName() << " has " << oldArguments
             << " arguments (0 to " << int64_t(oldArguments) - 1 << ")";
    marked[index] = true;
  }

  // Callers keep computing the same thing: each passes the constants the
  // function no longer holds, in front of its own operands.
  std::optional<SymbolTable::UseRange> calls =
      SymbolTable::getSymbolUses(function, module);
  if (!calls)
    return function.emitError() << "soap-lift-params: cannot find the uses of @"
                                << function.getName();
  for (const SymbolTable::SymbolUse &use : *calls)
    if (!isa<func::CallOp>(use.getUser()))
      return use.getUser()->emitError()
             << "soap-lift-params: @" << function.getName()
             << " is referenced by '" << use.getUser()->getName()
             << "', which cannot be given the lifted parameters";

  FailureOr<unsigned> filled =
      resolveElidedIntegers(function, options.elidedIntegers);
  if (failed(filled))
    return failure();
  unsigned normalizations = 0;
  FailureOr<SmallVector<Lifted>> lifted =
      planParameters(function, options, marked, normalizations);
  if (failed(lifted))
    return failure();
  if (lifted->empty() && options.parameterArguments.empty() &&
      normalizations == 0 && *filled == 0) {
    emitWarning(function.getLoc())
        << "soap-lift-params: no float constant of at least "
        << options.minElements << " elements in @" << function.getName()
        << "; nothing lifted";
    return success();
  }

  Block &entry = function.getBody().front();
  for (auto [index, parameter] : llvm::enumerate(*lifted)) {
    BlockArgument argument = entry.insertArgument(
        index, parameter.constant.getType(), parameter.constant.getLoc());
    for (OpOperand *use : parameter.uses)
      use->set(argument);
  }
  unsigned numLifted = lifted->size();
  SmallVector<DictionaryAttr> argAttrs;
  for (auto [index, parameter] : llvm::enumerate(*lifted)) {
    NamedAttrList attrs;
    attrs.set(SoapDialect::getParamAttrName(), UnitAttr::get(context));
    attrs.set(SoapDialect::getNameAttrName(),
              StringAttr::get(context, "param." + std::to_string(index)));
    bool fromSeed =
        options.initFromSeed || isElided(parameter.constant.getValue());
    attrs.set(SoapDialect::getInitAttrName(),
              fromSeed ? seededInit(context, parameter.uses)
                       : parameter.constant.getValue());
    argAttrs.push_back(attrs.getDictionary(context));
  }
  for (unsigned i = 0; i < oldArguments; ++i) {
    NamedAttrList attrs(function.getArgAttrDict(i));
    if (marked[i]) {
      attrs.set(SoapDialect::getParamAttrName(), UnitAttr::get(context));
      if (!attrs.get(SoapDialect::getNameAttrName()))
        attrs.set(SoapDialect::getNameAttrName(),
                  StringAttr::get(context,
                                  "arg" + std::to_string(numLifted + i)));
      if (!attrs.get(SoapDialect::getInitAttrName())) {
        SmallVector<OpOperand *> uses = llvm::map_to_vector(
            entry.getArgument(numLifted + i).getUses(),
            [](OpOperand &use) { return &use; });
        attrs.set(SoapDialect::getInitAttrName(), seededInit(context, uses));
      }
    }
    argAttrs.push_back(attrs.getDictionary(context));
  }
  function.setType(FunctionType::get(context, entry.getArgumentTypes(),
                                     function.getResultTypes()));
  function.setAllArgAttrs(argAttrs);

  for (const SymbolTable::SymbolUse &use : *calls) {
    auto call = cast<func::CallOp>(use.getUser());
    OpBuilder builder(call);
    DenseMap<Operation *, Value> cloned;
    SmallVector<Value> operands;
    for (const Lifted &parameter : *lifted) {
      Value &value = cloned[parameter.constant];
      if (!value)
        value = builder.clone(*parameter.constant)->getResult(0);
      operands.push_back(value);
    }
    llvm::append_range(operands, call.getOperands());
    call->setOperands(operands);
  }
  llvm::SetVector<Operation *> constants;
  for (const Lifted &parameter : *lifted)
    constants.insert(parameter.constant);
  for (Operation *constant : constants)
    if (constant->use_empty())
      constant->erase();
  return success();
}

} // namespace soap

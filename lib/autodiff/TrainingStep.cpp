//===- TrainingStep.cpp - @train_step: forward, gradients, update ---------===//
//
// Clones the loss function's body into @train_step, appends the requested
// loss, differentiates it with respect to the parameters and applies the
// optimizer, with the signature and argument attributes of
// docs/train-step.md.
//
//===----------------------------------------------------------------------===//

#include "soap/Autodiff/TrainingStep.h"

#include "soap/Autodiff/Autodiff.h"

#include "LossFunctions.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;

namespace soap::autodiff {

static constexpr llvm::StringLiteral kParamAttr = "soap.param";
static constexpr llvm::StringLiteral kRoleAttr = "soap.role";
static constexpr llvm::StringLiteral kNameAttr = "soap.name";
static constexpr llvm::StringLiteral kInitAttr = "soap.init";
static constexpr llvm::StringLiteral kRangeAttr = "soap.range";

std::optional<LossKind> parseLossKind(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<LossKind>>(name)
      .Case("none", LossKind::None)
      .Case("softmax-xent", LossKind::SoftmaxCrossEntropy)
      .Case("mse", LossKind::MeanSquaredError)
      .Default(std::nullopt);
}

std::optional<OptimizerKind> parseOptimizerKind(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<OptimizerKind>>(name)
      .Case("sgd", OptimizerKind::SGD)
      .Case("momentum", OptimizerKind::Momentum)
      .Case("adam", OptimizerKind::Adam)
      .Default(std::nullopt);
}

std::optional<LossResults> parseLossResults(llvm::StringRef text) {
  LossResults results;
  text = text.trim();
  if (text.empty())
    return results;
  if (text == "all") {
    results.all = true;
    return results;
  }
  unsigned index;
  if (text.getAsInteger(10, index))
    return std::nullopt;
  results.index = index;
  return results;
}

static bool hasParams(func::FuncOp function) {
  for (unsigned i = 0, e = function.getNumArguments(); i < e; ++i)
    if (function.getArgAttr(i, kParamAttr))
      return true;
  return false;
}

FailureOr<func::FuncOp> findLossFunction(ModuleOp module, StringRef name) {
  if (!name.empty()) {
    auto function = module.lookupSymbol<func::FuncOp>(name);
    if (!function || function.isExternal()) {
      module.emitError() << "no function with a body named '" << name << "'";
      return failure();
    }
    return function;
  }
  func::FuncOp found;
  for (auto function : module.getOps<func::FuncOp>()) {
    if (function.isExternal() || !hasParams(function))
      continue;
    if (found) {
      module.emitError() << "more than one function has {soap.param} "
                            "arguments ('"
                         << found.getName() << "', '" << function.getName()
                         << "'); choose one with func=";
      return failure();
    }
    found = function;
  }
  if (!found) {
    module.emitError() << "no loss function: no function has arguments "
                          "marked {soap.param} (mark the parameters, run "
                          "--soap-lift-params, or give func=)";
    return failure();
  }
  return found;
}

namespace {

enum class Role { Param, Input, Label };

/// What @train_step needs to know about one argument of the loss function.
struct ArgInfo {
  unsigned index;
  Role role;
  std::string name;
  /// The argument's soap.* attributes other than the ones set here.
  SmallVector<NamedAttribute> extraAttrs;
};

/// A labels argument the loss appends, for one result.
struct AppendedLabels {
  RankedTensorType type;
  /// The number of classes (softmax-xent), else 0.
  int64_t range = 0;
  std::string name;
};

/// Everything the loss function's signature implies.
struct Signature {
  SmallVector<ArgInfo> args;
  /// The results the loss applies to (their losses are summed).
  SmallVector<unsigned> lossResults;
  /// The labels arguments the loss appends, one per loss result (none for
  /// loss=none).
  SmallVector<AppendedLabels> appendedLabels;
};

} // namespace

static std::string argumentName(func::FuncOp function, unsigned index) {
  if (auto name = function.getArgAttrOfType<StringAttr>(index, kNameAttr))
    return name.str();
  Location loc = function.getArgument(index).getLoc();
  if (auto nameLoc = dyn_cast<NameLoc>(loc))
    return nameLoc.getName().str();
  return "arg" + std::to_string(index);
}

/// The rows an integer input indexes, when it is an embedding lookup's ids:
/// the smallest static size of a table dimension that a linalg.generic
/// reading the input (directly or through reshapes and slices) indexes with
/// its element (through casts) in a tensor.extract. 0 when it indexes none.
static int64_t indexedRows(Value input) {
  int64_t rows = 0;
  auto note = [&](int64_t size) {
    if (!ShapedType::isDynamic(size) && size > 0)
      rows = rows ? std::min(rows, size) : size;
  };
  SmallVector<Value> tensors{input};
  while (!tensors.empty()) {
    Value tensor = tensors.pop_back_val();
    for (OpOperand &use : tensor.getUses()) {
      Operation *user = use.getOwner();
      if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp,
              tensor::ExtractSliceOp, tensor::CastOp>(user)) {
        tensors.push_back(user->getResult(0));
        continue;
      }
      auto generic = dyn_cast<linalg::GenericOp>(user);
      if (!generic || !generic.isDpsInput(&use))
        continue;
      SmallVector<Value> ids{generic.getMatchingBlockArgument(&use)};
      while (!ids.empty()) {
        Value id = ids.pop_back_val();
        for (OpOperand &idUse : id.getUses()) {
          Operation *op = idUse.getOwner();
          if (isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp,
                  arith::ExtUIOp, arith::TruncIOp>(op))
            ids.push_back(op->getResult(0));
          else if (auto extract = dyn_cast<tensor::ExtractOp>(op);
                   extract && idUse.getOperandNumber() > 0)
            note(extract.getTensor().getType().getDimSize(
                idUse.getOperandNumber() - 1));
        }
      }
    }
  }
  return rows;
}

static FailureOr<Signature> analyzeSignature(func::FuncOp function,
                                             LossKind loss,
                                             LossResults selection) {
  Signature signature;
  for (unsigned i = 0, e = function.getNumArguments(); i < e; ++i) {
    ArgInfo info;
    info.index = i;
    info.name = argumentName(function, i);
    if (!isa<RankedTensorType>(function.getArgument(i).getType())) {
      function.emitError() << "argument " << i << " ('" << info.name
                           << "') is not a ranked tensor";
      return failure();
    }
    auto role = function.getArgAttrOfType<StringAttr>(i, kRoleAttr);
    if (function.getArgAttr(i, kParamAttr))
      info.role = Role::Param;
    else if (role && role.getValue() == "label")
      info.role = Role::Label;
    else if (!role && (info.name == "labels" || info.name == "label"))
      info.role = Role::Label;
    else
      info.role = Role::Input;
    for (NamedAttribute attr : mlir::function_interface_impl::getArgAttrs(function, i)) {
      StringRef attrName = attr.getName().getValue();
      if (attrName.starts_with("soap.") && attrName != kParamAttr &&
          attrName != kRoleAttr && attrName != kNameAttr)
        info.extraAttrs.push_back(attr);
    }
    // Synthetic ids of an embedding lookup are drawn from the table's rows
    // (the runtime draws integers without a soap.range as 0: every token
    // the same, a model whose positions cannot differ).
    Value argument = function.getArgument(i);
    if (info.role == Role::Input &&
        isa<IntegerType>(getElementTypeOrSelf(argument)) &&
        !function.getArgAttr(i, kRangeAttr))
      if (int64_t rows = indexedRows(argument))
        info.extraAttrs.push_back(NamedAttribute(
            StringAttr::get(function.getContext(), kRangeAttr),
            IntegerAttr::get(IntegerType::get(function.getContext(), 64),
                             rows)));
    if (info.role == Role::Param) {
      auto type = cast<RankedTensorType>(function.getArgument(i).getType());
      if (!isa<FloatType>(type.getElementType()) || !type.hasStaticShape()) {
        function.emitError() << "parameter '" << info.name
                             << "' must be a static float tensor, not "
                             << type;
        return failure();
      }
    }
    signature.args.push_back(std::move(info));
  }

  ArrayRef<Type> results = function.getResultTypes();
  if (results.empty()) {
    function.emitError() << "the loss function returns nothing";
    return failure();
  }
  if (selection.all) {
    for (unsigned i = 0; i < results.size(); ++i)
      signature.lossResults.push_back(i);
  } else if (selection.index) {
    if (*selection.index >= results.size()) {
      function.emitError() << "result=" << *selection.index
                           << " is out of range: the function returns "
                           << results.size() << " values";
      return failure();
    }
    signature.lossResults.push_back(*selection.index);
  } else if (results.size() == 1) {
    signature.lossResults.push_back(0);
  } else {
    function.emitError() << "the function returns " << results.size()
                         << " values; choose the one the loss applies to "
                            "with result=K (0 to "
                         << results.size() - 1
                         << "), or sum the loss over all of them with "
                            "result=all";
    return failure();
  }
  bool several = signature.lossResults.size() > 1;
  for (unsigned index : signature.lossResults) {
    std::string which =
        results.size() > 1 ? "result " + std::to_string(index) : "the function";
    auto output = dyn_cast<RankedTensorType>(results[index]);
    if (!output || !isa<FloatType>(output.getElementType()) ||
        !output.hasStaticShape()) {
      function.emitError() << "the loss applies to " << which
                           << ", which must be a static float tensor, not "
                           << results[index];
      return failure();
    }
    if (llvm::is_contained(output.getShape(), 0)) {
      function.emitError() << "the loss applies to " << which << ", of type "
                           << output << ", which has no elements";
      return failure();
    }
    std::string labels =
        several ? "labels." + std::to_string(index) : std::string("labels");
    switch (loss) {
    case LossKind::None:
      if (output.getRank() != 0) {
        function.emitError()
            << which << " returns " << output
            << ", not a scalar loss; append one with loss=softmax-xent or "
               "loss=mse";
        return failure();
      }
      break;
    case LossKind::SoftmaxCrossEntropy:
      if (output.getRank() < 2) {
        function.emitError() << "loss=softmax-xent needs logits [batch, "
                                "classes], but "
                             << which << " returns " << output;
        return failure();
      }
      signature.appendedLabels.push_back(
          {RankedTensorType::get(output.getShape().drop_back(),
                                 IntegerType::get(function.getContext(), 64)),
           output.getShape().back(), labels});
      break;
    case LossKind::MeanSquaredError:
      if (output.getRank() == 0) {
        function.emitError() << "loss=mse needs a tensor output, but "
                             << which << " returns a scalar";
        return failure();
      }
      signature.appendedLabels.push_back({output, 0, labels});
      break;
    }
  }
  return signature;
}

/// Clones the body of `function` at the builder's insertion point with its
/// arguments replaced by `args`, and appends the loss of each result in
/// `lossResults` (against its labels); returns their sum.
static FailureOr<Value> emitForward(OpBuilder &b, func::FuncOp function,
                                    ValueRange args,
                                    ArrayRef<unsigned> lossResults,
                                    ValueRange labels, LossKind loss) {
  if (!function.getBody().hasOneBlock()) {
    function.emitError() << "the loss function must have a single block";
    return failure();
  }
  Block &body = function.getBody().front();
  IRMapping mapping;
  mapping.map(body.getArguments(), args);
  for (Operation &op : body.without_terminator())
    b.clone(op, mapping);
  Location loc = function.getLoc();
  Value total;
  for (auto [i, index] : llvm::enumerate(lossResults)) {
    Value output = mapping.lookup(body.getTerminator()->getOperand(index));
    Value value = output;
    if (loss == LossKind::SoftmaxCrossEntropy)
      value = buildSoftmaxCrossEntropy(b, loc, output, labels[i]);
    else if (loss == LossKind::MeanSquaredError)
      value = buildMeanSquaredError(b, loc, output, labels[i]);
    total = total ? addScalars(b, loc, total, value) : value;
  }
  return total;
}

/// A unique symbol name based on `name` in the module of `function`.
static LogicalResult checkFreeName(func::FuncOp function, StringRef name) {
  auto module = function->getParentOfType<ModuleOp>();
  if (module.lookupSymbol(name)) {
    function.emitError() << "the module already has a symbol named '" << name
                         << "'";
    return failure();
  }
  return success();
}

/// buildGradientFunction's function, for the signature analyzeSignature
/// gave.
static FailureOr<func::FuncOp> emitLossFunction(func::FuncOp lossFunction,
                                                const Signature &signature,
                                                LossKind loss, StringRef name,
                                                bool withGradients) {
  if (failed(checkFreeName(lossFunction, name)))
    return failure();
  SmallVector<Type> argTypes(lossFunction.getArgumentTypes());
  for (const AppendedLabels &labels : signature.appendedLabels)
    argTypes.push_back(labels.type);

  OpBuilder b(lossFunction);
  b.setInsertionPointAfter(lossFunction);
  Location loc = lossFunction.getLoc();
  auto function =
      func::FuncOp::create(b, loc, name, b.getFunctionType(argTypes, {}));
  Block *entry = function.addEntryBlock();
  b.setInsertionPointToStart(entry);
  ValueRange args = entry->getArguments();
  unsigned numArgs = lossFunction.getNumArguments();
  FailureOr<Value> lossValue =
      emitForward(b, lossFunction, args.take_front(numArgs),
                  signature.lossResults, args.drop_front(numArgs), loss);
  if (failed(lossValue)) {
    function.erase();
    return failure();
  }
  SmallVector<Value> returned = {*lossValue};
  if (withGradients) {
    SmallVector<Value> params;
    for (const ArgInfo &info : signature.args)
      if (info.role == Role::Param)
        params.push_back(args[info.index]);
    FailureOr<SmallVector<Value>> gradients =
        buildGradients(b, *lossValue, params);
    if (failed(gradients)) {
      function.erase();
      return failure();
    }
    returned.append(*gradients);
  }
  func::ReturnOp::create(b, loc, returned);
  function.setType(
      b.getFunctionType(argTypes, ValueRange(returned).getTypes()));
  return function;
}

FailureOr<func::FuncOp> buildGradientFunction(func::FuncOp lossFunction,
                                              LossKind loss, StringRef name,
                                              bool withGradients,
                                              LossResults results) {
  FailureOr<Signature> signature =
      analyzeSignature(lossFunction, loss, results);
  if (failed(signature))
    return failure();
  return emitLossFunction(lossFunction, *signature, loss, name, withGradients);
}

FailureOr<func::FuncOp> appendLoss(func::FuncOp function, LossKind loss,
                                   LossResults results) {
  if (loss == LossKind::None) {
    function.emitError() << "no loss to append: choose softmax-xent or mse";
    return failure();
  }
  FailureOr<Signature> signature = analyzeSignature(function, loss, results);
  if (failed(signature))
    return failure();
  std::string name = (function.getSymName() + ".with_loss").str();
  FailureOr<func::FuncOp> withLoss = emitLossFunction(
      function, *signature, loss, name, /*withGradients=*/false);
  if (failed(withLoss))
    return failure();
  func::FuncOp rewritten = *withLoss;
  Builder b(function.getContext());
  // The function's own attributes (visibility, soap.*), then its
  // arguments' attributes and names, then the labels'.
  for (NamedAttribute attr : function->getDiscardableAttrs())
    rewritten->setAttr(attr.getName(), attr.getValue());
  if (auto visibility = function.getSymVisibilityAttr())
    rewritten.setSymVisibilityAttr(visibility);
  unsigned numArgs = function.getNumArguments();
  for (unsigned i = 0; i < numArgs; ++i) {
    rewritten.setArgAttrs(i, function.getArgAttrDict(i));
    rewritten.getArgument(i).setLoc(function.getArgument(i).getLoc());
  }
  for (auto [i, labels] : llvm::enumerate(signature->appendedLabels)) {
    unsigned index = numArgs + i;
    rewritten.setArgAttr(index, kRoleAttr, b.getStringAttr("label"));
    rewritten.setArgAttr(index, kNameAttr, b.getStringAttr(labels.name));
    if (labels.range)
      rewritten.setArgAttr(index, kRangeAttr,
                           b.getI64IntegerAttr(labels.range));
  }
  rewritten.setResultAttr(0, kNameAttr, b.getStringAttr("loss"));
  StringAttr originalName = function.getSymNameAttr();
  if (failed(pointCallersAtOutputCopy(function)))
    return failure();
  function.erase();
  rewritten.setSymNameAttr(originalName);
  return rewritten;
}

//===----------------------------------------------------------------------===//
// Optimizers
//===----------------------------------------------------------------------===//

namespace {

/// Builds elementwise updates over tensors shaped like one parameter, with
/// rank-0 tensors broadcast.
class UpdateBuilder {
public:
  UpdateBuilder(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  /// A generic over `like`'s shape that yields `body(scalars of inputs)`.
  Value elementwise(RankedTensorType like, ValueRange inputs,
                    llvm::function_ref<Value(OpBuilder &, ValueRange)> body) {
    int64_t rank = like.getRank();
    SmallVector<AffineMap> maps;
    for (Value input : inputs) {
      auto type = cast<RankedTensorType>(input.getType());
      maps.push_back(type.getRank() == rank
                         ? b.getMultiDimIdentityMap(rank)
                         : AffineMap::get(rank, 0, {}, b.getContext()));
    }
    maps.push_back(b.getMultiDimIdentityMap(rank));
    Value init = tensor::EmptyOp::create(b, loc, like.getShape(),
                                         like.getElementType());
    return linalg::GenericOp::create(
               b, loc, TypeRange{like}, inputs, ValueRange{init}, maps,
               SmallVector<utils::IteratorType>(rank,
                                                utils::IteratorType::parallel),
               [&](OpBuilder &nb, Location l, ValueRange args) {
                 linalg::YieldOp::create(nb, l,
                                         body(nb, args.drop_back()));
               })
        .getResult(0);
  }

  Value constant(OpBuilder &nb, Type type, double value) {
    return arith::ConstantOp::create(nb, loc, type,
                                     nb.getFloatAttr(type, value));
  }
  Value mul(OpBuilder &nb, Value x, Value y) {
    return arith::MulFOp::create(nb, loc, x, y);
  }
  Value add(OpBuilder &nb, Value x, Value y) {
    return arith::AddFOp::create(nb, loc, x, y);
  }
  Value sub(OpBuilder &nb, Value x, Value y) {
    return arith::SubFOp::create(nb, loc, x, y);
  }
  /// g + weightDecay * p (L2 regularization).
  Value decayed(OpBuilder &nb, Value gradient, Value param, double decay) {
    if (decay == 0.0)
      return gradient;
    return add(nb, gradient,
               mul(nb, constant(nb, param.getType(), decay), param));
  }

  OpBuilder &b;
  Location loc;
};

/// One optimizer-state argument of @train_step.
struct StateArg {
  std::string name;
  RankedTensorType type;
};

} // namespace

static SmallVector<StateArg> optimizerState(const TrainingStepOptions &options,
                                            ArrayRef<std::string> paramNames,
                                            ArrayRef<RankedTensorType> types,
                                            MLIRContext *context) {
  SmallVector<StateArg> state;
  for (auto [name, type] : llvm::zip(paramNames, types)) {
    if (options.optimizer == OptimizerKind::Momentum)
      state.push_back({name + ".velocity", type});
    if (options.optimizer == OptimizerKind::Adam) {
      state.push_back({name + ".m", type});
      state.push_back({name + ".v", type});
    }
  }
  if (options.optimizer == OptimizerKind::Adam)
    state.push_back(
        {"adam.step", RankedTensorType::get({}, Float32Type::get(context))});
  return state;
}

SmallVector<RankedTensorType>
optimizerStateTypes(const TrainingStepOptions &options,
                    ArrayRef<RankedTensorType> paramTypes,
                    MLIRContext *context) {
  SmallVector<std::string> names(paramTypes.size());
  SmallVector<RankedTensorType> types;
  for (const StateArg &arg :
       optimizerState(options, names, paramTypes, context))
    types.push_back(arg.type);
  return types;
}

void emitOptimizerUpdates(OpBuilder &b, Location loc,
                          const TrainingStepOptions &options,
                          ArrayRef<Value> params, ArrayRef<Value> gradients,
                          ArrayRef<Value> state, SmallVector<Value> &newParams,
                          SmallVector<Value> &newState) {
  UpdateBuilder u(b, loc);
  double lr = options.learningRate, decay = options.weightDecay;
  if (options.optimizer == OptimizerKind::Adam) {
    // step + 1, and the bias corrections 1/(1 - beta^step) as rank-0
    // tensors of each parameter type that needs them.
    Value step = state.back();
    auto stepType = cast<RankedTensorType>(step.getType());
    Value newStep =
        u.elementwise(stepType, {step}, [&](OpBuilder &nb, ValueRange a) {
          return u.add(nb, a[0], u.constant(nb, a[0].getType(), 1.0));
        });
    newState.resize(state.size());
    newState.back() = newStep;
  }
  for (auto [i, param, gradient] : llvm::enumerate(params, gradients)) {
    auto type = cast<RankedTensorType>(param.getType());
    switch (options.optimizer) {
    case OptimizerKind::SGD:
      newParams.push_back(u.elementwise(
          type, {param, gradient}, [&](OpBuilder &nb, ValueRange a) {
            Value g = u.decayed(nb, a[1], a[0], decay);
            return u.sub(nb, a[0], u.mul(nb, u.constant(nb, g.getType(), lr), g));
          }));
      break;
    case OptimizerKind::Momentum: {
      double mu = options.momentum;
      Value velocity = u.elementwise(
          type, {param, gradient, state[i]}, [&](OpBuilder &nb, ValueRange a) {
            Value g = u.decayed(nb, a[1], a[0], decay);
            return u.add(nb, u.mul(nb, u.constant(nb, g.getType(), mu), a[2]), g);
          });
      newParams.push_back(u.elementwise(
          type, {param, velocity}, [&](OpBuilder &nb, ValueRange a) {
            return u.sub(nb, a[0],
                         u.mul(nb, u.constant(nb, a[1].getType(), lr), a[1]));
          }));
      newState.push_back(velocity);
      break;
    }
    case OptimizerKind::Adam: {
      double beta1 = options.beta1, beta2 = options.beta2;
      double eps = options.epsilon;
      Value m = state[2 * i], v = state[2 * i + 1];
      Value newM = u.elementwise(
          type, {param, gradient, m}, [&](OpBuilder &nb, ValueRange a) {
            Type t = a[1].getType();
            Value g = u.decayed(nb, a[1], a[0], decay);
            return u.add(nb, u.mul(nb, u.constant(nb, t, beta1), a[2]),
                         u.mul(nb, u.constant(nb, t, 1.0 - beta1), g));
          });
      Value newV = u.elementwise(
          type, {param, gradient, v}, [&](OpBuilder &nb, ValueRange a) {
            Type t = a[1].getType();
            Value g = u.decayed(nb, a[1], a[0], decay);
            return u.add(nb, u.mul(nb, u.constant(nb, t, beta2), a[2]),
                         u.mul(nb, u.constant(nb, t, 1.0 - beta2),
                               u.mul(nb, g, g)));
          });
      Value newStep = newState.back();
      newParams.push_back(u.elementwise(
          type, {param, newM, newV, newStep}, [&](OpBuilder &nb, ValueRange a) {
            Type t = a[0].getType();
            Value step = a[3];
            unsigned stepWidth = step.getType().getIntOrFloatBitWidth();
            if (stepWidth < t.getIntOrFloatBitWidth())
              step = arith::ExtFOp::create(nb, loc, t, step).getResult();
            else if (stepWidth > t.getIntOrFloatBitWidth())
              step = arith::TruncFOp::create(nb, loc, t, step).getResult();
            // m / (1 - beta1^t), v / (1 - beta2^t)
            auto corrected = [&](Value moment, double beta) {
              Value power =
                  math::PowFOp::create(nb, loc, u.constant(nb, t, beta), step);
              return arith::DivFOp::create(
                         nb, loc, moment,
                         u.sub(nb, u.constant(nb, t, 1.0), power))
                  .getResult();
            };
            Value mHat = corrected(a[1], beta1);
            Value vHat = corrected(a[2], beta2);
            Value denominator = u.add(nb, math::SqrtOp::create(nb, loc, vHat),
                                      u.constant(nb, t, eps));
            Value stepSize = arith::DivFOp::create(
                nb, loc, u.mul(nb, u.constant(nb, t, lr), mHat), denominator);
            return u.sub(nb, a[0], stepSize);
          }));
      newState[2 * i] = newM;
      newState[2 * i + 1] = newV;
      break;
    }
    }
  }
}

FailureOr<func::FuncOp> buildTrainingStep(func::FuncOp lossFunction,
                                          const TrainingStepOptions &options) {
  MLIRContext *context = lossFunction.getContext();
  FailureOr<Signature> signature =
      analyzeSignature(lossFunction, options.loss, options.results);
  if (failed(signature) || failed(checkFreeName(lossFunction, "train_step")))
    return failure();
  SmallVector<const ArgInfo *> params, inputs, labels;
  for (const ArgInfo &info : signature->args)
    (info.role == Role::Param   ? params
     : info.role == Role::Label ? labels
                                : inputs)
        .push_back(&info);
  if (params.empty()) {
    lossFunction.emitError() << "the loss function has no {soap.param} "
                                "arguments to train";
    return failure();
  }
  SmallVector<std::string> paramNames;
  SmallVector<RankedTensorType> paramTypes;
  for (const ArgInfo *info : params) {
    paramNames.push_back(info->name);
    paramTypes.push_back(
        cast<RankedTensorType>(lossFunction.getArgumentTypes()[info->index]));
  }
  SmallVector<StateArg> state =
      optimizerState(options, paramNames, paramTypes, context);

  // The signature: parameters, optimizer state, inputs, labels.
  OpBuilder b(context);
  auto str = [&](StringRef s) { return b.getStringAttr(s); };
  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  auto addArg = [&](Type type, StringRef role, StringRef name,
                    ArrayRef<NamedAttribute> extra) {
    NamedAttrList attrs;
    attrs.set(kRoleAttr, str(role));
    attrs.set(kNameAttr, str(name));
    for (NamedAttribute attr : extra)
      attrs.set(attr.getName(), attr.getValue());
    argTypes.push_back(type);
    argAttrs.push_back(attrs.getDictionary(context));
  };
  for (const ArgInfo *info : params) {
    SmallVector<NamedAttribute> extra(info->extraAttrs);
    if (!lossFunction.getArgAttr(info->index, kInitAttr))
      extra.push_back(b.getNamedAttr(kInitAttr, str("fan-in")));
    addArg(lossFunction.getArgumentTypes()[info->index], "param", info->name,
           extra);
  }
  for (const StateArg &s : state)
    addArg(s.type, "opt_state", s.name,
           {b.getNamedAttr(kInitAttr, str("zeros"))});
  for (const ArgInfo *info : inputs)
    addArg(lossFunction.getArgumentTypes()[info->index], "input", info->name,
           info->extraAttrs);
  for (const ArgInfo *info : labels)
    addArg(lossFunction.getArgumentTypes()[info->index], "label", info->name,
           info->extraAttrs);
  for (const AppendedLabels &labels : signature->appendedLabels) {
    SmallVector<NamedAttribute> extra;
    if (labels.range)
      extra.push_back(
          b.getNamedAttr(kRangeAttr, b.getI64IntegerAttr(labels.range)));
    addArg(labels.type, "label", labels.name, extra);
  }

  b.setInsertionPointAfter(lossFunction);
  Location loc = lossFunction.getLoc();
  auto function = func::FuncOp::create(b, loc, "train_step",
                                       b.getFunctionType(argTypes, {}));
  Block *entry = function.addEntryBlock();
  b.setInsertionPointToStart(entry);

  // The loss function's arguments, in its order.
  unsigned numState = state.size();
  SmallVector<Value> lossArgs(lossFunction.getNumArguments());
  SmallVector<Value> paramValues, stateValues;
  unsigned next = 0;
  for (const ArgInfo *info : params) {
    lossArgs[info->index] = entry->getArgument(next++);
    paramValues.push_back(lossArgs[info->index]);
  }
  for (unsigned i = 0; i < numState; ++i)
    stateValues.push_back(entry->getArgument(next++));
  for (const ArgInfo *info : inputs)
    lossArgs[info->index] = entry->getArgument(next++);
  for (const ArgInfo *info : labels)
    lossArgs[info->index] = entry->getArgument(next++);
  ValueRange appendedLabels = entry->getArguments().drop_front(next);

  FailureOr<Value> lossValue =
      emitForward(b, lossFunction, lossArgs, signature->lossResults,
                  appendedLabels, options.loss);
  FailureOr<SmallVector<Value>> gradients =
      succeeded(lossValue) ? buildGradients(b, *lossValue, paramValues)
                           : FailureOr<SmallVector<Value>>(failure());
  if (failed(gradients)) {
    function.erase();
    return failure();
  }
  SmallVector<Value> newParams, newState;
  emitOptimizerUpdates(b, loc, options, paramValues, *gradients, stateValues,
                       newParams, newState);

  SmallVector<Value> results = {*lossValue};
  results.append(newParams);
  results.append(newState);
  func::ReturnOp::create(b, loc, results);
  function.setType(b.getFunctionType(argTypes, ValueRange(results).getTypes()));
  function.setAllArgAttrs(argAttrs);
  // Each result is tagged like the argument it replaces.
  NamedAttrList lossAttrs;
  lossAttrs.set(kRoleAttr, str("loss"));
  lossAttrs.set(kNameAttr, str("loss"));
  function.setResultAttrs(0, lossAttrs.getDictionary(context));
  for (unsigned i = 0, e = params.size() + numState; i < e; ++i) {
    NamedAttrList attrs;
    attrs.set(kRoleAttr, argAttrs[i].get(kRoleAttr));
    attrs.set(kNameAttr, argAttrs[i].get(kNameAttr));
    function.setResultAttrs(1 + i, attrs.getDictionary(context));
  }
  return function;
}

} // namespace soap::autodiff

//===- soap-gradcheck.cpp - check gradients against finite differences ----===//
//
// soap-gradcheck MODEL.mlir [--loss=none|softmax-xent|mse] [--func=NAME]
//                [--samples=N] [--seed=S] [--tolerance=T]
//                [--optimizer=sgd|momentum|adam [--lr=..] [--weight-decay=..]]
//                [--result=K|all] [--check-f32-loss=T]
//
// Retypes the model to float64, builds its loss and gradients with
// lib/autodiff, runs them with an upstream JIT pipeline on random data, and
// compares, for every parameter, the analytical gradient with central
// finite differences on random elements and along a random direction.
// Prints the largest relative error per parameter and `ok` or `FAIL`;
// exits with 1 when any parameter fails. With --optimizer it also runs
// @train_step once and compares the updated parameters and optimizer state
// with the update formulas applied to the checked gradients. With
// --check-f32-loss it checks instead that the loss computed in the model's
// own f32 precision stays within T (relative) of the f64 loss on the same
// inputs: how accurately the loss heads accumulate.
//
//===----------------------------------------------------------------------===//

#include "JitRunner.h"

#include "soap/Autodiff/TrainingStep.h"
#include "soap/Dialect/Registration.h"
#include "soap/graph/OpGraphBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

using namespace mlir;
using namespace soap;
namespace cl = llvm::cl;

static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model.mlir>"),
                                      cl::Required);
static cl::opt<std::string> lossName("loss", cl::desc("none, softmax-xent, mse"),
                                     cl::init("none"));
static cl::opt<std::string> funcName("func", cl::desc("loss function"),
                                     cl::init(""));
static cl::opt<int> samples("samples",
                            cl::desc("random elements checked per parameter"),
                            cl::init(3));
static cl::opt<unsigned> seed("seed", cl::desc("random seed"), cl::init(1));
static cl::opt<double> tolerance("tolerance",
                                 cl::desc("largest relative error accepted"),
                                 cl::init(1e-4));
static cl::opt<double> stepSize("h", cl::desc("finite difference step"),
                                cl::init(1e-6));
static cl::opt<std::string> optimizerName(
    "optimizer", cl::desc("also check one @train_step with this optimizer"),
    cl::init(""));
static cl::opt<std::string> onlyParams(
    "params", cl::desc("check only parameters whose name contains this"),
    cl::init(""));
static cl::opt<double> corrupt(
    "corrupt",
    cl::desc("scale the first parameter's gradient by 1 + this (to test "
             "that the check fails)"),
    cl::init(0.0));
static cl::opt<bool> verbose("v", cl::desc("print timings on stderr"),
                             cl::init(false));
static cl::opt<std::string> resultName(
    "result",
    cl::desc("the result the loss applies to: a number, or all (summed)"),
    cl::init(""));
static cl::opt<double> f32LossTolerance(
    "check-f32-loss",
    cl::desc("instead of gradients, compare the loss computed in f32 with "
             "the f64 loss on the same inputs; fail above this relative "
             "error"),
    cl::init(0.0));
static cl::opt<double> learningRate("lr", cl::init(0.1));
static cl::opt<double> weightDecay("weight-decay", cl::init(0.0));

//===----------------------------------------------------------------------===//
// float32 -> float64
//===----------------------------------------------------------------------===//

/// Rewrites every f32 in the module (types, constants, dense elements) as
/// f64, so that finite differences are accurate.
static LogicalResult retypeToF64(ModuleOp module) {
  MLIRContext *context = module.getContext();
  Type f64 = Float64Type::get(context);
  bool failedDense = false;
  AttrTypeReplacer replacer;
  replacer.addReplacement([&](Float32Type) -> Type { return f64; });
  replacer.addReplacement([&](FloatAttr attr) -> std::optional<Attribute> {
    if (!attr.getType().isF32())
      return std::nullopt;
    return FloatAttr::get(f64, attr.getValueAsDouble());
  });
  replacer.addReplacement(
      [&](DenseFPElementsAttr attr) -> std::optional<Attribute> {
        if (!attr.getElementType().isF32())
          return std::nullopt;
        auto type = RankedTensorType::get(attr.getType().getShape(), f64);
        SmallVector<double> values;
        for (APFloat v : attr.getValues<APFloat>())
          values.push_back(v.convertToDouble());
        if (attr.isSplat())
          return DenseElementsAttr::get(type, values.front());
        return DenseElementsAttr::get(type, ArrayRef<double>(values));
      });
  replacer.addReplacement(
      [&](DenseResourceElementsAttr attr) -> std::optional<Attribute> {
        failedDense = true;
        return std::nullopt;
      });
  replacer.recursivelyReplaceElementsIn(module, /*replaceAttrs=*/true,
                                        /*replaceLocs=*/false,
                                        /*replaceTypes=*/true);
  if (failedDense) {
    module.emitError("soap-gradcheck cannot retype dense resources");
    return failure();
  }
  // f32 <-> f64 casts became no-ops.
  SmallVector<Operation *> casts;
  module.walk([&](Operation *op) {
    if (isa<arith::TruncFOp, arith::ExtFOp>(op) &&
        op->getOperand(0).getType() == op->getResult(0).getType())
      casts.push_back(op);
  });
  for (Operation *op : casts) {
    op->getResult(0).replaceAllUsesWith(op->getOperand(0));
    op->erase();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Random data
//===----------------------------------------------------------------------===//

namespace {

/// How to fill one argument.
struct ArgumentFill {
  bool isParam = false;
  std::string name;
  std::string init;  // soap.init of a parameter
  int64_t range = 0; // soap.range of an integer input
};

} // namespace

static std::vector<ArgumentFill>
describeArguments(func::FuncOp lossFunction, func::FuncOp gradient,
                  const autodiff::LossResults &results) {
  std::vector<ArgumentFill> fills;
  for (unsigned i = 0, e = gradient.getNumArguments(); i < e; ++i) {
    ArgumentFill fill;
    if (i < lossFunction.getNumArguments()) {
      fill.isParam = static_cast<bool>(lossFunction.getArgAttr(i, "soap.param"));
      if (auto name = lossFunction.getArgAttrOfType<StringAttr>(i, "soap.name"))
        fill.name = name.str();
      else if (auto loc = dyn_cast<NameLoc>(lossFunction.getArgument(i).getLoc()))
        fill.name = loc.getName().str();
      else
        fill.name = "arg" + std::to_string(i);
      if (auto init = lossFunction.getArgAttrOfType<StringAttr>(i, "soap.init"))
        fill.init = init.str();
      if (auto range = lossFunction.getArgAttrOfType<IntegerAttr>(i, "soap.range"))
        fill.range = range.getInt();
    } else {
      // The labels a loss appends, one per result it applies to: classes
      // are the last logits dimension.
      fill.name = "labels";
      unsigned result = results.all ? i - lossFunction.getNumArguments()
                                    : results.index.value_or(0);
      auto output =
          cast<RankedTensorType>(lossFunction.getResultTypes()[result]);
      fill.range = output.getShape().back();
    }
    fills.push_back(fill);
  }
  return fills;
}

static void fillArguments(gradcheck::Buffers &buffers,
                          const std::vector<ArgumentFill> &fills,
                          std::mt19937_64 &rng) {
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  for (size_t i = 0; i < fills.size(); ++i) {
    const gradcheck::BufferSpec &spec = buffers.specs[i];
    int64_t n = spec.numElements();
    if (!isa<FloatType>(spec.elementType)) {
      int64_t range = fills[i].range > 0 ? fills[i].range : 2;
      std::uniform_int_distribution<int64_t> draw(0, range - 1);
      for (int64_t j = 0; j < n; ++j)
        buffers.setInteger(i, j, draw(rng));
      continue;
    }
    double scale = 1.0, offset = 0.0;
    if (fills[i].isParam) {
      // Like the runtime's initialisation, but never exactly 0 or 1 so that
      // every parameter's gradient is exercised.
      if (fills[i].init == "ones") {
        offset = 1.0;
        scale = 0.25;
      } else if (fills[i].init == "zeros") {
        scale = 0.1;
      } else {
        int64_t fanIn = 1;
        for (size_t d = 1; d < spec.shape.size(); ++d)
          fanIn *= spec.shape[d];
        if (spec.shape.size() == 1)
          fanIn = spec.shape[0];
        scale = 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(fanIn, 1)));
      }
    }
    for (int64_t j = 0; j < n; ++j)
      buffers.setDouble(i, j, offset + scale * unit(rng));
  }
}

//===----------------------------------------------------------------------===//
// The checks
//===----------------------------------------------------------------------===//

/// |analytic - numeric| relative to the larger of the two, or to `floor`
/// when both are smaller: finite differences of a deep network carry an
/// absolute error (rounding in the loss divided by the step) that makes
/// tiny gradients incomparable.
static double relativeError(double analytic, double numeric,
                            double floor = 1e-6) {
  double scale = std::max({std::fabs(analytic), std::fabs(numeric), floor});
  return std::fabs(analytic - numeric) / scale;
}

static std::string shapeString(const gradcheck::BufferSpec &spec) {
  std::string s;
  for (size_t i = 0; i < spec.shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(spec.shape[i]);
  return s.empty() ? "scalar" : s;
}

namespace {

struct Checker {
  gradcheck::JitRunner &jit;
  std::string error;

  /// The loss at the current argument values.
  std::optional<double> loss(gradcheck::Buffers &args) {
    gradcheck::Buffers buffers = jit.makeBuffers("gc_loss");
    size_t numArgs = buffers.specs.size() - 1;
    for (size_t i = 0; i < numArgs; ++i)
      buffers.data[i] = args.data[i];
    if (!jit.run("gc_loss", buffers, error))
      return std::nullopt;
    return buffers.getDouble(numArgs, 0);
  }
};

} // namespace

/// Applies the optimizer's update formula to one element, as documented in
/// docs/training-step.md: returns the new parameter and updates `state`.
static double referenceUpdate(autodiff::OptimizerKind kind,
                              const autodiff::TrainingStepOptions &o, double p,
                              double g, double *state, double step) {
  g += o.weightDecay * p;
  switch (kind) {
  case autodiff::OptimizerKind::SGD:
    return p - o.learningRate * g;
  case autodiff::OptimizerKind::Momentum:
    state[0] = o.momentum * state[0] + g;
    return p - o.learningRate * state[0];
  case autodiff::OptimizerKind::Adam: {
    state[0] = o.beta1 * state[0] + (1 - o.beta1) * g;
    state[1] = o.beta2 * state[1] + (1 - o.beta2) * g * g;
    double mHat = state[0] / (1 - std::pow(o.beta1, step));
    double vHat = state[1] / (1 - std::pow(o.beta2, step));
    return p - o.learningRate * mHat / (std::sqrt(vHat) + o.epsilon);
  }
  }
  return p;
}

/// --check-f32-loss: the loss of the model in its own precision (f32)
/// against the f64 loss, both on the arguments in `args` rounded to f32.
/// The f64 value is the reference for how the f32 sums accumulate.
static int compareOwnPrecisionLoss(ModuleOp ownPrecision,
                                   gradcheck::Buffers &args, size_t numArgs,
                                   Checker &checker) {
  std::string error;
  std::unique_ptr<gradcheck::JitRunner> jit =
      gradcheck::JitRunner::create(ownPrecision, {"gc_loss"}, error);
  if (!jit) {
    llvm::errs() << "soap-gradcheck: " << error << "\n";
    return 2;
  }
  gradcheck::Buffers own = jit->makeBuffers("gc_loss");
  for (size_t i = 0; i < numArgs; ++i)
    for (int64_t j = 0, e = args.specs[i].numElements(); j < e; ++j) {
      own.setDouble(i, j, args.getDouble(i, j));
      args.setDouble(i, j, own.getDouble(i, j));
    }
  std::optional<double> reference = checker.loss(args);
  if (!reference || !jit->run("gc_loss", own, error)) {
    llvm::errs() << "soap-gradcheck: "
                 << (reference ? error : checker.error) << "\n";
    return 2;
  }
  double value = own.getDouble(numArgs, 0);
  double relative = std::fabs(value - *reference) /
                    std::max(std::fabs(*reference), 1e-30);
  bool ok = relative <= f32LossTolerance;
  llvm::outs() << llvm::format("loss f32 %.9g f64 %.17g relative error %.3g "
                               "%s\n",
                               value, *reference, relative,
                               ok ? "ok" : "FAIL");
  return ok ? 0 : 1;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "SOAP gradient checker\n");
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  registerAllPasses();

  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  soap::registerSoapDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

  std::optional<autodiff::LossKind> lossKind = autodiff::parseLossKind(lossName);
  if (!lossKind) {
    llvm::errs() << "soap-gradcheck: unknown loss '" << lossName << "'\n";
    return 2;
  }
  llvm::SourceMgr sourceMgr;
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(inputFile, sourceMgr, &context);
  if (!module)
    return 2;
  FailureOr<func::FuncOp> lossFunction =
      autodiff::findLossFunction(*module, funcName);
  if (failed(lossFunction) ||
      failed(soap::inlineCalls(*lossFunction, "soap-gradcheck")))
    return 2;

  std::optional<autodiff::OptimizerKind> optimizerKind;
  autodiff::TrainingStepOptions stepOptions;
  if (!optimizerName.empty()) {
    optimizerKind = autodiff::parseOptimizerKind(optimizerName);
    if (!optimizerKind) {
      llvm::errs() << "soap-gradcheck: unknown optimizer '" << optimizerName
                   << "'\n";
      return 2;
    }
    stepOptions.optimizer = *optimizerKind;
    stepOptions.loss = *lossKind;
    stepOptions.learningRate = learningRate;
    stepOptions.weightDecay = weightDecay;
  }
  // Initial values given as elements (lifted constants) are not needed:
  // the checker draws its own.
  for (unsigned i = 0, e = lossFunction->getNumArguments(); i < e; ++i)
    if (lossFunction->getArgAttr(i, "soap.init") &&
        !lossFunction->getArgAttrOfType<StringAttr>(i, "soap.init"))
      lossFunction->setArgAttr(i, "soap.init",
                               StringAttr::get(&context, "fan-in"));
  std::optional<autodiff::LossResults> lossResults =
      autodiff::parseLossResults(resultName);
  if (!lossResults) {
    llvm::errs() << "soap-gradcheck: bad --result='" << resultName << "'\n";
    return 2;
  }
  stepOptions.results = *lossResults;
  // The loss in the model's own precision, for --check-f32-loss.
  OwningOpRef<ModuleOp> ownPrecision;
  if (f32LossTolerance > 0) {
    ownPrecision = module->clone();
    FailureOr<func::FuncOp> own =
        autodiff::findLossFunction(*ownPrecision, funcName);
    if (failed(own) ||
        failed(autodiff::buildGradientFunction(*own, *lossKind, "gc_loss",
                                               false, *lossResults)))
      return 1;
  }
  if (failed(retypeToF64(*module)))
    return 2;
  // After retyping, so that the hyperparameters are exact in f64 (the step
  // counter stays f32, as in the contract).
  if (optimizerKind &&
      failed(autodiff::buildTrainingStep(*lossFunction, stepOptions)))
    return 2;
  FailureOr<func::FuncOp> gradient = autodiff::buildGradientFunction(
      *lossFunction, *lossKind, "gc_grad", true, *lossResults);
  if (failed(gradient))
    return 1;
  FailureOr<func::FuncOp> forward = autodiff::buildGradientFunction(
      *lossFunction, *lossKind, "gc_loss", /*withGradients=*/false,
      *lossResults);
  if (failed(forward))
    return 1;
  std::vector<ArgumentFill> fills = describeArguments(*lossFunction, *gradient, *lossResults);
  std::vector<std::string> names = {"gc_grad", "gc_loss"};
  if (optimizerKind)
    names.push_back("train_step");

  std::string error;
  auto compileStart = std::chrono::steady_clock::now();
  std::unique_ptr<gradcheck::JitRunner> jit =
      gradcheck::JitRunner::create(*module, names, error);
  if (!jit) {
    llvm::errs() << "soap-gradcheck: " << error << "\n";
    return 2;
  }

  auto now = [] { return std::chrono::steady_clock::now(); };
  auto started = now();
  if (verbose)
    llvm::errs() << llvm::format("compiled in %.2f s\n",
                                 std::chrono::duration<double>(started - compileStart).count());
  std::mt19937_64 rng(seed);
  gradcheck::Buffers grad = jit->makeBuffers("gc_grad");
  fillArguments(grad, fills, rng);
  if (!jit->run("gc_grad", grad, error)) {
    llvm::errs() << "soap-gradcheck: " << error << "\n";
    return 2;
  }
  size_t numArgs = fills.size();
  if (corrupt != 0.0) {
    size_t first = numArgs + 1;
    for (int64_t j = 0, e = grad.specs[first].numElements(); j < e; ++j)
      grad.setDouble(first, j, grad.getDouble(first, j) * (1.0 + corrupt));
  }
  Checker checker{*jit, ""};
  if (f32LossTolerance > 0)
    return compareOwnPrecisionLoss(*ownPrecision, grad, fills.size(),
                                   checker);
  std::optional<double> base = checker.loss(grad);
  if (!base) {
    llvm::errs() << "soap-gradcheck: " << checker.error << "\n";
    return 2;
  }
  if (verbose) {
    auto again = now();
    gradcheck::Buffers copy = grad;
    jit->run("gc_grad", copy, error);
    llvm::errs() << llvm::format("second gradient run %.3f s\n",
                                 std::chrono::duration<double>(now() - again).count());
  }
  for (int repeat = 0; repeat < 2; ++repeat) {
    std::optional<double> again = checker.loss(grad);
    if (!again || *again != *base) {
      llvm::outs() << llvm::format("FAIL: the loss is not deterministic (%.17g, then %.17g)\n",
                                   *base, again ? *again : 0.0);
      return 1;
    }
  }
  if (verbose)
    llvm::errs() << llvm::format("gradient and loss in %.3f s\n",
                                 std::chrono::duration<double>(now() - started).count());
  double lossValue = grad.getDouble(numArgs, 0);
  llvm::outs() << llvm::format("loss %.9g (forward %.9g)\n", lossValue, *base);
  bool allOk = std::fabs(lossValue - *base) <= 1e-9 * std::max(1.0, std::fabs(*base));
  if (!allOk)
    llvm::outs() << "FAIL: the gradient function's loss differs\n";

  double h = stepSize;
  int checked = 0;
  size_t gradientIndex = numArgs + 1;
  for (size_t arg = 0; arg < numArgs; ++arg) {
    if (!fills[arg].isParam)
      continue;
    if (!onlyParams.empty() &&
        fills[arg].name.find(onlyParams) == std::string::npos) {
      ++gradientIndex;
      continue;
    }
    const gradcheck::BufferSpec &spec = grad.specs[arg];
    int64_t n = spec.numElements();
    // Gradients below 1e-3 of the tensor's largest are compared in
    // absolute terms.
    double largest = 0.0;
    for (int64_t j = 0; j < n; ++j)
      largest = std::max(largest, std::fabs(grad.getDouble(gradientIndex, j)));
    double floor = std::max(1e-3 * largest, 1e-5);
    // Central differences; a step that crosses a kink (ReLU, max) gives a
    // wrong slope, so a failing comparison is retried with steps 10, 100
    // and 1000x smaller, and the best one counts.
    auto compare = [&](double analytic, auto perturb) -> std::optional<double> {
      double best = 0.0;
      for (double delta : {h, h / 10, h / 100, h / 1000}) {
        gradcheck::Buffers args = grad;
        perturb(args, +delta);
        std::optional<double> plus = checker.loss(args);
        args = grad;
        perturb(args, -delta);
        std::optional<double> minus = checker.loss(args);
        if (!plus || !minus)
          return std::nullopt;
        double numeric = (*plus - *minus) / (2 * delta);
        double error = relativeError(analytic, numeric, floor);
        if (verbose)
          llvm::errs() << llvm::format("  h=%.1e analytic %.12g numeric %.12g\n",
                                       delta, analytic, numeric);
        best = delta == h ? error : std::min(best, error);
        if (best <= tolerance)
          break;
      }
      return best;
    };
    double worst = 0.0;
    std::uniform_int_distribution<int64_t> pick(0, n - 1);
    int count = static_cast<int>(std::min<int64_t>(samples, n));
    for (int s = 0; s < count; ++s) {
      int64_t element = count == n ? s : pick(rng);
      std::optional<double> error = compare(
          grad.getDouble(gradientIndex, element),
          [&](gradcheck::Buffers &args, double delta) {
            args.setDouble(arg, element, grad.getDouble(arg, element) + delta);
          });
      if (!error) {
        llvm::errs() << "soap-gradcheck: " << checker.error << "\n";
        return 2;
      }
      worst = std::max(worst, *error);
    }
    // Along a random direction: every element of the gradient at once.
    std::vector<double> direction(n);
    std::uniform_real_distribution<double> unit(-1.0, 1.0);
    double analytic = 0.0;
    for (int64_t j = 0; j < n; ++j) {
      direction[j] = unit(rng);
      analytic += direction[j] * grad.getDouble(gradientIndex, j);
    }
    std::optional<double> error =
        compare(analytic, [&](gradcheck::Buffers &args, double delta) {
          for (int64_t j = 0; j < n; ++j)
            args.setDouble(arg, j, grad.getDouble(arg, j) + delta * direction[j]);
        });
    if (!error) {
      llvm::errs() << "soap-gradcheck: " << checker.error << "\n";
      return 2;
    }
    worst = std::max(worst, *error);
    bool ok = worst <= tolerance;
    allOk &= ok;
    ++checked;
    llvm::outs() << llvm::format("param %-28s %-14s max rel error %.2e %s\n",
                                 fills[arg].name.c_str(),
                                 shapeString(spec).c_str(), worst,
                                 ok ? "ok" : "FAIL");
    ++gradientIndex;
  }
  llvm::outs() << (allOk ? "all " : "FAIL: not all ") << checked
               << " parameters " << (allOk ? "ok" : "agree") << "\n";

  if (optimizerKind) {
    // One step from random state: the results must follow the formulas.
    gradcheck::Buffers step = jit->makeBuffers("train_step");
    func::FuncOp trainStep; // erased by the JIT; use its buffers' layout
    size_t param = 0, stateArg = 0;
    std::vector<size_t> paramArgs;
    for (size_t arg = 0; arg < numArgs; ++arg)
      if (fills[arg].isParam)
        paramArgs.push_back(arg);
    size_t numParams = paramArgs.size();
    size_t statePerParam =
        *optimizerKind == autodiff::OptimizerKind::SGD        ? 0
        : *optimizerKind == autodiff::OptimizerKind::Momentum ? 1
                                                              : 2;
    size_t numState =
        numParams * statePerParam +
        (*optimizerKind == autodiff::OptimizerKind::Adam ? 1 : 0);
    double stepCount = 3.0;
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    // Parameters, state, then the other arguments in order.
    for (param = 0; param < numParams; ++param)
      step.data[param] = grad.data[paramArgs[param]];
    for (stateArg = 0; stateArg < numState; ++stateArg) {
      size_t index = numParams + stateArg;
      for (int64_t j = 0; j < step.specs[index].numElements(); ++j)
        step.setDouble(index, j, unit(rng) * 0.01);
    }
    if (*optimizerKind == autodiff::OptimizerKind::Adam)
      step.setDouble(numParams + numState - 1, 0, stepCount - 1);
    size_t next = numParams + numState;
    std::vector<size_t> others;
    for (size_t arg = 0; arg < numArgs; ++arg)
      if (!fills[arg].isParam)
        others.push_back(arg);
    // Inputs before labels, as the pass orders them; names tell labels.
    std::stable_partition(others.begin(), others.end(), [&](size_t arg) {
      return fills[arg].name != "labels" && fills[arg].name != "label";
    });
    for (size_t arg : others)
      step.data[next++] = grad.data[arg];
    gradcheck::Buffers before = step;
    if (!jit->run("train_step", step, error)) {
      llvm::errs() << "soap-gradcheck: " << error << "\n";
      return 2;
    }
    (void)trainStep;
    size_t numStepArgs = next;
    double worst = relativeError(step.getDouble(numStepArgs, 0), lossValue);
    for (param = 0; param < numParams; ++param) {
      int64_t n = step.specs[param].numElements();
      for (int64_t j = 0; j < n; ++j) {
        double state[2] = {0.0, 0.0};
        for (size_t s = 0; s < statePerParam; ++s)
          state[s] = before.getDouble(numParams + param * statePerParam + s, j);
        double p = referenceUpdate(*optimizerKind, stepOptions,
                                   before.getDouble(param, j),
                                   grad.getDouble(numArgs + 1 + param, j),
                                   state, stepCount);
        worst = std::max(worst,
                         relativeError(step.getDouble(numStepArgs + 1 + param, j), p));
        for (size_t s = 0; s < statePerParam; ++s)
          worst = std::max(
              worst,
              relativeError(step.getDouble(numStepArgs + 1 + numParams +
                                               param * statePerParam + s,
                                           j),
                            state[s]));
      }
    }
    if (*optimizerKind == autodiff::OptimizerKind::Adam)
      worst = std::max(worst,
                       relativeError(step.getDouble(numStepArgs + numParams +
                                                        numState,
                                                    0),
                                     stepCount));
    bool ok = worst <= 1e-9;
    allOk &= ok;
    llvm::outs() << llvm::format("train_step %s: max rel error %.2e %s\n",
                                 optimizerName.c_str(), worst,
                                 ok ? "ok" : "FAIL");
  }
  return allOk ? 0 : 1;
}

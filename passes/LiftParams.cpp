//===- LiftParams.cpp - weight constants become parameters ----------------===//
//
// --soap-lift-params: reads the options and applies lib/import's rules
// (soap/Import/LiftParams.h) to the target function.
//
//===----------------------------------------------------------------------===//

#include "PassSupport.h"
#include "soap/Dialect/SoapDialect.h"
#include "soap/Import/LiftParams.h"
#include "soap/Passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"

namespace soap {
#define GEN_PASS_DEF_SOAPLIFTPARAMS
#include "soap/Passes/Passes.h.inc"
} // namespace soap

using namespace mlir;
using namespace soap;

namespace {

struct SoapLiftParamsPass
    : public soap::impl::SoapLiftParamsBase<SoapLiftParamsPass> {
  using Base::Base;

  /// The options as the library takes them, or an error on the module.
  FailureOr<LiftOptions> readOptions(ModuleOp module) {
    LiftOptions options;
    options.minElements = minElements;
    if (minElements < 1) {
      module.emitError()
          << "soap-lift-params: min-elements must be at least 1, not "
          << minElements;
      return failure();
    }
    if (batchNorm == "train")
      options.batchNorm = BatchNormMode::Train;
    else if (batchNorm == "frozen")
      options.batchNorm = BatchNormMode::Frozen;
    else {
      module.emitError() << "soap-lift-params: batch-norm must be train or "
                            "frozen, not '"
                         << batchNorm << "'";
      return failure();
    }
    if (elidedIntegers == "error")
      options.elidedIntegers = ElidedIntegers::Error;
    else if (elidedIntegers == "iota")
      options.elidedIntegers = ElidedIntegers::Iota;
    else if (elidedIntegers == "zeros")
      options.elidedIntegers = ElidedIntegers::Zeros;
    else {
      module.emitError() << "soap-lift-params: elided-integers must be "
                            "error, iota or zeros, not '"
                         << elidedIntegers << "'";
      return failure();
    }
    if (init == "export" || init == "seed") {
      options.initFromSeed = init == "seed";
    } else {
      module.emitError() << "soap-lift-params: init must be export or seed, "
                            "not '"
                         << init << "'";
      return failure();
    }
    std::string error;
    if (!parseArgumentList(params, options.parameterArguments, error)) {
      module.emitError() << "soap-lift-params: " << error;
      return failure();
    }
    return options;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<LiftOptions> options = readOptions(module);
    if (failed(options))
      return signalPassFailure();
    func::FuncOp function =
        findTargetFuncOp(module, funcName, "soap-lift-params");
    if (!function ||
        failed(refuseAfterTrainingStep(module, function, "soap-lift-params")) ||
        failed(liftParameters(module, function, *options)))
      return signalPassFailure();
  }
};

} // namespace

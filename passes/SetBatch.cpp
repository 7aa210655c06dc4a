//===- SetBatch.cpp - rewrite the batch size of a model -------------------===//
//
// Exports are usually made at batch 1. This pass changes the batch size of
// the target function: the batch dimension of every input argument (not
// {soap.param}; dimension 0 unless {soap.batch_dim = k}) becomes N, and so
// does every dimension derived from it.
//
// Which dimensions are derived from the batch:
// soap/Partition/BatchDimensions.h.
//
//===----------------------------------------------------------------------===//

#include "PassSupport.h"
#include "soap/Dialect/SoapDialect.h"
#include "soap/Partition/BatchDimensions.h"
#include "soap/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace soap {
#define GEN_PASS_DEF_SOAPSETBATCH
#include "soap/Passes/Passes.h.inc"
} // namespace soap

using namespace mlir;
using namespace soap;

namespace {

struct SoapSetBatchPass
    : public soap::impl::SoapSetBatchBase<SoapSetBatchPass> {
  using Base::Base;

  /// Accepts the short form `--soap-set-batch=N` besides `batch=N ...`.
  LogicalResult initializeOptions(
      StringRef options,
      function_ref<LogicalResult(const Twine &)> errorHandler) override {
    int64_t value;
    if (!options.trim().getAsInteger(10, value))
      return Base::initializeOptions(("batch=" + options.trim()).str(),
                                     errorHandler);
    return Base::initializeOptions(options, errorHandler);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    int64_t newBatch = batch;
    if (newBatch < 1) {
      module.emitError() << "soap-set-batch: the batch must be at least 1, "
                            "not "
                         << newBatch;
      return signalPassFailure();
    }
    func::FuncOp function =
        findTargetFuncOp(module, funcName, "soap-set-batch");
    if (!function)
      return signalPassFailure();

    FailureOr<BatchDimensions> batchDims =
        BatchDimensions::find(function, "soap-set-batch", [&](unsigned index) {
          return !function.getArgAttr(index, SoapDialect::getParamAttrName());
        });
    if (failed(batchDims) || failed(batchDims->resize(function, newBatch)))
      return signalPassFailure();
  }
};

} // namespace

//===- Partition.cpp - a training step as one SPMD program ----------------===//
//
// The pass around soap::partitionByConfigs and soap::partitionBatch
// (soap/Partition/Partition.h).
//
//===----------------------------------------------------------------------===//

#include "PassSupport.h"
#include "soap/Partition/Partition.h"
#include "soap/Dialect/SoapDialect.h"
#include "soap/Passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"

namespace soap {
#define GEN_PASS_DEF_SOAPPARTITION
#include "soap/Passes/Passes.h.inc"
} // namespace soap

using namespace mlir;
using namespace soap;

namespace {

struct SoapPartitionPass
    : public soap::impl::SoapPartitionBase<SoapPartitionPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto function = module.lookupSymbol<func::FuncOp>(funcName);
    if (!function || function.isExternal()) {
      module.emitError() << "soap-partition: no function @" << funcName
                         << " with a body (make one with "
                            "--soap-training-step)";
      return signalPassFailure();
    }
    bool configured = carriesConfigs(function);
    std::optional<int64_t> declared = getDeclaredNumDevices(module);
    FailureOr<int> resolved = resolveDeviceCount(module, devices, 0);
    if (failed(resolved))
      return signalPassFailure();
    int64_t count = *resolved;
    if (configured && declared && count != *declared) {
      module.emitError() << "soap-partition: devices=" << count
                         << " but the configs are for soap.num_devices = "
                         << *declared << " devices";
      return signalPassFailure();
    }
    if (count < 1) {
      module.emitError() << "soap-partition: give the number of devices "
                            "with devices=N (N >= 1), not "
                         << count;
      return signalPassFailure();
    }
    if (failed(configured ? partitionByConfigs(function, count)
                          : partitionBatch(function, count)))
      return signalPassFailure();
    module->setAttr(SoapDialect::getNumDevicesAttrName(),
                    Builder(&getContext()).getI64IntegerAttr(count));
  }
};

} // namespace

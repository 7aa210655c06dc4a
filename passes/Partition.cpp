//===- Partition.cpp - a training step as one SPMD program ----------------===//
//
// The pass around soap::partitionBatch (soap/Partition/Partition.h).
//
//===----------------------------------------------------------------------===//

#include "soap/Partition/Partition.h"
#include "soap/Dialect/SoapDialect.h"
#include "soap/Passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
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
    int64_t count = devices;
    if (count < 1) {
      module.emitError() << "soap-partition: give the number of devices "
                            "with devices=N (N >= 1), not "
                         << count;
      return signalPassFailure();
    }
    auto function = module.lookupSymbol<func::FuncOp>(funcName);
    if (!function || function.isExternal()) {
      module.emitError() << "soap-partition: no function @" << funcName
                         << " with a body (make one with "
                            "--soap-training-step)";
      return signalPassFailure();
    }
    // Configs from --soap-search or --soap-apply-strategy describe more
    // than this version partitions: say so rather than ignore them quietly.
    unsigned configured = 0;
    module.walk([&](Operation *op) {
      if (op->hasAttr(SoapDialect::getConfigAttrName()))
        ++configured;
    });
    if (configured)
      emitWarning(module.getLoc())
          << "soap-partition: " << configured
          << " ops carry #soap.config; this version partitions the batch "
             "over all "
          << count << " devices (data parallelism) and does not follow them";
    if (failed(partitionBatch(function, count)))
      return signalPassFailure();
    module->setAttr(SoapDialect::getNumDevicesAttrName(),
                    Builder(&getContext()).getI64IntegerAttr(count));
  }
};

} // namespace

//===- ShardInterop.cpp - passes between SOAP and upstream shard ----------===//
//
// The passes around soap/Partition/ShardInterop.h: --soap-export-shard,
// --soap-import-shard and --soap-lower-shard.
//
//===----------------------------------------------------------------------===//

#include "PassSupport.h"
#include "soap/Partition/ShardInterop.h"
#include "soap/Dialect/SoapDialect.h"
#include "soap/Passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"

namespace soap {
#define GEN_PASS_DEF_SOAPEXPORTSHARD
#define GEN_PASS_DEF_SOAPIMPORTSHARD
#define GEN_PASS_DEF_SOAPLOWERSHARD
#include "soap/Passes/Passes.h.inc"
} // namespace soap

using namespace mlir;
using namespace soap;

namespace {

struct SoapExportShardPass
    : public soap::impl::SoapExportShardBase<SoapExportShardPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    func::FuncOp target;
    for (auto function : module.getOps<func::FuncOp>()) {
      if (function.isExternal())
        continue;
      if (funcName.empty() ? !carriesConfigs(function)
                           : function.getName() != funcName)
        continue;
      if (target) {
        module.emitError() << "soap-export-shard: several functions carry "
                              "#soap.config; choose one with func=NAME";
        return signalPassFailure();
      }
      target = function;
    }
    if (!target) {
      module.emitError() << "soap-export-shard: "
                         << (funcName.empty()
                                 ? std::string("no function carries "
                                               "#soap.config")
                                 : "no function @" + funcName +
                                       " with a body");
      return signalPassFailure();
    }
    FailureOr<int> resolved = resolveDeviceCount(module, devices, 0);
    if (failed(resolved))
      return signalPassFailure();
    int64_t count = *resolved;
    if (count < 1) {
      module.emitError() << "soap-export-shard: give the number of devices "
                            "with devices=N or soap.num_devices";
      return signalPassFailure();
    }
    if (failed(exportShardAnnotations(target, count)))
      return signalPassFailure();
  }
};

struct SoapImportShardPass
    : public soap::impl::SoapImportShardBase<SoapImportShardPass> {
  using Base::Base;

  void runOnOperation() override {
    for (auto function : getOperation().getOps<func::FuncOp>())
      if (!function.isExternal() &&
          failed(importShardAnnotations(function)))
        return signalPassFailure();
    // Grids no annotation refers to any more.
    SmallVector<shard::GridOp> grids(getOperation().getOps<shard::GridOp>());
    for (shard::GridOp grid : grids)
      if (SymbolTable::symbolKnownUseEmpty(grid, getOperation()))
        grid.erase();
  }
};

struct SoapLowerShardPass
    : public soap::impl::SoapLowerShardBase<SoapLowerShardPass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(lowerShardCollectives(getOperation())))
      signalPassFailure();
  }
};

} // namespace

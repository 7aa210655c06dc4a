//===- LowerCpu.cpp - --soap-lower-cpu ------------------------------------===//
//
// Thin: the lowering lives in lib/codegen (soap/codegen/CpuLowering.h).
//
//===----------------------------------------------------------------------===//

#include "soap/Passes/Passes.h"
#include "soap/codegen/CpuLowering.h"

namespace soap {
#define GEN_PASS_DEF_SOAPLOWERCPU
#include "soap/Passes/Passes.h.inc"
} // namespace soap

using namespace mlir;

namespace {

struct SoapLowerCpuPass
    : public soap::impl::SoapLowerCpuBase<SoapLowerCpuPass> {
  using Base::Base;

  void getDependentDialects(DialectRegistry &registry) const override {
    soap::getCpuLoweringDependentDialects(registry);
  }

  void runOnOperation() override {
    soap::CpuLoweringOptions options;
    options.entry = entry;
    options.traceOps = traceOps;
    options.overlapComm = overlapComm;
    options.fuseElementwise = fuseElementwise;
    options.collapseLoops = collapseLoops;
    options.tileTransposes = tileTransposes;
    options.registerReductions = registerReductions;
    options.reassociateReductions = reassociateReductions;
    options.sparseUpdates = sparseUpdates;
    options.mergeAccumulations = mergeAccumulations;
    options.foldBroadcasts = foldBroadcasts;
    options.mergeReductions = mergeReductions;
    options.planeUpdates = planeUpdates;
    options.blockedWeights = blockedWeights;
    if (kernels == "blas") {
      options.kernels = soap::KernelCodegen::Blas;
    } else if (kernels == "vector") {
      options.kernels = soap::KernelCodegen::Vector;
    } else if (kernels == "loops") {
      options.kernels = soap::KernelCodegen::Loops;
    } else {
      getOperation().emitError()
          << "kernels=" << kernels << " is not one of blas, vector, loops";
      return signalPassFailure();
    }
    auto run = [&](OpPassManager &pm) {
      return runPipeline(pm, getOperation());
    };
    if (failed(soap::lowerModuleForCpu(getOperation(), options, run)))
      signalPassFailure();
  }
};

} // namespace

//===- LowerGpu.cpp - --soap-lower-gpu ------------------------------------===//
//
// Thin: the lowering lives in lib/codegen (soap/codegen/GpuLowering.h).
//
//===----------------------------------------------------------------------===//

#include "soap/Passes/Passes.h"
#include "soap/codegen/GpuLowering.h"

namespace soap {
#define GEN_PASS_DEF_SOAPLOWERGPU
#include "soap/Passes/Passes.h.inc"
} // namespace soap

using namespace mlir;

namespace {

struct SoapLowerGpuPass
    : public soap::impl::SoapLowerGpuBase<SoapLowerGpuPass> {
  using Base::Base;

  void getDependentDialects(DialectRegistry &registry) const override {
    soap::getGpuLoweringDependentDialects(registry);
  }

  void runOnOperation() override {
    // NVVM's target takes any string and fails deep inside on a bad one.
    // sm_<version>, with at most one feature-set suffix (sm_90a, sm_100f).
    llvm::StringRef arch(chip);
    unsigned version;
    bool named = arch.consume_front("sm_");
    if (arch.ends_with("a") || arch.ends_with("f"))
      arch = arch.drop_back();
    if (!named || arch.getAsInteger(10, version)) {
      getOperation().emitError()
          << "chip='" << chip
          << "' is not an NVIDIA architecture name such as sm_80 or sm_90a";
      return signalPassFailure();
    }
    soap::GpuLoweringOptions options;
    options.entry = entry;
    options.chip = chip;
    options.features = features;
    options.format = format;
    options.traceOps = traceOps;
    options.overlapComm = overlapComm;
    std::optional<soap::GpuMath> parsed = soap::parseGpuMath(math);
    if (!parsed) {
      getOperation().emitError()
          << "math=" << math << " is not one of f32, tf32, bf16";
      return signalPassFailure();
    }
    options.math = *parsed;
    auto run = [&](OpPassManager &pm) {
      return runPipeline(pm, getOperation());
    };
    if (failed(soap::lowerModuleForGpu(getOperation(), options, run)))
      signalPassFailure();
  }
};

} // namespace

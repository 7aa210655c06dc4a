//===- TargetTuning.cpp - how SOAP tunes LLVM's code for its CPU ---------===//
//
// See TargetTuning.h for why.
//
//===----------------------------------------------------------------------===//

#include "soap/codegen/TargetTuning.h"

#include "llvm/TargetParser/SubtargetFeature.h"
#include "llvm/TargetParser/Triple.h"

void soap::codegen::addCodegenTuning(const llvm::Triple &triple,
                                     llvm::SubtargetFeatures &features) {
  if (!triple.isX86())
    return;
  features.AddFeature("prefer-no-gather");
  features.AddFeature("prefer-no-scatter");
}

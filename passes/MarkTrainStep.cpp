//===- MarkTrainStep.cpp - --soap-mark-train-step -------------------------===//

#include "soap/Passes/Passes.h"
#include "soap/codegen/MarkTrainStep.h"

namespace soap {
#define GEN_PASS_DEF_SOAPMARKTRAINSTEP
#include "soap/Passes/Passes.h.inc"
} // namespace soap

using namespace mlir;

namespace {

struct SoapMarkTrainStepPass
    : public soap::impl::SoapMarkTrainStepBase<SoapMarkTrainStepPass> {
  using Base::Base;

  void runOnOperation() override {
    soap::TrainStepMarking marking;
    marking.func = funcName;
    marking.params.assign(params.begin(), params.end());
    marking.labels.assign(labels.begin(), labels.end());
    marking.loss = loss;
    marking.init = init;
    if (failed(soap::markTrainStep(getOperation(), marking)))
      signalPassFailure();
  }
};

} // namespace

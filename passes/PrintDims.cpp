//===- PrintDims.cpp - report how each op can be partitioned --------------===//

#include "PassSupport.h"
#include "soap/Dialect/DimensionKinds.h"
#include "soap/Dialect/Registration.h"
#include "soap/Passes/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

namespace soap {
#define GEN_PASS_DEF_SOAPPRINTDIMS
#include "soap/Passes/Passes.h.inc"
} // namespace soap

using namespace mlir;
using namespace soap;

namespace {

/// True for ops that compute tensors outside the interface; constants and
/// the bodies of linalg ops are not reported.
static bool computesTensor(Operation *op) {
  if (op->hasTrait<OpTrait::ConstantLike>())
    return false;
  return llvm::any_of(op->getResultTypes(),
                      [](Type type) { return isa<TensorType>(type); });
}

struct SoapPrintDimsPass
    : public soap::impl::SoapPrintDimsBase<SoapPrintDimsPass> {
  using Base::Base;

  void runOnOperation() override {
    // TOSA ops are not partitionable as they are: say how to lower them
    // before the remarks that call each one replicated.
    if (Operation *tosa = findTosaOp(getOperation()))
      tosa->emitWarning()
          << "soap-print-dims: the module is TOSA, which SOAP partitions "
             "after lowering it to linalg: soap-opt --pass-pipeline=\""
          << kTosaToLinalgPipeline << "\"";
    DimensionKindAnalysis analysis(getOperation());
    getOperation().walk([&](Operation *op) {
      if (auto partitionable = dyn_cast<PartitionableOpInterface>(op)) {
        report(partitionable, analysis);
        return;
      }
      if (computesTensor(op))
        emitRemark(op->getLoc()) << "'" << op->getName()
                         << "' is not partitionable; it runs replicated";
    });
  }

  void report(PartitionableOpInterface op,
              const DimensionKindAnalysis &analysis) {
    if (auto reason = op.getUnsupportedReason()) {
      emitRemark(op->getLoc()) << "'" << op->getName() << "' is not partitionable ("
                       << *reason << "); it runs replicated";
      return;
    }
    SmallVector<int64_t> sizes = op.getLoopSizes();
    SmallVector<std::string> names = op.getLoopNames();
    SmallVector<DimKind> kinds = analysis.getLoopKinds(op);
    InFlightDiagnostic remark = emitRemark(op->getLoc()) << "dims";
    if (sizes.empty())
      remark << " (none: a scalar op)";
    for (auto [name, size, kind] : llvm::zip(names, sizes, kinds)) {
      remark << " " << name << ":";
      if (ShapedType::isDynamic(size))
        remark << "?";
      else
        remark << size;
      remark << ":" << stringifyDimKind(kind);
    }
    if (showCost) {
      if (llvm::any_of(sizes, ShapedType::isDynamic)) {
        remark << " (cost unknown: dynamic sizes)";
        return;
      }
      ShardCost cost = op.getShardCost(sizes);
      remark << " flops=" << static_cast<int64_t>(cost.flops)
             << " bytes=" << static_cast<int64_t>(cost.bytes());
    }
  }
};

} // namespace

void soap::registerSoapPasses() { registerSOAPPasses(); }

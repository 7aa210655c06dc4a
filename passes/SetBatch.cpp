//===- SetBatch.cpp - rewrite the batch size of a model -------------------===//
//
// Exports are usually made at batch 1. This pass changes the batch size of
// the target function: the batch dimension of every input argument (not
// {soap.param}; dimension 0 unless {soap.batch_dim = k}) becomes N, and so
// does every dimension derived from it.
//
// Which dimensions are derived from the batch:
// soap/Partition/BatchDimensions.h. Callers of the function (a printing
// @main) repeat their one sample over the new batch and read the first
// sample of the results, or call a copy of the function at its old batch.
//
//===----------------------------------------------------------------------===//

#include "PassSupport.h"
#include "soap/Dialect/SoapDialect.h"
#include "soap/Partition/BatchDimensions.h"
#include "soap/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

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
    if (!function ||
        failed(refuseAfterTrainingStep(module, function, "soap-set-batch")))
      return signalPassFailure();

    SmallVector<Type> oldInputs(function.getArgumentTypes());
    SmallVector<Type> oldResults(function.getResultTypes());
    func::FuncOp original = copyForCallers(module, function);
    FailureOr<BatchDimensions> batchDims =
        BatchDimensions::find(function, "soap-set-batch", [&](unsigned index) {
          return !function.getArgAttr(index, SoapDialect::getParamAttrName());
        });
    if (failed(batchDims)) {
      if (original)
        original.erase();
      return signalPassFailure();
    }
    if (original) {
      std::string name = (function.getName() + "_batch" +
                          Twine(batchDims->getBatch()))
                             .str();
      for (unsigned i = 1; module.lookupSymbol(name); ++i)
        name = (function.getName() + "_batch" + Twine(batchDims->getBatch()) +
                "_" + Twine(i))
                   .str();
      original.setName(name);
    }
    batchDims->reportBatchDivisors(function, newBatch, rescaleMeans);
    if (failed(batchDims->resize(function, newBatch)) ||
        failed(adaptCallers(module, function, original, oldInputs,
                            oldResults)))
      return signalPassFailure();
    if (original && original.symbolKnownUseEmpty(module))
      original.erase();
  }

  /// A copy of `function` at its current batch, for callers that cannot
  /// follow the new one; null when nothing calls it. Its arguments lose
  /// {soap.param}: it is not the model SOAP trains.
  func::FuncOp copyForCallers(ModuleOp module, func::FuncOp function) {
    if (function.symbolKnownUseEmpty(module))
      return {};
    OpBuilder builder(function);
    builder.setInsertionPointAfter(function);
    auto copy = cast<func::FuncOp>(builder.clone(*function));
    copy.setPrivate();
    for (unsigned i = 0, e = copy.getNumArguments(); i < e; ++i)
      copy.removeArgAttr(i, SoapDialect::getParamAttrName());
    return copy;
  }

  /// Callers (a printing @main) keep computing what they computed. At
  /// batch 1, each of their size-1 batch inputs is repeated over the new
  /// batch and they read the first sample of each result (samples are
  /// independent in an exported model, so that sample is what they got).
  /// Callers that pass a larger batch call `original`, the function at its
  /// old batch, instead.
  LogicalResult adaptCallers(ModuleOp module, func::FuncOp function,
                             func::FuncOp original, ArrayRef<Type> oldInputs,
                             ArrayRef<Type> oldResults) {
    std::optional<SymbolTable::UseRange> uses =
        SymbolTable::getSymbolUses(function, module);
    if (!uses)
      return success();
    for (const SymbolTable::SymbolUse &use : *uses) {
      auto call = dyn_cast<func::CallOp>(use.getUser());
      if (!call)
        return use.getUser()->emitError()
               << "soap-set-batch: @" << function.getName()
               << " is referenced by '" << use.getUser()->getName()
               << "', which cannot follow its new batch";
      auto repeatable = [&](auto pair) {
        auto [from, to] = pair;
        auto fromType = cast<RankedTensorType>(from);
        auto toType = cast<RankedTensorType>(to);
        for (unsigned d = 0; d < fromType.getRank(); ++d)
          if (fromType.getDimSize(d) != toType.getDimSize(d) &&
              fromType.getDimSize(d) != 1)
            return false;
        return true;
      };
      if (!llvm::all_of(llvm::zip(oldInputs, function.getArgumentTypes()),
                        repeatable)) {
        call.setCallee(original.getName());
        continue;
      }
      OpBuilder builder(call);
      Location loc = call.getLoc();
      for (auto [index, oldType] : llvm::enumerate(oldInputs)) {
        Type newType = function.getArgumentTypes()[index];
        if (newType == oldType)
          continue;
        auto from = cast<RankedTensorType>(oldType);
        auto to = cast<RankedTensorType>(newType);
        SmallVector<AffineExpr> read;
        for (unsigned d = 0; d < from.getRank(); ++d)
          read.push_back(from.getDimSize(d) == to.getDimSize(d)
                             ? builder.getAffineDimExpr(d)
                             : builder.getAffineConstantExpr(0));
        unsigned rank = to.getRank();
        Value init = tensor::EmptyOp::create(builder, loc, to.getShape(),
                                             to.getElementType());
        Value repeated =
            linalg::GenericOp::create(
                builder, loc, TypeRange{to}, ValueRange{call.getOperand(index)},
                ValueRange{init},
                ArrayRef<AffineMap>{
                    AffineMap::get(rank, 0, read, builder.getContext()),
                    builder.getMultiDimIdentityMap(rank)},
                SmallVector<utils::IteratorType>(rank,
                                                 utils::IteratorType::parallel),
                [](OpBuilder &nb, Location l, ValueRange args) {
                  linalg::YieldOp::create(nb, l, args[0]);
                })
                .getResult(0);
        call->setOperand(index, repeated);
      }
      builder.setInsertionPointAfter(call);
      for (auto [index, oldType] : llvm::enumerate(oldResults)) {
        Value result = call.getResult(index);
        Type newType = function.getResultTypes()[index];
        if (newType == oldType)
          continue;
        result.setType(newType);
        auto from = cast<RankedTensorType>(oldType);
        SmallVector<OpFoldResult> offsets(from.getRank(),
                                          builder.getIndexAttr(0));
        SmallVector<OpFoldResult> strides(from.getRank(),
                                          builder.getIndexAttr(1));
        SmallVector<OpFoldResult> sizes;
        for (int64_t size : from.getShape())
          sizes.push_back(builder.getIndexAttr(size));
        Value first = tensor::ExtractSliceOp::create(
            builder, loc, from, result, offsets, sizes, strides);
        result.replaceAllUsesExcept(first, first.getDefiningOp());
      }
    }
    return success();
  }
};

} // namespace

//===- JitRunner.cpp - run tensor functions on host buffers ---------------===//

#include "JitRunner.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <cstring>

using namespace mlir;

namespace soap::gradcheck {

int64_t BufferSpec::numElements() const {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  return n;
}

int64_t BufferSpec::bytes() const {
  unsigned bits = elementType.isIndex() ? 64 : elementType.getIntOrFloatBitWidth();
  return numElements() * std::max<int64_t>(1, bits / 8);
}

double Buffers::getDouble(size_t buffer, int64_t index) const {
  const BufferSpec &spec = specs[buffer];
  const void *base = data[buffer].data();
  if (spec.elementType.isF64())
    return static_cast<const double *>(base)[index];
  if (spec.elementType.isF32())
    return static_cast<const float *>(base)[index];
  if (spec.elementType.isInteger(64))
    return static_cast<double>(static_cast<const int64_t *>(base)[index]);
  if (spec.elementType.isInteger(32))
    return static_cast<double>(static_cast<const int32_t *>(base)[index]);
  return 0.0;
}

void Buffers::setDouble(size_t buffer, int64_t index, double value) {
  const BufferSpec &spec = specs[buffer];
  void *base = data[buffer].data();
  if (spec.elementType.isF64())
    static_cast<double *>(base)[index] = value;
  else if (spec.elementType.isF32())
    static_cast<float *>(base)[index] = static_cast<float>(value);
  else
    setInteger(buffer, index, static_cast<int64_t>(value));
}

void Buffers::setInteger(size_t buffer, int64_t index, int64_t value) {
  const BufferSpec &spec = specs[buffer];
  void *base = data[buffer].data();
  if (spec.elementType.isInteger(64) || spec.elementType.isIndex())
    static_cast<int64_t *>(base)[index] = value;
  else if (spec.elementType.isInteger(32))
    static_cast<int32_t *>(base)[index] = static_cast<int32_t>(value);
  else
    setDouble(buffer, index, static_cast<double>(value));
}

/// Collects the diagnostics emitted while alive.
class DiagnosticCollector {
public:
  explicit DiagnosticCollector(MLIRContext *context)
      : handler(context, [this](Diagnostic &diag) {
          if (!text.empty())
            text += "; ";
          text += diag.str();
          return success();
        }) {}
  std::string text;

private:
  ScopedDiagnosticHandler handler;
};

/// `name_main(memref args..., memref results...)` running `function`'s body.
static FailureOr<std::vector<BufferSpec>> wrap(func::FuncOp function,
                                               std::string &error) {
  OpBuilder b(function);
  Location loc = function.getLoc();
  std::vector<BufferSpec> specs;
  SmallVector<Type> argTypes;
  for (Type type : llvm::concat<const Type>(function.getArgumentTypes(),
                                            function.getResultTypes())) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || !tensor.hasStaticShape()) {
      error = "'" + function.getName().str() +
              "' has an argument or result that is not a static tensor";
      return failure();
    }
    specs.push_back({std::vector<int64_t>(tensor.getShape().begin(),
                                          tensor.getShape().end()),
                     tensor.getElementType()});
    argTypes.push_back(
        MemRefType::get(tensor.getShape(), tensor.getElementType()));
  }
  auto wrapper = func::FuncOp::create(b, loc, function.getName().str() + "_main",
                                      b.getFunctionType(argTypes, {}));
  Block *entry = wrapper.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Block &body = function.getBody().front();
  IRMapping mapping;
  unsigned numArgs = function.getNumArguments();
  for (unsigned i = 0; i < numArgs; ++i) {
    Value tensor = bufferization::ToTensorOp::create(
        b, loc, function.getArgumentTypes()[i], entry->getArgument(i),
        /*restrict=*/true, /*writable=*/false);
    mapping.map(body.getArgument(i), tensor);
  }
  for (Operation &op : body.without_terminator())
    b.clone(op, mapping);
  for (auto [i, result] : llvm::enumerate(body.getTerminator()->getOperands()))
    bufferization::MaterializeInDestinationOp::create(
        b, loc, Type(), mapping.lookupOrDefault(result),
        entry->getArgument(numArgs + i), /*restrict=*/true, /*writable=*/true);
  func::ReturnOp::create(b, loc);
  return specs;
}

static bool runPipeline(ModuleOp module, StringRef pipeline,
                        std::string &error) {
  PassManager pm(module.getContext(), ModuleOp::getOperationName());
  std::string parseError;
  llvm::raw_string_ostream os(parseError);
  if (failed(parsePassPipeline(pipeline, pm, os))) {
    error = "bad pass pipeline: " + parseError;
    return false;
  }
  DiagnosticCollector diagnostics(module.getContext());
  if (failed(pm.run(module))) {
    error = "lowering failed: " + diagnostics.text;
    return false;
  }
  return true;
}

std::unique_ptr<JitRunner> JitRunner::create(ModuleOp module,
                                             const std::vector<std::string> &names,
                                             std::string &error) {
  std::unique_ptr<JitRunner> runner(new JitRunner());
  SmallVector<func::FuncOp> keep;
  for (const std::string &name : names) {
    auto function = module.lookupSymbol<func::FuncOp>(name);
    if (!function) {
      error = "no function '" + name + "'";
      return nullptr;
    }
    FailureOr<std::vector<BufferSpec>> specs = wrap(function, error);
    if (failed(specs))
      return nullptr;
    runner->names.push_back(name);
    runner->specs.push_back(std::move(*specs));
  }
  for (auto function : llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
    if (!function.getName().ends_with("_main"))
      function.erase();

  if (!runPipeline(
          module,
          "func.func(canonicalize, cse), "
          "one-shot-bufferize, "
          "func.func(canonicalize), buffer-deallocation-pipeline, "
          "convert-bufferization-to-memref, "
          "func.func(convert-linalg-to-loops, fold-memref-alias-ops, "
          "canonicalize, cse), "
          "expand-strided-metadata, lower-affine, convert-scf-to-cf, "
          "func.func(canonicalize, cse), finalize-memref-to-llvm, "
          "convert-math-to-llvm, convert-math-to-libm, convert-arith-to-llvm, "
          "convert-ub-to-llvm, convert-index-to-llvm, "
          "convert-func-to-llvm{use-bare-ptr-memref-call-conv=true}, "
          "convert-cf-to-llvm, reconcile-unrealized-casts",
          error))
    return nullptr;

  if (std::getenv("SOAP_GRADCHECK_DUMP"))
    module.dump();
  ExecutionEngineOptions options;
  options.jitCodeGenOptLevel = llvm::CodeGenOptLevel::None;
  SmallVector<StringRef> libraries;
  if (llvm::sys::fs::exists(SOAP_MLIR_C_RUNNER_UTILS))
    libraries.push_back(SOAP_MLIR_C_RUNNER_UTILS);
  options.sharedLibPaths = libraries;
  DiagnosticCollector diagnostics(module.getContext());
  auto engine = ExecutionEngine::create(module, options);
  if (!engine) {
    error = "JIT compilation failed: " + llvm::toString(engine.takeError()) +
            " " + diagnostics.text;
    return nullptr;
  }
  runner->engine = std::move(*engine);
  return runner;
}

Buffers JitRunner::makeBuffers(const std::string &name) const {
  Buffers buffers;
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] != name)
      continue;
    buffers.specs = specs[i];
    for (const BufferSpec &spec : specs[i])
      buffers.data.emplace_back((std::max<int64_t>(spec.bytes(), 8) + 7) / 8, 0);
  }
  return buffers;
}

bool JitRunner::run(const std::string &name, Buffers &buffers,
                    std::string &error) {
  std::vector<void *> pointers;
  for (auto &data : buffers.data)
    pointers.push_back(data.data());
  std::vector<void *> args;
  for (void *&pointer : pointers)
    args.push_back(&pointer);
  llvm::Error result = engine->invokePacked(name + "_main", args);
  if (result) {
    error = llvm::toString(std::move(result));
    return false;
  }
  return true;
}

} // namespace soap::gradcheck

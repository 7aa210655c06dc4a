//===- JitRunner.h - run tensor functions on host buffers -------*- C++ -*-===//
//
// Compiles functions on tensors (linalg, tensor, arith, math) with
// upstream passes (bufferization, linalg to loops, LLVM) and runs them on
// host buffers: a reference executor for soap-gradcheck, independent of
// SOAP's own lowering.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_TEST_TOOLS_GRADCHECK_JITRUNNER_H
#define SOAP_TEST_TOOLS_GRADCHECK_JITRUNNER_H

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace soap::gradcheck {

/// One argument or result buffer: its element type and shape.
struct BufferSpec {
  std::vector<int64_t> shape;
  mlir::Type elementType;
  int64_t numElements() const;
  int64_t bytes() const;
};

/// The buffers of one compiled function: its arguments, then its results.
struct Buffers {
  std::vector<BufferSpec> specs;
  std::vector<std::vector<uint64_t>> data; // 8-byte aligned storage

  double getDouble(size_t buffer, int64_t index) const;
  void setDouble(size_t buffer, int64_t index, double value);
  void setInteger(size_t buffer, int64_t index, int64_t value);
};

/// Compiled functions of one module.
class JitRunner {
public:
  /// Wraps each function of `names` (tensors in, tensors out) in a
  /// function on buffers, drops every other function, lowers the module to
  /// LLVM and compiles it. Returns null with `error` on failure.
  static std::unique_ptr<JitRunner>
  create(mlir::ModuleOp module, const std::vector<std::string> &names,
         std::string &error);

  /// Fresh buffers for function `name` (zero-filled).
  Buffers makeBuffers(const std::string &name) const;
  /// Runs `name` on `buffers` (arguments read, results written).
  bool run(const std::string &name, Buffers &buffers, std::string &error);

private:
  std::unique_ptr<mlir::ExecutionEngine> engine;
  std::vector<std::string> names;
  std::vector<std::vector<BufferSpec>> specs;
};

} // namespace soap::gradcheck

#endif // SOAP_TEST_TOOLS_GRADCHECK_JITRUNNER_H

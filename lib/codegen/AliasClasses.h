//===- AliasClasses.h - which buffers may be the same memory --*- C++ -*-===//
//
// Internal to lib/codegen. A union-find over a function's memref values,
// built once in linear time: a value is in its source's class when it is
// a view of it, a select of it, a region's or loop's result or argument it
// is yielded to, or the result of any other op that takes it. An
// allocation starts a class of its own. Buffers of unknown origin (the
// function's arguments, results of calls and of ops that take no memref)
// all share one external class. A global yielded by a region is not
// joined with the region's result: nothing frees a global.
//
// The deallocation passes split and move frees by class
// (Deallocations.cpp); the convolution calls ask whether anything between
// two ops may write or free a buffer they read (ConvolutionCalls.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_LIB_CODEGEN_ALIASCLASSES_H
#define SOAP_LIB_CODEGEN_ALIASCLASSES_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"

#include "llvm/ADT/DenseMap.h"

namespace soap::codegen {

/// Whether `value` is a memref.
bool isBuffer(mlir::Value value);

/// Classes of memref values that may be the same memory (file comment).
class AliasClasses {
public:
  /// The classes of the memref values defined in `root` (a function or a
  /// module), as they are now.
  explicit AliasClasses(mlir::Operation *root);

  /// The representative of `value`'s class.
  mlir::Value leader(mlir::Value value);

  /// Whether `value`'s class holds buffers of unknown origin.
  bool isExternal(mlir::Value value);

  /// Whether `a` and `b` may be the same memory: one class, or either one
  /// a value the classes did not see (made after they were built).
  bool mayAlias(mlir::Value a, mlir::Value b);

  /// Whether `op` (or an op nested in it) takes or makes a buffer of
  /// `buffer`'s class.
  bool touches(mlir::Operation *op, mlir::Value buffer);

private:
  void join(mlir::Value a, mlir::Value b);
  void markExternal(mlir::Value value);
  void visit(mlir::Operation *op);

  llvm::DenseMap<mlir::Value, mlir::Value> parent;
  mlir::Value external;
};

} // namespace soap::codegen

#endif // SOAP_LIB_CODEGEN_ALIASCLASSES_H

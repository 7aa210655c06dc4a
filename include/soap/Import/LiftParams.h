//===- LiftParams.h - an export's weights become parameters -----*- C++ -*-===//
//
// What --soap-lift-params does to one function, as a library call (the
// pass only reads its options). The rules, in the order they apply:
//
// 1. Integer constants the exporter elided (position ids, token types) have
//    no values to run with: an error naming the constant, or filled with
//    0, 1, 2, ... along the last dimension (`iota`) or zeros.
// 2. Normalizations in evaluation form (BatchNorm.h) use the batch's
//    statistics (`train`) or keep theirs as constants (`frozen`).
// 3. Float constant tensors of at least `minElements` elements become
//    leading arguments marked {soap.param}, except where they are structural:
//    a splat used as a destination (`outs`), or read through the identity
//    map of an elementwise linalg.generic beside a computed input of the
//    same shape (a broadcast zero or scale), stays a constant there.
//    A splat constant gets one parameter per op that uses it (CSE merges
//    equal splats of unrelated layers), also where it reaches the ops
//    through a layout copy that CSE merged too (a broadcast bias shared by
//    several convolutions: each gets its own copy); any other constant
//    gets one parameter for all its uses (a real weight tie).
// 4. Arguments named by index become parameters.
// 5. A parameter without values (an elided constant, an argument named by
//    index, every lifted weight under init=seed) starts from the runtime's
//    seed as its uses say: a contraction's weight from the fan-in of the
//    dimensions it is contracted over ("fan-in:N"), a gathered table
//    ("fan-in:1") uniform in [-1, 1), an elementwise factor ones, an
//    elementwise addend zeros, looking through transposes, broadcasts,
//    reshapes and copies; otherwise the runtime's "fan-in".
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_IMPORT_LIFTPARAMS_H
#define SOAP_IMPORT_LIFTPARAMS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace soap {

/// How a normalization exported in evaluation form trains.
enum class BatchNormMode {
  /// The statistics of each batch (PyTorch's model.train()).
  Train,
  /// The exported statistics, constant (mean 0 and variance 1 when elided).
  Frozen,
};

/// What an elided integer constant becomes.
enum class ElidedIntegers { Error, Iota, Zeros };

struct LiftOptions {
  int64_t minElements = 2;
  BatchNormMode batchNorm = BatchNormMode::Train;
  ElidedIntegers elidedIntegers = ElidedIntegers::Error;
  /// Whether every lifted weight starts from the runtime's seed as its
  /// uses say (rule 5) instead of the exported values (training from
  /// scratch; exports whose weights were stripped to splats).
  bool initFromSeed = false;
  /// Arguments of the function (original numbering) that are parameters.
  llvm::SmallVector<unsigned> parameterArguments;
};

/// Parses `params=` (indices and inclusive ranges: "0,1,4-7"); false with
/// `error` on a malformed list.
bool parseArgumentList(llvm::StringRef text,
                       llvm::SmallVectorImpl<unsigned> &indices,
                       std::string &error);

/// Applies the rules above to `function`; calls to it in `module` pass the
/// lifted constants. Errors are emitted on the op concerned.
mlir::LogicalResult liftParameters(mlir::ModuleOp module,
                                   mlir::func::FuncOp function,
                                   const LiftOptions &options);

/// Rule 1 alone: fills or reports every elided integer constant of
/// `function`; returns how many it filled.
mlir::FailureOr<unsigned> resolveElidedIntegers(mlir::func::FuncOp function,
                                                ElidedIntegers mode);

} // namespace soap

#endif // SOAP_IMPORT_LIFTPARAMS_H

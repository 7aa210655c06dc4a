//===- GradientBuilder.h - state and helpers of one gradient sweep -*- C++ -*-===//
//
// Private to lib/autodiff: the adjoint map of a reverse sweep, tensor
// helpers the gradient rules share, and the rules themselves (one file per
// family of ops).
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_LIB_AUTODIFF_GRADIENTBUILDER_H
#define SOAP_LIB_AUTODIFF_GRADIENTBUILDER_H

#include "soap/Dialect/SoapDialect.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace soap::autodiff {

/// The adjoints of one reverse sweep over tensor ops, and the builders of
/// the ops gradients are made of.
class GradientBuilder {
public:
  explicit GradientBuilder(mlir::OpBuilder &builder) : b(builder) {}

  mlir::OpBuilder &b;

  /// True when `value` depends on a differentiated input and the loss
  /// depends on it: it needs an adjoint.
  bool isActive(mlir::Value value) const { return active.contains(value); }
  /// The adjoint accumulated so far (null: none, i.e. zero).
  mlir::Value adjoint(mlir::Value value) const { return adjoints.lookup(value); }
  /// Adds `gradient` to the adjoint of `value`; ignored when `value` is
  /// not active.
  void accumulate(mlir::Location loc, mlir::Value value, mlir::Value gradient);

  /// A tensor of `type` filled with `value`.
  mlir::Value filled(mlir::Location loc, mlir::RankedTensorType type,
                     double value);
  mlir::Value zeros(mlir::Location loc, mlir::RankedTensorType type) {
    return filled(loc, type, 0.0);
  }
  /// A scalar float constant of `type`.
  mlir::Value scalar(mlir::Location loc, mlir::Type type, double value);
  /// `lhs + rhs`, elementwise, same types.
  mlir::Value add(mlir::Location loc, mlir::Value lhs, mlir::Value rhs);
  /// `linalg.transpose` of `value` (result dim i = input dim perm[i]).
  mlir::Value transpose(mlir::Location loc, mlir::Value value,
                        llvm::ArrayRef<int64_t> perm);
  /// `source` inserted into zeros of `type` at `offsets` with `strides`.
  mlir::Value insertIntoZeros(mlir::Location loc, mlir::Value source,
                              mlir::RankedTensorType type,
                              llvm::ArrayRef<int64_t> offsets,
                              llvm::ArrayRef<int64_t> strides);
  /// A static strided slice of `source`.
  mlir::Value slice(mlir::Location loc, mlir::Value source,
                    llvm::ArrayRef<int64_t> offsets,
                    llvm::ArrayRef<int64_t> sizes,
                    llvm::ArrayRef<int64_t> strides);

  llvm::DenseSet<mlir::Value> active;
  llvm::DenseMap<mlir::Value, mlir::Value> adjoints;
  /// The #soap.config of the op being differentiated (null: none). The
  /// gradient ops built over its loops carry it (reordered as their loops
  /// are), so that the partitioned backward pass splits the loops the
  /// forward op split, on the same devices, as the simulator prices it.
  ConfigAttr forwardConfig;
  /// Whether the op being differentiated carries soap.replicated (a
  /// strategy runs it whole on every device): the ops of its gradient do
  /// too.
  bool forwardReplicated = false;
  /// Values whose readers' #soap.configs interleave (a layout comes back
  /// after another: Megatron alternating an RNN weight's split from one time
  /// step to the next). A contraction's gradient of such a value
  /// accumulates into the gradient of its own layout only (`chains`, one
  /// per config in the order first met), and settle() adds the chains up
  /// once, so that the sum moves once per layout instead of once per
  /// reader.
  llvm::DenseSet<mlir::Value> interleaved;
  llvm::DenseMap<mlir::Value,
                 llvm::SmallVector<std::pair<ConfigAttr, mlir::Value>>>
      chains;
  /// Adds `value`'s chains to its adjoint (nothing when it has none).
  void settle(mlir::Location loc, mlir::Value value);
  /// Set while accumulate() builds an adjoint sum: the sum is not part of
  /// the op's gradient and runs where its operands are.
  bool accumulating = false;
};

/// `config` (of a forward op) for a gradient op whose loop l is the
/// forward op's loop `forwardLoops[l]`: the same degree per loop and, task
/// by task, the same device. Null when `config` is.
ConfigAttr reorderedConfig(ConfigAttr config,
                           llvm::ArrayRef<unsigned> forwardLoops);

/// The gradient rules. Each reads the adjoints of `op`'s results (at least
/// one is set) and accumulates the adjoints of its active operands; on
/// failure it has emitted an error at `op`.
/// `forwardResults` are the results whose adjoints are read (those of the
/// named op a generic was generalized from); errors go to `reportOn` (that
/// named op; null: the generic).
mlir::LogicalResult differentiateGeneric(GradientBuilder &g,
                                         mlir::linalg::GenericOp op,
                                         mlir::ValueRange forwardResults,
                                         mlir::Operation *reportOn = nullptr);
mlir::LogicalResult differentiateLinalgOp(GradientBuilder &g,
                                          mlir::linalg::LinalgOp op);
mlir::LogicalResult differentiateTensorOp(GradientBuilder &g,
                                          mlir::Operation *op);

/// Emits, inside a linalg body being built, the derivative of `seed` (a
/// value of the original body `body`) with respect to `target` (a block
/// argument of `body` or a value computed in it), times `seedAdjoint`. `mapping` maps the original
/// body's values to their clones in the new body. Returns a zero constant
/// when `seed` does not depend on `target`; fails after an error at an op
/// without a derivative.
mlir::FailureOr<mlir::Value>
scalarDerivative(mlir::OpBuilder &b, mlir::Block &body,
                 mlir::IRMapping &mapping, mlir::Value seed,
                 mlir::Value seedAdjoint, mlir::Value target);

} // namespace soap::autodiff

#endif // SOAP_LIB_AUTODIFF_GRADIENTBUILDER_H

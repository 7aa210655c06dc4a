//===- GenericBody.h - how a generic's body forms its outputs -*- C++ -*-===//
//
// Private to lib/autodiff: the analysis of a linalg.generic body that the
// gradient rules for generics share (which value carries an output's
// adjoint, how a reduction combines), and the emission of one iteration
// point's contribution to an input's adjoint. The rules that use it: plain
// operands (GenericGradient.cpp), operands read through convolution
// windows (WindowGradient.cpp) and tensors read with `tensor.extract`
// (GatherGradient.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_LIB_AUTODIFF_GENERICBODY_H
#define SOAP_LIB_AUTODIFF_GENERICBODY_H

#include "GradientBuilder.h"

#include "mlir/IR/IRMapping.h"

namespace soap::autodiff {

/// How a body combines an output's previous value with a new one.
enum class Combiner {
  /// No reduction: the output is overwritten (or read elementwise).
  None,
  /// `out + h`, `h + out`, `out - h`, ... (the output enters linearly with
  /// coefficient one).
  Add,
  /// `max(out, h)` / `min(out, h)`, as a max/min op or a compare and select.
  Max,
  Min,
  /// `out * h`.
  Mul,
};

/// How one output of a generic is formed by its body.
struct OutputForm {
  unsigned output = 0;
  Combiner combiner = Combiner::None;
  /// The body value whose adjoint is the output's (times a mask for
  /// min/max, times `out / h` for products). For sums it is the yielded
  /// value itself, recomputed with the output's old value taken as zero.
  mlir::Value seed;
  /// Whether the value of an elementwise (reduction-free) output reads the
  /// output's old value.
  bool readsOutput = false;
  /// The op errors are reported on (the named op a generic came from).
  mlir::Operation *reportOn = nullptr;
};

/// Recognizes how output `output` of `op` is formed; fails after an error
/// at `reportOn` when its reduction is not one the gradient rules know.
mlir::FailureOr<OutputForm> analyzeOutput(mlir::linalg::GenericOp op,
                                          unsigned output,
                                          mlir::Operation *reportOn);

/// Gives the value of `linalg.index dim` in the body being built, or null
/// when the rule cannot.
using IndexBuilder = llvm::function_ref<mlir::Value(mlir::OpBuilder &,
                                                    mlir::Location, unsigned)>;

/// Emits into `b` the contribution of one iteration point of `op` to the
/// adjoint of `target` (a block argument of the body or a value computed
/// in it): the derivative of the output `form` describes times its
/// adjoint. `mapping` maps the body's input block arguments (and the
/// output's when `form.readsOutput`) to values of the new body; `adjoint`
/// is the output's adjoint there and `forward` its forward value (needed
/// for min, max and products). Clones only the body ops the output needs.
mlir::FailureOr<mlir::Value>
emitContribution(mlir::OpBuilder &b, mlir::Location loc,
                 mlir::linalg::GenericOp op, const OutputForm &form,
                 mlir::IRMapping &mapping, mlir::Value adjoint,
                 mlir::Value forward, mlir::Value target, IndexBuilder index);

/// The tensor holding the loop results of `map` (how an operand of `type`
/// is read; constant results are unit dimensions and dropped), and the map
/// that writes it.
mlir::RankedTensorType projectedGradientType(mlir::AffineMap map,
                                             mlir::RankedTensorType type,
                                             mlir::AffineMap &gradientMap);
/// The reassociation that expands that tensor back to the operand's type.
llvm::SmallVector<mlir::ReassociationIndices>
unitDimReassociation(mlir::AffineMap map);

/// Ends the body of a gradient generic: yields `accumulator +
/// contribution`, or the accumulator after marking `status` failed.
void yieldAccumulated(mlir::OpBuilder &b, mlir::Location loc,
                      mlir::Value accumulator,
                      mlir::FailureOr<mlir::Value> contribution,
                      mlir::LogicalResult &status);

/// The gradient a gradient generic built for an operand of `operandType`
/// read through `map`: erased and failed when its body failed; expanded to
/// the operand's unit dimensions when it has fewer.
mlir::FailureOr<mlir::Value> finishGradient(mlir::OpBuilder &b,
                                            mlir::linalg::GenericOp gradient,
                                            mlir::LogicalResult status,
                                            mlir::RankedTensorType operandType,
                                            mlir::AffineMap map);

/// The gradient of a generic's output with respect to an input read
/// through a window (`s * o + d * k` in its indexing map: convolutions and
/// pooling in any layout and dimension count). Fails after an error at
/// `form.reportOn` when the map is not of that form.
mlir::FailureOr<mlir::Value>
buildWindowGradient(GradientBuilder &g, mlir::linalg::GenericOp op,
                    const OutputForm &form, mlir::Value adjoint,
                    mlir::Value forward, mlir::OpOperand &operand);

/// Accumulates the gradients of the tensors `op`'s body reads with
/// `tensor.extract` at computed indices (gathers, embedding lookups): a
/// scatter-add of each point's contribution into the tensor's adjoint.
mlir::LogicalResult differentiateGathers(GradientBuilder &g,
                                         mlir::linalg::GenericOp op,
                                         const OutputForm &form,
                                         mlir::Value adjoint,
                                         mlir::Value forward);

} // namespace soap::autodiff

#endif // SOAP_LIB_AUTODIFF_GENERICBODY_H

//===- BatchNorm.h - normalizations exported in evaluation form -*- C++ -*-===//
//
// Exporters write batch norm as it runs at inference: an elementwise
// linalg.generic computing `(x - mean) * rsqrt(var + eps) * gamma + beta`
// whose running mean and variance are operands (constants, often elided).
// Training such a model needs either the statistics of each batch (what
// PyTorch's model.train() computes) or the exported statistics held fixed;
// trainable statistics would train a variance below zero.
//
// The normalization is recognized by the dataflow of the generic's body, not
// by operand positions: the operand that flows into `rsqrt(v + eps)` (or
// `1 / sqrt(v + eps)`, or a division by `sqrt(v + eps)`) is the variance,
// and the operand subtracted from another input (the activation) in the
// term that is scaled by it is the mean. Running statistics are constants
// or function arguments; statistics computed in the function (layer norm, a
// batch norm exported in training form) already are the batch's and are
// left alone.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_IMPORT_BATCHNORM_H
#define SOAP_IMPORT_BATCHNORM_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <optional>

namespace soap {

/// A normalization in evaluation form, by the input operands of its generic.
struct EvalNormalization {
  mlir::linalg::GenericOp op;
  /// Input operand numbers of the activation, the mean and the variance.
  unsigned activation = 0;
  unsigned mean = 0;
  unsigned variance = 0;
  /// The body ops that read the mean and the variance (the subtraction and
  /// the `v + eps` addition).
  mlir::Operation *meanUser = nullptr;
  mlir::Operation *varianceUser = nullptr;
};

/// The normalization `op` computes in evaluation form, if it does: every
/// loop parallel, one result, the statistics read through one map that
/// names a subset of the loops the activation's map names (the channels).
std::optional<EvalNormalization> matchEvalNormalization(mlir::linalg::GenericOp op);

/// Training-mode batch norm: replaces the mean and variance operands of
/// `norm` by the statistics of the activation, computed before it by
/// linalg.generic reductions over every loop of the activation that the
/// statistics do not name (mean, then biased variance). The reductions are
/// ordinary differentiable and partitionable ops, so gradients flow through
/// the statistics and a split batch reduces its partial sums across devices.
/// Fails with an error on the op when the activation's layout does not allow
/// it.
mlir::LogicalResult useBatchStatistics(EvalNormalization &norm);

/// Frozen batch norm: the mean and variance operands of `norm` become
/// constants of their own, inserted before it and added to `frozen` (so
/// that no other use of a shared constant decides their fate). A constant
/// the exporter elided becomes mean 0 and variance 1. Statistics that are
/// not constants are left alone.
void freezeStatistics(EvalNormalization &norm,
                      llvm::SmallPtrSetImpl<mlir::Operation *> &frozen);

} // namespace soap

#endif // SOAP_IMPORT_BATCHNORM_H

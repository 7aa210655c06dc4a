//===- LinearAffine.h - affine expressions as linear sums ------*- C++ -*-===//
//
// An affine expression over loops as `sum coefficient * dim + constant`:
// what a convolution's or pooling's window reads (`s * o + d * k + c`).
// Used by the autodiff (window gradients) and the lowering (convolution
// calls).
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_SUPPORT_LINEARAFFINE_H
#define SOAP_SUPPORT_LINEARAFFINE_H

#include "mlir/IR/AffineExpr.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <utility>

namespace soap {

/// `sum coefficient * dim + constant`.
struct LinearExpr {
  llvm::SmallVector<std::pair<unsigned, int64_t>> terms;
  int64_t constant = 0;
};

/// `expr` as a linear sum of loops; nothing for mod, div, symbols or a
/// product of two loops.
inline std::optional<LinearExpr> linearize(mlir::AffineExpr expr) {
  if (auto dim = llvm::dyn_cast<mlir::AffineDimExpr>(expr))
    return LinearExpr{{{dim.getPosition(), 1}}, 0};
  if (auto constant = llvm::dyn_cast<mlir::AffineConstantExpr>(expr))
    return LinearExpr{{}, constant.getValue()};
  auto binary = llvm::dyn_cast<mlir::AffineBinaryOpExpr>(expr);
  if (!binary)
    return std::nullopt;
  std::optional<LinearExpr> lhs = linearize(binary.getLHS());
  std::optional<LinearExpr> rhs = linearize(binary.getRHS());
  if (!lhs || !rhs)
    return std::nullopt;
  if (expr.getKind() == mlir::AffineExprKind::Add) {
    LinearExpr sum = *lhs;
    sum.constant += rhs->constant;
    for (auto [dim, coefficient] : rhs->terms) {
      auto it = llvm::find_if(sum.terms,
                              [&](auto &term) { return term.first == dim; });
      if (it != sum.terms.end())
        it->second += coefficient;
      else
        sum.terms.push_back({dim, coefficient});
    }
    return sum;
  }
  if (expr.getKind() == mlir::AffineExprKind::Mul) {
    const LinearExpr *scale = lhs->terms.empty() ? &*lhs : &*rhs;
    const LinearExpr *term = lhs->terms.empty() ? &*rhs : &*lhs;
    if (!scale->terms.empty())
      return std::nullopt;
    LinearExpr product = *term;
    product.constant *= scale->constant;
    for (auto &t : product.terms)
      t.second *= scale->constant;
    return product;
  }
  return std::nullopt;
}

} // namespace soap

#endif // SOAP_SUPPORT_LINEARAFFINE_H

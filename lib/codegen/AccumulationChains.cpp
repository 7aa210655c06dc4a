//===- AccumulationChains.cpp - products summed into one another as one ---===//
//
// A weight that a step uses several times gets the sum of one gradient
// product per use. The autodiff writes that sum as a chain of products,
// each accumulating into the previous one's result:
//
//   C1 = A1 B1 + C0,  C2 = A2 B2 + C1,  ...,  Cn = An Bn + C(n-1)
//
// (linalg.matmul's outs is its addend). An LSTM's weight gradient is such a
// chain over the time steps: each product [in + hidden, batch] x
// [batch, 4 hidden] has a reduction as short as the batch, so each reads
// and writes the whole [in + hidden, 4 hidden] accumulator for few flops,
// and a library GEMM runs it far below its peak.
//
// The chain is one product over the concatenated reduction dimension:
//
//   Cn = [A1 A2 ... An] [B1; B2; ...; Bn] + C0
//
// which mergeAccumulatingProducts builds in place of the last product,
// erasing the others: the accumulator is read and written once, and the
// library gets one GEMM with an n times longer reduction. Operands that are
// transposes of matrices (the autodiff's A^T) are concatenated before the
// transposition, so that the transpose still folds into the GEMM call as
// strides (foldTransposesIntoContractions). In real arithmetic the result
// is the same; in floating point the terms are summed in another order.
//
// A chain merges only where the copies it costs are smaller than the
// accumulator traffic it saves (each product's K (M + N) elements copied
// against 2 M N read and written), within one block, and where each
// intermediate result has no use besides the next product.
//
//===----------------------------------------------------------------------===//

#include "LoweringSteps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace soap::codegen {

namespace {

/// A plain 2-D product on tensors: linalg.matmul with its default maps, one
/// element type throughout.
bool isPlainProduct(linalg::MatmulOp op) {
  if (!op.hasPureTensorSemantics() || op.hasUserDefinedMaps() ||
      op->getNumResults() != 1)
    return false;
  Type element = getElementTypeOrSelf(op.getResult(0).getType());
  return llvm::all_of(op->getOperandTypes(), [&](Type type) {
    auto ranked = dyn_cast<RankedTensorType>(type);
    return ranked && ranked.hasStaticShape() && ranked.getRank() == 2 &&
           ranked.getElementType() == element;
  });
}

/// The product whose result `op` accumulates into, when that result has
/// no other use and both are in one block.
linalg::MatmulOp accumulatedProduct(linalg::MatmulOp op) {
  auto previous = op.getDpsInits()[0].getDefiningOp<linalg::MatmulOp>();
  if (!previous || !isPlainProduct(previous) ||
      previous->getBlock() != op->getBlock() ||
      !previous.getResult(0).hasOneUse())
    return nullptr;
  return previous;
}

/// The input of a 2-D linalg.transpose that swaps its dimensions, or null.
Value transposed(Value value) {
  auto transpose = value.getDefiningOp<linalg::TransposeOp>();
  if (!transpose || transpose.getPermutation() != ArrayRef<int64_t>{1, 0})
    return nullptr;
  return transpose.getInput();
}

/// The matrices `operands` concatenated along dimension `dim`. When each
/// is a transpose, their inputs are concatenated along the other dimension
/// and the result transposed, so that the transpose can still fold into
/// the product that reads it.
Value concatenate(OpBuilder &b, Location loc, ArrayRef<Value> operands,
                  int64_t dim) {
  SmallVector<Value> inputs;
  for (Value operand : operands)
    if (Value input = transposed(operand))
      inputs.push_back(input);
  if (inputs.size() != operands.size())
    return tensor::ConcatOp::create(b, loc, dim, operands);
  Value joined = tensor::ConcatOp::create(b, loc, 1 - dim, inputs);
  auto type = cast<RankedTensorType>(joined.getType());
  Value init = tensor::EmptyOp::create(
      b, loc, ArrayRef<int64_t>{type.getDimSize(1), type.getDimSize(0)},
      type.getElementType());
  return linalg::TransposeOp::create(b, loc, joined, init,
                                     ArrayRef<int64_t>{1, 0})
      ->getResult(0);
}

/// Whether merging `chain` saves memory traffic: each product's operands
/// (K (M + N) elements) are copied once, where the accumulator (M N) is
/// read and written once per product.
bool worthMerging(ArrayRef<linalg::MatmulOp> chain) {
  linalg::MatmulOp last = chain.back();
  auto shape = cast<RankedTensorType>(last.getResult(0).getType()).getShape();
  int64_t m = shape[0], n = shape[1];
  return llvm::all_of(chain, [&](linalg::MatmulOp op) {
    int64_t k =
        cast<RankedTensorType>(op.getDpsInputs()[0].getType()).getDimSize(1);
    return k * (m + n) <= 2 * m * n;
  });
}

struct MergeAccumulationsPass
    : PassWrapper<MergeAccumulationsPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(MergeAccumulationsPass)

  StringRef getArgument() const override { return "soap-merge-accumulations"; }
  StringRef getDescription() const override {
    return "merge chains of products that accumulate into one another "
           "into one product over the concatenated reduction dimension "
           "(the --soap-lower-cpu step merge-accumulations)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<tensor::TensorDialect>();
  }
  void runOnOperation() override { mergeAccumulatingProducts(getOperation()); }
};

} // namespace

std::unique_ptr<Pass> createMergeAccumulationsPass() {
  return std::make_unique<MergeAccumulationsPass>();
}

int mergeAccumulatingProducts(Operation *root) {
  // The last product of each chain: a plain product whose result is not
  // the addend of another one.
  SmallVector<linalg::MatmulOp> lasts;
  root->walk([&](linalg::MatmulOp op) {
    if (!isPlainProduct(op))
      return;
    Value result = op.getResult(0);
    if (result.hasOneUse())
      if (auto next = dyn_cast<linalg::MatmulOp>(*result.user_begin()))
        if (accumulatedProduct(next) == op)
          return;
    lasts.push_back(op);
  });

  IRRewriter rewriter(root->getContext());
  int merged = 0;
  for (linalg::MatmulOp last : lasts) {
    SmallVector<linalg::MatmulOp> chain{last};
    while (linalg::MatmulOp previous = accumulatedProduct(chain.back()))
      chain.push_back(previous);
    if (chain.size() < 2 || !worthMerging(chain))
      continue;
    std::reverse(chain.begin(), chain.end()); // first product first
    SmallVector<Value> lhs, rhs;
    for (linalg::MatmulOp op : chain) {
      lhs.push_back(op.getDpsInputs()[0]);
      rhs.push_back(op.getDpsInputs()[1]);
    }
    // Every operand is defined before its product, so before the last.
    rewriter.setInsertionPoint(last);
    Location loc = last.getLoc();
    Value a = concatenate(rewriter, loc, lhs, /*dim=*/1);
    Value b = concatenate(rewriter, loc, rhs, /*dim=*/0);
    auto product = linalg::MatmulOp::create(
        rewriter, loc, TypeRange{last.getResult(0).getType()}, ValueRange{a, b},
        ValueRange{chain.front().getDpsInits()[0]});
    rewriter.replaceOp(last, product->getResults());
    for (linalg::MatmulOp op : llvm::reverse(ArrayRef(chain).drop_back()))
      rewriter.eraseOp(op);
    // Transposes only the old products read.
    llvm::SetVector<Operation *> transposes;
    for (Value operand : llvm::concat<Value>(lhs, rhs))
      if (auto transpose = operand.getDefiningOp<linalg::TransposeOp>())
        transposes.insert(transpose);
    for (Operation *transpose : transposes)
      if (transpose->use_empty())
        rewriter.eraseOp(transpose);
    ++merged;
  }
  return merged;
}

} // namespace soap::codegen

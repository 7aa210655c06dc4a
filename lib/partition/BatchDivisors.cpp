//===- BatchDivisors.cpp - constants that count the batch ------------------===//
//
// A mean over the batch is often exported as a sum followed by a division
// by a constant: `sum / 120.0` for 20 samples of 6 values. Resizing the
// batch resizes the sum but not the constant. These are found by value (a
// divisor equal to the number of elements a reduction over the batch sums,
// or a factor equal to its inverse) near the reduction, and reported.
//
//===----------------------------------------------------------------------===//

#include "soap/Partition/BatchDimensions.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/SetVector.h"

#include <cmath>

using namespace mlir;
using namespace soap;

/// The value of `value` when it is a float constant: an arith.constant
/// scalar, or a block argument of `owner`'s body that reads a rank-0 or
/// splat constant operand.
static std::optional<double> constantScalar(Value value, Operation *owner) {
  APFloat constant(0.0);
  if (matchPattern(value, m_ConstantFloat(&constant)))
    return constant.convertToDouble();
  auto argument = dyn_cast<BlockArgument>(value);
  auto linalgOp = dyn_cast<linalg::LinalgOp>(owner);
  if (!argument || !linalgOp || argument.getOwner()->getParentOp() != owner)
    return std::nullopt;
  Value operand = linalgOp->getOperand(argument.getArgNumber());
  DenseElementsAttr elements;
  if (!matchPattern(operand, m_Constant(&elements)) || !elements.isSplat() ||
      !isa<FloatType>(elements.getElementType()))
    return std::nullopt;
  return elements.getSplatValue<APFloat>().convertToDouble();
}

static bool near(double value, double expected) {
  return std::abs(value - expected) <= 1e-6 * std::abs(expected);
}

void BatchDimensions::reportBatchDivisors(func::FuncOp function,
                                          int64_t newBatch) const {
  if (newBatch == batch)
    return;
  function.walk([&](linalg::LinalgOp op) {
    SmallVector<unsigned> loops = getBatchLoops(op);
    SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    bool overBatch = false;
    int64_t extent = 1, newExtent = 1;
    for (auto [loop, iterator] : llvm::enumerate(iterators)) {
      if (iterator != utils::IteratorType::reduction)
        continue;
      if (ShapedType::isDynamic(ranges[loop]))
        return;
      extent *= ranges[loop];
      bool isBatch = llvm::is_contained(loops, loop);
      overBatch |= isBatch;
      newExtent *= isBatch ? ranges[loop] / batch * newBatch : ranges[loop];
    }
    if (!overBatch || extent <= 1)
      return;
    // The reduction and the ops that use its result, a few steps on.
    llvm::SetVector<Operation *> nearOps;
    nearOps.insert(op);
    for (unsigned i = 0; i < nearOps.size() && nearOps.size() < 16; ++i)
      for (Value result : nearOps[i]->getResults())
        for (Operation *user : result.getUsers())
          if (isa<linalg::LinalgOp>(user))
            nearOps.insert(user);
    for (Operation *candidate : nearOps) {
      candidate->walk([&](Operation *arith) {
        std::optional<double> factor;
        bool divides = false;
        if (auto div = dyn_cast<arith::DivFOp>(arith)) {
          factor = constantScalar(div.getRhs(), candidate);
          divides = true;
        } else if (auto mul = dyn_cast<arith::MulFOp>(arith)) {
          factor = constantScalar(mul.getRhs(), candidate);
          if (!factor)
            factor = constantScalar(mul.getLhs(), candidate);
        }
        if (!factor ||
            !(divides ? near(*factor, extent) : near(*factor, 1.0 / extent)))
          return;
        InFlightDiagnostic diag = candidate->emitWarning();
        diag << pass << ": " << (divides ? "divides by " : "multiplies by ");
        if (*factor == std::round(*factor))
          diag << static_cast<int64_t>(*factor);
        else
          diag << *factor;
        diag << ", which counts the " << extent
             << " elements that '" << op->getName()
             << "' sums over the batch at batch " << batch
             << "; the constant is kept, so at batch " << newBatch
             << " (" << newExtent << " elements) this is no longer a mean";
        diag.attachNote(op->getLoc()) << "the reduction over the batch";
      });
    }
  });
}

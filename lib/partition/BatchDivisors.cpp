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
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/Format.h"

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

/// `value` in the shortest of fixed and scientific notation (120,
/// 0.0833333).
static void printFactor(InFlightDiagnostic &diag, double value) {
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%g", value);
  diag << text;
}

void BatchDimensions::reportBatchDivisors(func::FuncOp function,
                                          int64_t newBatch,
                                          bool rescale) const {
  if (newBatch == batch)
    return;
  // A constant operand of a divf or mulf, and what it becomes at the new
  // batch.
  struct Divisor {
    Operation *arith;
    unsigned operandIndex;
    double value, rescaled;
  };
  SmallVector<Divisor> found;
  llvm::SmallPtrSet<Operation *, 8> seen;
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
    // The reduction and the elementwise ops that use its result, a few
    // steps on. Another reduction on the way (a pooling of activations
    // normalized with batch statistics) sums elements of its own: a
    // divisor after it counts those (a global average pooling over 56 x 56
    // divides by 3136, which is also the extent of a batch norm's
    // statistics over 56 x 56 at batch 1), so the search stops there.
    llvm::SetVector<Operation *> nearOps;
    nearOps.insert(op);
    for (unsigned i = 0; i < nearOps.size() && nearOps.size() < 16; ++i)
      for (Value result : nearOps[i]->getResults())
        for (Operation *user : result.getUsers())
          if (auto next = dyn_cast<linalg::LinalgOp>(user);
              next && next.getNumReductionLoops() == 0)
            nearOps.insert(user);
    for (Operation *candidate : nearOps) {
      candidate->walk([&](Operation *arith) {
        std::optional<double> factor;
        unsigned index = 1;
        bool divides = isa<arith::DivFOp>(arith);
        if (divides) {
          factor = constantScalar(arith->getOperand(1), candidate);
        } else if (isa<arith::MulFOp>(arith)) {
          factor = constantScalar(arith->getOperand(1), candidate);
          if (!factor) {
            index = 0;
            factor = constantScalar(arith->getOperand(0), candidate);
          }
        }
        if (!factor ||
            !(divides ? near(*factor, extent) : near(*factor, 1.0 / extent)) ||
            !seen.insert(arith).second)
          return;
        double rescaled = divides ? static_cast<double>(newExtent)
                                  : 1.0 / static_cast<double>(newExtent);
        found.push_back({arith, index, *factor, rescaled});
        InFlightDiagnostic diag =
            rescale ? candidate->emitRemark() : candidate->emitWarning();
        diag << pass << ": " << (divides ? "divides by " : "multiplies by ");
        printFactor(diag, *factor);
        diag << ", which counts the " << extent << " elements that '"
             << op->getName() << "' sums over the batch at batch " << batch;
        if (rescale) {
          diag << "; rescaled to ";
          printFactor(diag, rescaled);
          diag << " for the " << newExtent << " elements at batch "
               << newBatch;
        } else {
          diag << "; the constant is kept, so at batch " << newBatch << " ("
               << newExtent
               << " elements) this is no longer a mean (rescale-means=1 "
                  "rescales it)";
        }
        diag.attachNote(op->getLoc()) << "the reduction over the batch";
      });
    }
  });
  if (!rescale)
    return;
  for (const Divisor &divisor : found) {
    OpBuilder builder(divisor.arith);
    Type type = divisor.arith->getOperand(divisor.operandIndex).getType();
    Value constant = arith::ConstantOp::create(
        builder, divisor.arith->getLoc(), type,
        builder.getFloatAttr(type, divisor.rescaled));
    divisor.arith->setOperand(divisor.operandIndex, constant);
  }
}

//===- LossFunctions.cpp - loss heads appended to a model's output --------===//
//
// Written as linalg.generic ops (numerically stable softmax: the row
// maximum is subtracted) so that the gradient rules handle them like any
// other part of the model.
//
//===----------------------------------------------------------------------===//

#include "LossFunctions.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <limits>

using namespace mlir;

namespace soap::autodiff {

static Value filledTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                          Type element, double value) {
  Value empty = tensor::EmptyOp::create(b, loc, shape, element);
  Value fill = arith::ConstantOp::create(b, loc, element,
                                         b.getFloatAttr(element, value));
  return linalg::FillOp::create(b, loc, ValueRange{fill}, ValueRange{empty})
      .getResult(0);
}

static Value floatConstant(OpBuilder &b, Location loc, Type type,
                           double value) {
  return arith::ConstantOp::create(b, loc, type, b.getFloatAttr(type, value));
}

Value buildSoftmaxCrossEntropy(OpBuilder &b, Location loc, Value logits,
                               Value labels) {
  auto type = cast<RankedTensorType>(logits.getType());
  Type element = type.getElementType();
  int64_t rank = type.getRank();
  ArrayRef<int64_t> rowShape = type.getShape().drop_back();
  int64_t rows = 1;
  for (int64_t size : rowShape)
    rows *= size;
  MLIRContext *context = b.getContext();
  AffineMap full = b.getMultiDimIdentityMap(rank);
  AffineMap row = AffineMap::getMultiDimIdentityMap(rank - 1, context);
  AffineMap rowOfFull = full.getMajorSubMap(rank - 1);
  SmallVector<utils::IteratorType> reduceLast(rank,
                                              utils::IteratorType::parallel);
  reduceLast.back() = utils::IteratorType::reduction;
  auto rowType = RankedTensorType::get(rowShape, element);

  // max_k logits
  Value maxInit = filledTensor(b, loc, rowShape, element,
                               -std::numeric_limits<double>::infinity());
  Value maximum =
      linalg::GenericOp::create(
          b, loc, TypeRange{rowType}, ValueRange{logits}, ValueRange{maxInit},
          ArrayRef<AffineMap>{full, rowOfFull}, reduceLast,
          [](OpBuilder &nb, Location l, ValueRange args) {
            linalg::YieldOp::create(
                nb, l, arith::MaximumFOp::create(nb, l, args[0], args[1])
                           .getResult());
          })
          .getResult(0);
  // sum_k exp(logits - max)
  Value sumInit = filledTensor(b, loc, rowShape, element, 0.0);
  Value sum =
      linalg::GenericOp::create(
          b, loc, TypeRange{rowType}, ValueRange{logits, maximum},
          ValueRange{sumInit}, ArrayRef<AffineMap>{full, rowOfFull, rowOfFull},
          reduceLast,
          [](OpBuilder &nb, Location l, ValueRange args) {
            Value shifted = arith::SubFOp::create(nb, l, args[0], args[1]);
            Value e = math::ExpOp::create(nb, l, shifted);
            linalg::YieldOp::create(
                nb, l, arith::AddFOp::create(nb, l, args[2], e).getResult());
          })
          .getResult(0);
  // logits[label]
  Value pickInit = filledTensor(b, loc, rowShape, element, 0.0);
  Value picked =
      linalg::GenericOp::create(
          b, loc, TypeRange{rowType}, ValueRange{labels, logits},
          ValueRange{pickInit}, ArrayRef<AffineMap>{rowOfFull, full, rowOfFull},
          reduceLast,
          [&](OpBuilder &nb, Location l, ValueRange args) {
            Value index = linalg::IndexOp::create(nb, l, rank - 1);
            Value label = arith::IndexCastOp::create(nb, l, nb.getIndexType(),
                                                     args[0]);
            Value hit = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq,
                                              index, label);
            Value zero = floatConstant(nb, l, args[1].getType(), 0.0);
            Value value = arith::SelectOp::create(nb, l, hit, args[1], zero);
            linalg::YieldOp::create(
                nb, l, arith::AddFOp::create(nb, l, args[2], value).getResult());
          })
          .getResult(0);
  // log(sum) + max - picked, averaged over the rows
  SmallVector<utils::IteratorType> allReduce(rank - 1,
                                             utils::IteratorType::reduction);
  Value lossInit = filledTensor(b, loc, {}, element, 0.0);
  AffineMap toScalar = AffineMap::get(rank - 1, 0, {}, context);
  double scale = 1.0 / static_cast<double>(rows);
  return linalg::GenericOp::create(
             b, loc, TypeRange{RankedTensorType::get({}, element)},
             ValueRange{sum, maximum, picked}, ValueRange{lossInit},
             ArrayRef<AffineMap>{row, row, row, toScalar}, allReduce,
             [&](OpBuilder &nb, Location l, ValueRange args) {
               Value log = math::LogOp::create(nb, l, args[0]);
               Value value = arith::AddFOp::create(nb, l, log, args[1]);
               value = arith::SubFOp::create(nb, l, value, args[2]);
               Value factor = floatConstant(nb, l, value.getType(), scale);
               value = arith::MulFOp::create(nb, l, value, factor);
               linalg::YieldOp::create(
                   nb, l,
                   arith::AddFOp::create(nb, l, args[3], value).getResult());
             })
      .getResult(0);
}

Value buildMeanSquaredError(OpBuilder &b, Location loc, Value output,
                            Value labels) {
  auto type = cast<RankedTensorType>(output.getType());
  Type element = type.getElementType();
  int64_t rank = type.getRank();
  AffineMap full = b.getMultiDimIdentityMap(rank);
  AffineMap toScalar = AffineMap::get(rank, 0, {}, b.getContext());
  double scale = 1.0 / static_cast<double>(type.getNumElements());
  Value init = filledTensor(b, loc, {}, element, 0.0);
  return linalg::GenericOp::create(
             b, loc, TypeRange{RankedTensorType::get({}, element)},
             ValueRange{output, labels}, ValueRange{init},
             ArrayRef<AffineMap>{full, full, toScalar},
             SmallVector<utils::IteratorType>(rank,
                                              utils::IteratorType::reduction),
             [&](OpBuilder &nb, Location l, ValueRange args) {
               Value diff = arith::SubFOp::create(nb, l, args[0], args[1]);
               Value square = arith::MulFOp::create(nb, l, diff, diff);
               Value factor = floatConstant(nb, l, diff.getType(), scale);
               Value value = arith::MulFOp::create(nb, l, square, factor);
               linalg::YieldOp::create(
                   nb, l,
                   arith::AddFOp::create(nb, l, args[2], value).getResult());
             })
      .getResult(0);
}

} // namespace soap::autodiff

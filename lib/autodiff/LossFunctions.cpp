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
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

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

namespace {

/// How to sum the elements of a tensor in two levels: the shape to view it
/// as (its last dimension split in two when that balances the levels
/// better) and how many leading dimensions the second level sums (0: one
/// level).
struct Blocking {
  SmallVector<int64_t> shape;
  unsigned outer = 0;
};

} // namespace

/// The cost of summing `shape` in two levels split after `outer` leading
/// dimensions: the longer of the two accumulations, which bounds how f32
/// rounding error grows.
static int64_t bestSplit(ArrayRef<int64_t> shape, unsigned &outer) {
  int64_t total = 1;
  for (int64_t size : shape)
    total *= size;
  int64_t best = total, leading = 1;
  outer = 0;
  for (unsigned k = 1; k < shape.size(); ++k) {
    leading *= shape[k - 1];
    int64_t cost = std::max(leading, total / leading);
    if (cost < best) {
      best = cost;
      outer = k;
    }
  }
  return best;
}

/// Rank 1 stays whole: its one dimension is the batch, which
/// --soap-set-batch and --soap-partition resize.
static Blocking chooseBlocking(ArrayRef<int64_t> shape) {
  Blocking result;
  result.shape.assign(shape.begin(), shape.end());
  int64_t cost = bestSplit(shape, result.outer);
  if (shape.size() < 2)
    return result;
  int64_t last = shape.back();
  for (int64_t d = 2; d * d <= last; ++d) {
    if (last % d != 0)
      continue;
    for (int64_t inner : {d, last / d}) {
      SmallVector<int64_t> split(shape.drop_back());
      split.push_back(last / inner);
      split.push_back(inner);
      unsigned outer;
      int64_t splitCost = bestSplit(split, outer);
      if (splitCost < cost) {
        cost = splitCost;
        result = {split, outer};
      }
    }
  }
  return result;
}

/// The sum over every element of `term(elements of inputs)`, as a rank-0
/// tensor. The inputs share one static shape. A long f32 accumulation
/// loses accuracy linearly with its length, so the sum runs in two
/// levels of about the square root of the element count each: partial
/// sums over the trailing dimensions, then their sum. Both levels are
/// linalg.generic reductions, which autodiff and the partitioner handle
/// like the model's own.
static Value blockedSum(
    OpBuilder &b, Location loc, ValueRange inputs, Type element,
    function_ref<Value(OpBuilder &, Location, ValueRange)> term) {
  auto type = cast<RankedTensorType>(inputs.front().getType());
  Blocking blocking = chooseBlocking(type.getShape());
  SmallVector<Value> viewed(inputs);
  int64_t rank = blocking.shape.size();
  if (rank != type.getRank()) {
    SmallVector<ReassociationIndices> groups;
    for (int64_t d = 0; d + 2 < rank; ++d)
      groups.push_back({d});
    groups.push_back({rank - 2, rank - 1});
    for (Value &input : viewed) {
      auto inputType = cast<RankedTensorType>(input.getType());
      input = tensor::ExpandShapeOp::create(
          b, loc, inputType.clone(blocking.shape), input, groups);
    }
  }
  MLIRContext *context = b.getContext();
  AffineMap full = b.getMultiDimIdentityMap(rank);
  unsigned outer = blocking.outer;
  SmallVector<AffineMap> maps(viewed.size(), full);
  maps.push_back(outer == 0 ? AffineMap::get(rank, 0, {}, context)
                            : full.getMajorSubMap(outer));
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::reduction);
  for (unsigned d = 0; d < outer; ++d)
    iterators[d] = utils::IteratorType::parallel;
  ArrayRef<int64_t> outerShape = ArrayRef<int64_t>(blocking.shape).take_front(outer);
  Value init = filledTensor(b, loc, outerShape, element, 0.0);
  Value partial =
      linalg::GenericOp::create(
          b, loc, TypeRange{RankedTensorType::get(outerShape, element)},
          viewed, ValueRange{init}, maps, iterators,
          [&](OpBuilder &nb, Location l, ValueRange args) {
            Value value = term(nb, l, args.drop_back());
            linalg::YieldOp::create(
                nb, l,
                arith::AddFOp::create(nb, l, args.back(), value).getResult());
          })
          .getResult(0);
  if (outer == 0)
    return partial;
  Value scalarInit = filledTensor(b, loc, {}, element, 0.0);
  return linalg::GenericOp::create(
             b, loc, TypeRange{RankedTensorType::get({}, element)},
             ValueRange{partial}, ValueRange{scalarInit},
             ArrayRef<AffineMap>{b.getMultiDimIdentityMap(outer),
                                 AffineMap::get(outer, 0, {}, context)},
             SmallVector<utils::IteratorType>(outer,
                                              utils::IteratorType::reduction),
             [](OpBuilder &nb, Location l, ValueRange args) {
               linalg::YieldOp::create(
                   nb, l,
                   arith::AddFOp::create(nb, l, args[1], args[0]).getResult());
             })
      .getResult(0);
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
  AffineMap full = b.getMultiDimIdentityMap(rank);
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
  double scale = 1.0 / static_cast<double>(rows);
  return blockedSum(b, loc, ValueRange{sum, maximum, picked}, element,
                    [&](OpBuilder &nb, Location l, ValueRange args) {
                      Value log = math::LogOp::create(nb, l, args[0]);
                      Value value = arith::AddFOp::create(nb, l, log, args[1]);
                      value = arith::SubFOp::create(nb, l, value, args[2]);
                      Value factor =
                          floatConstant(nb, l, value.getType(), scale);
                      return arith::MulFOp::create(nb, l, value, factor)
                          .getResult();
                    });
}

Value buildMeanSquaredError(OpBuilder &b, Location loc, Value output,
                            Value labels) {
  auto type = cast<RankedTensorType>(output.getType());
  double scale = 1.0 / static_cast<double>(type.getNumElements());
  return blockedSum(b, loc, ValueRange{output, labels}, type.getElementType(),
                    [&](OpBuilder &nb, Location l, ValueRange args) {
                      Value diff =
                          arith::SubFOp::create(nb, l, args[0], args[1]);
                      Value square = arith::MulFOp::create(nb, l, diff, diff);
                      Value factor =
                          floatConstant(nb, l, diff.getType(), scale);
                      return arith::MulFOp::create(nb, l, square, factor)
                          .getResult();
                    });
}

Value addScalars(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  auto type = cast<RankedTensorType>(lhs.getType());
  Value init = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{},
                                       type.getElementType());
  AffineMap scalar = AffineMap::get(0, 0, {}, b.getContext());
  return linalg::GenericOp::create(
             b, loc, TypeRange{type}, ValueRange{lhs, rhs}, ValueRange{init},
             ArrayRef<AffineMap>{scalar, scalar, scalar},
             ArrayRef<utils::IteratorType>{},
             [](OpBuilder &nb, Location l, ValueRange args) {
               linalg::YieldOp::create(
                   nb, l,
                   arith::AddFOp::create(nb, l, args[0], args[1]).getResult());
             })
      .getResult(0);
}

LogicalResult pointCallersAtOutputCopy(func::FuncOp function) {
  auto module = function->getParentOfType<ModuleOp>();
  std::optional<SymbolTable::UseRange> uses =
      module ? SymbolTable::getSymbolUses(function, module) : std::nullopt;
  if (!uses || uses->empty())
    return success();
  std::string outputName = (function.getSymName() + ".output").str();
  if (module.lookupSymbol(outputName))
    return function.emitError()
           << "soap-append-loss: @" << function.getSymName()
           << " has callers, and the name for the copy they would call, @"
           << outputName << ", is taken";
  OpBuilder builder(function);
  auto output = cast<func::FuncOp>(builder.clone(*function));
  output.setSymName(outputName);
  output.setPrivate();
  auto soapNames = [](DictionaryAttr attrs) {
    SmallVector<StringAttr> names;
    if (attrs)
      for (NamedAttribute attr : attrs)
        if (attr.getName().strref().starts_with("soap."))
          names.push_back(attr.getName());
    return names;
  };
  for (StringAttr name : soapNames(output->getDiscardableAttrDictionary()))
    output->removeDiscardableAttr(name);
  for (unsigned i = 0; i < output.getNumArguments(); ++i)
    for (StringAttr name : soapNames(output.getArgAttrDict(i)))
      output.removeArgAttr(i, name);
  for (unsigned i = 0; i < output.getNumResults(); ++i)
    for (StringAttr name : soapNames(output.getResultAttrDict(i)))
      output.removeResultAttr(i, name);
  if (failed(SymbolTable::replaceAllSymbolUses(
          function, output.getSymNameAttr(), module)))
    return function.emitError()
           << "soap-append-loss: cannot point the callers of @"
           << function.getSymName() << " at @" << outputName;
  return success();
}

} // namespace soap::autodiff

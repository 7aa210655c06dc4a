//===- ModelBuilder.cpp - the function, loop nests, shapes ----------------===//

#include "ModelBuilder.h"

#include "soap/Dialect/SoapDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>

using namespace mlir;
using namespace soap::zoo;

Value soap::zoo::f32Constant(OpBuilder &b, Location loc, double value) {
  return arith::ConstantOp::create(
      b, loc, b.getF32FloatAttr(static_cast<float>(value)));
}

ModelBuilder::ModelBuilder(ModuleOp module, StringRef functionName)
    : builder(module.getContext()) {
  MLIRContext *context = module.getContext();
  // Ops outside any layer (activations between layers, reshapes) keep an
  // unknown location, so the printer numbers their values.
  locations.push_back(UnknownLoc::get(context));
  builder.setInsertionPointToEnd(module.getBody());
  function = func::FuncOp::create(builder, loc(), functionName,
                                  FunctionType::get(context, {}, {}));
  entry = function.addEntryBlock();
  builder.setInsertionPointToStart(entry);
}

//===----------------------------------------------------------------------===//
// The function
//===----------------------------------------------------------------------===//

Value ModelBuilder::param(StringRef name, ArrayRef<int64_t> shape,
                          StringRef init) {
  auto type = RankedTensorType::get(shape, f32());
  Location argLoc = NameLoc::get(builder.getStringAttr(qualify(name)));
  paramInits.push_back(init.empty() ? "fan-in" : init.str());
  return entry->insertArgument(numParams++, type, argLoc);
}

Value ModelBuilder::input(StringRef name, ArrayRef<int64_t> shape,
                          Type elementType, int64_t range) {
  auto type = RankedTensorType::get(shape, elementType);
  inputRanges.push_back(range);
  return entry->addArgument(type, NameLoc::get(builder.getStringAttr(name)));
}

LogicalResult ModelBuilder::finish(Value loss, std::string &error) {
  func::ReturnOp::create(builder, loc(), loss);
  function.setType(FunctionType::get(getContext(), entry->getArgumentTypes(),
                                     {loss.getType()}));
  // Every argument carries its name; parameters say how to initialise
  // them and integer inputs their value range (docs/train-step.md). Built
  // and set at once: setArgAttr rebuilds the array of every argument's
  // attributes, the square of the argument count in uniqued attributes.
  SmallVector<DictionaryAttr> argAttrs;
  for (unsigned i = 0, e = entry->getNumArguments(); i < e; ++i) {
    NamedAttrList attrs;
    if (auto name = dyn_cast<NameLoc>(entry->getArgument(i).getLoc()))
      attrs.set(SoapDialect::getNameAttrName(), name.getName());
    if (i < numParams) {
      attrs.set(SoapDialect::getParamAttrName(), builder.getUnitAttr());
      attrs.set(SoapDialect::getInitAttrName(),
                builder.getStringAttr(paramInits[i]));
    } else if (int64_t range = inputRanges[i - numParams]) {
      attrs.set(SoapDialect::getRangeAttrName(),
                builder.getI64IntegerAttr(range));
    }
    argAttrs.push_back(attrs.getDictionary(getContext()));
  }
  function.setAllArgAttrs(argAttrs);
  if (hasFailed()) {
    error = failure;
    return llvm::failure();
  }
  return success();
}

void ModelBuilder::fail(const Twine &message) {
  if (failure.empty())
    failure = message.str();
}

ModelBuilder::Scope::Scope(ModelBuilder &builder, const Twine &name)
    : builder(builder) {
  std::string qualified = builder.qualify(name.str());
  builder.locations.push_back(
      NameLoc::get(builder.builder.getStringAttr(qualified)));
  builder.scopes.push_back(std::move(qualified));
}

ModelBuilder::Scope::~Scope() {
  builder.scopes.pop_back();
  builder.locations.pop_back();
}

std::string ModelBuilder::qualify(StringRef name) const {
  if (scopes.empty())
    return name.str();
  return scopes.back() + "." + name.str();
}

ArrayRef<int64_t> ModelBuilder::shapeOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getShape();
}

//===----------------------------------------------------------------------===//
// Tensors and generic loop nests
//===----------------------------------------------------------------------===//

Value ModelBuilder::empty(ArrayRef<int64_t> shape, Type elementType) {
  return tensor::EmptyOp::create(builder, loc(), shape,
                                 elementType ? elementType : f32());
}

Value ModelBuilder::filled(ArrayRef<int64_t> shape, double value) {
  Value scalar = f32Constant(builder, loc(), value);
  Value init = empty(shape);
  return linalg::FillOp::create(builder, loc(), TypeRange{init.getType()},
                                ValueRange{scalar}, ValueRange{init})
      .getResult(0);
}

AffineMap ModelBuilder::dims(unsigned numDims, ArrayRef<unsigned> loops) {
  SmallVector<AffineExpr> exprs;
  for (unsigned loop : loops)
    exprs.push_back(builder.getAffineDimExpr(loop));
  return AffineMap::get(numDims, 0, exprs, getContext());
}

AffineMap ModelBuilder::identity(unsigned rank) {
  return builder.getMultiDimIdentityMap(rank);
}

/// Region arguments (a generic's scalars, a pad's indices) get no name
/// location, so that the printer names them %in, %out rather than after the
/// layer.
static void unnameRegionArguments(Operation *op) {
  Location unknown = UnknownLoc::get(op->getContext());
  for (Region &region : op->getRegions())
    for (Block &block : region)
      for (BlockArgument arg : block.getArguments())
        arg.setLoc(unknown);
}

/// A linalg.generic whose body yields what `body` computes.
static Value buildGeneric(OpBuilder &builder, Location loc, ValueRange inputs,
                          Value init, ArrayRef<AffineMap> maps,
                          ArrayRef<utils::IteratorType> iterators,
                          BodyFn body) {
  auto generic = linalg::GenericOp::create(
      builder, loc, TypeRange{init.getType()}, inputs, ValueRange{init}, maps,
      iterators, [&](OpBuilder &b, Location bodyLoc, ValueRange args) {
        linalg::YieldOp::create(b, bodyLoc, body(b, bodyLoc, args));
      });
  unnameRegionArguments(generic);
  return generic.getResult(0);
}

Value ModelBuilder::parallel(ValueRange inputs, ArrayRef<AffineMap> maps,
                             ArrayRef<int64_t> shape, BodyFn body,
                             Type elementType) {
  Value init = empty(shape, elementType);
  SmallVector<AffineMap> allMaps(maps);
  allMaps.push_back(identity(shape.size()));
  SmallVector<utils::IteratorType> iterators(shape.size(),
                                             utils::IteratorType::parallel);
  return buildGeneric(builder, loc(), inputs, init, allMaps, iterators, body);
}

Value ModelBuilder::reduction(ValueRange inputs, ArrayRef<AffineMap> maps,
                              ArrayRef<int64_t> shape, ArrayRef<unsigned> kept,
                              double initValue, BodyFn body) {
  SmallVector<int64_t> outShape;
  for (unsigned loop : kept)
    outShape.push_back(shape[loop]);
  Value init = filled(outShape, initValue);
  SmallVector<AffineMap> allMaps(maps);
  allMaps.push_back(dims(shape.size(), kept));
  SmallVector<utils::IteratorType> iterators(shape.size(),
                                             utils::IteratorType::reduction);
  for (unsigned loop : kept)
    iterators[loop] = utils::IteratorType::parallel;
  return buildGeneric(builder, loc(), inputs, init, allMaps, iterators, body);
}

Value ModelBuilder::unary(
    Value x, function_ref<Value(OpBuilder &, Location, Value)> fn) {
  unsigned rank = shapeOf(x).size();
  return parallel({x}, {identity(rank)}, shapeOf(x),
                  [&](OpBuilder &b, Location l, ValueRange args) {
                    return fn(b, l, args[0]);
                  });
}

Value ModelBuilder::binary(
    Value a, Value b,
    function_ref<Value(OpBuilder &, Location, Value, Value)> fn) {
  unsigned rank = shapeOf(a).size();
  return parallel({a, b}, {identity(rank), identity(rank)}, shapeOf(a),
                  [&](OpBuilder &builder, Location l, ValueRange args) {
                    return fn(builder, l, args[0], args[1]);
                  });
}

Value ModelBuilder::add(Value a, Value b) {
  return binary(a, b, [](OpBuilder &builder, Location l, Value x, Value y) {
    return arith::AddFOp::create(builder, l, x, y);
  });
}

Value ModelBuilder::mul(Value a, Value b) {
  return binary(a, b, [](OpBuilder &builder, Location l, Value x, Value y) {
    return arith::MulFOp::create(builder, l, x, y);
  });
}

Value ModelBuilder::relu(Value x) {
  return unary(x, [](OpBuilder &b, Location l, Value v) {
    return arith::MaximumFOp::create(b, l, v, f32Constant(b, l, 0.0));
  });
}

Value ModelBuilder::tanh(Value x) {
  return unary(x, [](OpBuilder &b, Location l, Value v) {
    return math::TanhOp::create(b, l, v);
  });
}

Value soap::zoo::sigmoidOf(OpBuilder &b, Location l, Value v) {
  Value e = math::ExpOp::create(b, l, arith::NegFOp::create(b, l, v));
  Value one = f32Constant(b, l, 1.0);
  return arith::DivFOp::create(b, l, one, arith::AddFOp::create(b, l, one, e));
}

Value ModelBuilder::sigmoid(Value x) { return unary(x, sigmoidOf); }

Value ModelBuilder::gelu(Value x) {
  return unary(x, [](OpBuilder &b, Location l, Value v) {
    Value cube =
        arith::MulFOp::create(b, l, arith::MulFOp::create(b, l, v, v), v);
    Value inner = arith::AddFOp::create(
        b, l, v,
        arith::MulFOp::create(b, l, f32Constant(b, l, 0.044715), cube));
    Value scaled = arith::MulFOp::create(
        b, l, f32Constant(b, l, std::sqrt(2.0 / M_PI)), inner);
    Value onePlus = arith::AddFOp::create(b, l, f32Constant(b, l, 1.0),
                                          math::TanhOp::create(b, l, scaled));
    Value half = arith::MulFOp::create(b, l, f32Constant(b, l, 0.5), v);
    return arith::MulFOp::create(b, l, half, onePlus);
  });
}

Value ModelBuilder::scale(Value x, double factor) {
  return unary(x, [factor](OpBuilder &b, Location l, Value v) {
    return arith::MulFOp::create(b, l, v, f32Constant(b, l, factor));
  });
}

Value ModelBuilder::addBias(Value x, Value bias, unsigned dim) {
  unsigned rank = shapeOf(x).size();
  return parallel({x, bias}, {identity(rank), dims(rank, {dim})}, shapeOf(x),
                  [](OpBuilder &b, Location l, ValueRange args) {
                    return arith::AddFOp::create(b, l, args[0], args[1]);
                  });
}

//===----------------------------------------------------------------------===//
// Shapes
//===----------------------------------------------------------------------===//

Value ModelBuilder::collapse(Value x, ArrayRef<ReassociationIndices> groups) {
  return tensor::CollapseShapeOp::create(builder, loc(), x, groups);
}

Value ModelBuilder::expand(Value x, ArrayRef<int64_t> shape,
                           ArrayRef<ReassociationIndices> groups) {
  auto type = RankedTensorType::get(
      shape, cast<RankedTensorType>(x.getType()).getElementType());
  return tensor::ExpandShapeOp::create(builder, loc(), type, x, groups);
}

Value ModelBuilder::transpose(Value x, ArrayRef<int64_t> perm) {
  ArrayRef<int64_t> shape = shapeOf(x);
  SmallVector<int64_t> resultShape;
  for (int64_t dim : perm)
    resultShape.push_back(shape[dim]);
  Value init = empty(resultShape);
  return linalg::TransposeOp::create(builder, loc(), x, init, perm)
      ->getResult(0);
}

Value ModelBuilder::slice(Value x, ArrayRef<int64_t> offsets,
                          ArrayRef<int64_t> sizes, ArrayRef<unsigned> dropped) {
  SmallVector<OpFoldResult> offsetFolds, sizeFolds, strideFolds;
  SmallVector<int64_t> resultShape;
  for (auto [dim, offset, size] : llvm::enumerate(offsets, sizes)) {
    offsetFolds.push_back(builder.getIndexAttr(offset));
    sizeFolds.push_back(builder.getIndexAttr(size));
    strideFolds.push_back(builder.getIndexAttr(1));
    if (!llvm::is_contained(dropped, dim))
      resultShape.push_back(size);
  }
  auto type = RankedTensorType::get(
      resultShape, cast<RankedTensorType>(x.getType()).getElementType());
  return tensor::ExtractSliceOp::create(builder, loc(), type, x, offsetFolds,
                                        sizeFolds, strideFolds);
}

Value ModelBuilder::concat(ValueRange values, int64_t dim) {
  // After a failure, shapes may disagree; the model is thrown away.
  if (values.size() == 1 || hasFailed())
    return values.front();
  return tensor::ConcatOp::create(builder, loc(), dim, values);
}

Value ModelBuilder::pad(Value x, ArrayRef<int64_t> low, ArrayRef<int64_t> high,
                        double value) {
  SmallVector<int64_t> shape(shapeOf(x));
  SmallVector<OpFoldResult> lowFolds, highFolds;
  for (auto [dim, lo, hi] : llvm::enumerate(low, high)) {
    shape[dim] += lo + hi;
    lowFolds.push_back(builder.getIndexAttr(lo));
    highFolds.push_back(builder.getIndexAttr(hi));
  }
  Value padValue = f32Constant(builder, loc(), value);
  auto padOp =
      tensor::PadOp::create(builder, loc(), RankedTensorType::get(shape, f32()),
                            x, lowFolds, highFolds, padValue);
  unnameRegionArguments(padOp);
  return padOp;
}

Value ModelBuilder::flatten(Value x) { return collapse(x, {{0}, {1, 2, 3}}); }

//===----------------------------------------------------------------------===//
// Contractions, embeddings and the loss
//===----------------------------------------------------------------------===//

Value ModelBuilder::matmul(Value a, Value b) {
  Value init = zeros({dimOf(a, 0), dimOf(b, 1)});
  return linalg::MatmulOp::create(builder, loc(), TypeRange{init.getType()},
                                  ValueRange{a, b}, ValueRange{init})
      .getResult(0);
}

Value ModelBuilder::batchMatmul(Value a, Value b) {
  Value init = zeros({dimOf(a, 0), dimOf(a, 1), dimOf(b, 2)});
  return linalg::BatchMatmulOp::create(builder, loc(),
                                       TypeRange{init.getType()},
                                       ValueRange{a, b}, ValueRange{init})
      .getResult(0);
}

Value ModelBuilder::linear(Value x, int64_t out, StringRef name, bool bias) {
  Scope scope(*this, name);
  Value weight = param("weight", {dimOf(x, 1), out},
                       "fan-in:" + std::to_string(dimOf(x, 1)));
  Value y = matmul(x, weight);
  if (bias)
    y = addBias(y, param("bias", {out}, "zeros"), 1);
  return y;
}

Value ModelBuilder::lookup(Value ids, Value table) {
  // The form torch-mlir and IREE emit: a generic over [N, D] whose body
  // reads row ids[n] of the table (captured from above) with tensor.extract.
  return parallel(
      {ids}, {dims(2, {0})}, {dimOf(ids, 0), dimOf(table, 1)},
      [table](OpBuilder &b, Location l, ValueRange args) {
        Value row = arith::IndexCastOp::create(b, l, b.getIndexType(), args[0]);
        Value column = linalg::IndexOp::create(b, l, 1);
        return tensor::ExtractOp::create(b, l, table, ValueRange{row, column});
      });
}

Value ModelBuilder::embedding(Value ids, int64_t vocab, int64_t dim,
                              StringRef name) {
  Scope scope(*this, name);
  return lookup(ids, param("weight", {vocab, dim}));
}

Value ModelBuilder::softmax(Value x) {
  ArrayRef<int64_t> shape = shapeOf(x);
  unsigned rank = shape.size();
  SmallVector<unsigned> kept;
  for (unsigned dim = 0; dim + 1 < rank; ++dim)
    kept.push_back(dim);
  AffineMap all = identity(rank), outer = dims(rank, kept);
  Value max =
      reduction({x}, {all}, shape, kept, -INFINITY,
                [](OpBuilder &b, Location l, ValueRange args) {
                  return arith::MaximumFOp::create(b, l, args[0], args[1]);
                });
  Value exps =
      parallel({x, max}, {all, outer}, shape,
               [](OpBuilder &b, Location l, ValueRange args) {
                 return math::ExpOp::create(
                     b, l, arith::SubFOp::create(b, l, args[0], args[1]));
               });
  Value sum = reduction({exps}, {all}, shape, kept, 0.0,
                        [](OpBuilder &b, Location l, ValueRange args) {
                          return arith::AddFOp::create(b, l, args[0], args[1]);
                        });
  return parallel({exps, sum}, {all, outer}, shape,
                  [](OpBuilder &b, Location l, ValueRange args) {
                    return arith::DivFOp::create(b, l, args[0], args[1]);
                  });
}

Value ModelBuilder::softmaxCrossEntropy(Value logits, Value labels) {
  Scope scope(*this, "loss");
  int64_t rows = dimOf(logits, 0), classes = dimOf(logits, 1);
  SmallVector<int64_t> shape = {rows, classes};
  AffineMap all = identity(2), row = dims(2, {0});
  // loss[n] = log(sum_c exp(l[n, c] - max[n])) + max[n] - l[n, label[n]]
  Value max =
      reduction({logits}, {all}, shape, {0}, -INFINITY,
                [](OpBuilder &b, Location l, ValueRange args) {
                  return arith::MaximumFOp::create(b, l, args[0], args[1]);
                });
  Value sumExp =
      reduction({logits, max}, {all, row}, shape, {0}, 0.0,
                [](OpBuilder &b, Location l, ValueRange args) {
                  Value e = math::ExpOp::create(
                      b, l, arith::SubFOp::create(b, l, args[0], args[1]));
                  return arith::AddFOp::create(b, l, args[2], e);
                });
  // The label's logit: a one-hot dot product, with the one-hot row made in
  // the body from the class index.
  Value picked = reduction(
      {labels, logits}, {row, all}, shape, {0}, 0.0,
      [](OpBuilder &b, Location l, ValueRange args) {
        Value column = linalg::IndexOp::create(b, l, 1);
        Value label =
            arith::IndexCastOp::create(b, l, b.getIndexType(), args[0]);
        Value hit = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                          column, label);
        Value term =
            arith::SelectOp::create(b, l, hit, args[1], f32Constant(b, l, 0.0));
        return arith::AddFOp::create(b, l, args[2], term);
      });
  AffineMap vec = identity(1);
  Value perRow =
      parallel({sumExp, max, picked}, {vec, vec, vec}, {rows},
               [](OpBuilder &b, Location l, ValueRange args) {
                 Value lse = arith::AddFOp::create(
                     b, l, math::LogOp::create(b, l, args[0]), args[1]);
                 return arith::SubFOp::create(b, l, lse, args[2]);
               });
  double inverse = 1.0 / static_cast<double>(rows);
  return reduction({perRow}, {vec}, {rows}, {}, 0.0,
                   [inverse](OpBuilder &b, Location l, ValueRange args) {
                     Value scaled = arith::MulFOp::create(
                         b, l, args[0], f32Constant(b, l, inverse));
                     return arith::AddFOp::create(b, l, args[1], scaled);
                   });
}

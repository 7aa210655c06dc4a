//===- LinalgGradients.cpp - gradients of linalg named ops ----------------===//
//
// Matmuls and convolutions keep named ops in their gradients (so that the
// CPU and GPU lowerings reach BLAS/im2col kernels): dA = dC B^T and
// dB = A^T dC; a convolution's input gradient is a convolution of the
// stride-dilated, padded output adjoint with the flipped, transposed
// filter, and its filter gradient a convolution of the transposed input
// with the transposed output adjoint (dilation and stride swapped). Sum
// pooling reuses the input gradient of a convolution with a filter of
// ones. Other structured ops (max pooling, convolutions in other layouts)
// are generalized and take the generic rule (GenericGradient.cpp,
// WindowGradient.cpp).
//
//===----------------------------------------------------------------------===//

#include "GradientBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace soap::autodiff {

static RankedTensorType tensorType(Value value) {
  return dyn_cast<RankedTensorType>(value.getType());
}

static bool hasStaticTensors(Operation *op) {
  for (Type type : llvm::concat<Type>(
           llvm::to_vector(op->getOperandTypes()),
           llvm::to_vector(op->getResultTypes()))) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (tensor && !tensor.hasStaticShape())
      return false;
  }
  return true;
}

/// `lhs * rhs` as the named op `OpTy` (matmul or batch_matmul), whose
/// loop l is the forward contraction's loop `forwardLoops[l]`.
template <typename OpTy>
static Value contract(GradientBuilder &g, Location loc, Value lhs, Value rhs,
                      ArrayRef<unsigned> forwardLoops) {
  auto lhsType = cast<RankedTensorType>(lhs.getType());
  auto rhsType = cast<RankedTensorType>(rhs.getType());
  SmallVector<int64_t> shape(lhsType.getShape());
  shape.back() = rhsType.getShape().back();
  auto type = RankedTensorType::get(shape, lhsType.getElementType());
  Value init = g.zeros(loc, type);
  auto product = OpTy::create(g.b, loc, TypeRange{type}, ValueRange{lhs, rhs},
                              ValueRange{init});
  if (ConfigAttr config = reorderedConfig(g.forwardConfig, forwardLoops))
    product->setAttr(SoapDialect::getConfigAttrName(), config);
  return product.getResult(0);
}

/// matmul (C[m,n] += A[m,k] B[k,n]) and batch_matmul (the same per batch).
template <typename OpTy>
static LogicalResult differentiateContraction(GradientBuilder &g, OpTy op) {
  Location loc = op.getLoc();
  Value lhs = op.getDpsInputs()[0], rhs = op.getDpsInputs()[1];
  Value init = op.getDpsInits()[0];
  Value adjoint = g.adjoint(op->getResult(0));
  int64_t rank = tensorType(adjoint).getRank();
  SmallVector<int64_t> perm;
  for (int64_t i = 0; i < rank - 2; ++i)
    perm.push_back(i);
  perm.push_back(rank - 1);
  perm.push_back(rank - 2);
  // The forward loops are (batch,) m, n, k; dA = dC Bᵀ runs over
  // (batch,) m, k, n and dB = Aᵀ dC over (batch,) k, n, m.
  auto batchThen = [&](std::initializer_list<unsigned> last) {
    auto batch = static_cast<unsigned>(rank - 2);
    SmallVector<unsigned> loops;
    for (unsigned i = 0; i < batch; ++i)
      loops.push_back(i);
    for (unsigned l : last)
      loops.push_back(batch + l);
    return loops;
  };
  if (g.isActive(lhs))
    g.accumulate(loc, lhs,
                 contract<OpTy>(g, loc, adjoint, g.transpose(loc, rhs, perm),
                                batchThen({0, 2, 1})));
  if (g.isActive(rhs))
    g.accumulate(loc, rhs,
                 contract<OpTy>(g, loc, g.transpose(loc, lhs, perm), adjoint,
                                batchThen({2, 1, 0})));
  g.accumulate(loc, init, adjoint);
  return success();
}

static SmallVector<int64_t> attrValues(DenseIntElementsAttr attr) {
  return llvm::to_vector(llvm::map_range(
      attr.getValues<APInt>(), [](APInt v) { return v.getSExtValue(); }));
}

/// The window of a 2-D convolution or pooling over NCHW tensors.
struct Window {
  int64_t strideH, strideW, dilationH, dilationW;
  int64_t kernelH, kernelW;
};

/// A tensor of `type` whose element at each index is `source` read through
/// `read` (a map from the result's indices): a relayout or broadcast copy.
static Value copyThrough(OpBuilder &b, Location loc, Value source,
                         RankedTensorType type, AffineMap read) {
  unsigned rank = type.getRank();
  Value empty =
      tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  return linalg::GenericOp::create(
             b, loc, TypeRange{type}, ValueRange{source}, ValueRange{empty},
             ArrayRef<AffineMap>{read, b.getMultiDimIdentityMap(rank)},
             SmallVector<utils::IteratorType>(rank,
                                              utils::IteratorType::parallel),
             [](OpBuilder &nb, Location l, ValueRange args) {
               linalg::YieldOp::create(nb, l, args[0]);
             })
      .getResult(0);
}

/// The gradient of `out[n,f,oh,ow] = sum_{c,kh,kw} x[n,c,s*oh+d*kh,...]
/// w[f,c,kh,kw]` with respect to x, given the filter already flipped and
/// transposed (`flipped[c,f,kh,kw] = w[f,c,KH-1-kh,KW-1-kw]`), for an input
/// of `inputType`.
static Value convInputGradient(GradientBuilder &g, Location loc, Value adjoint,
                               Value flipped, const Window &w,
                               RankedTensorType inputType,
                               ConfigAttr config = nullptr,
                               ConfigAttr transposedConfig = nullptr) {
  auto adjointType = cast<RankedTensorType>(adjoint.getType());
  ArrayRef<int64_t> dy = adjointType.getShape();
  int64_t padH = w.dilationH * (w.kernelH - 1);
  int64_t padW = w.dilationW * (w.kernelW - 1);
  // Zeros between the adjoint's elements (the stride) and around them (the
  // window), in one strided insert.
  auto spreadType = RankedTensorType::get(
      {dy[0], dy[1], w.strideH * (dy[2] - 1) + 1 + 2 * padH,
       w.strideW * (dy[3] - 1) + 1 + 2 * padW},
      adjointType.getElementType());
  Value spread = g.insertIntoZeros(loc, adjoint, spreadType, {0, 0, padH, padW},
                                   {1, 1, w.strideH, w.strideW});
  int64_t usedH = w.strideH * (dy[2] - 1) + padH + 1;
  int64_t usedW = w.strideW * (dy[3] - 1) + padW + 1;
  auto usedType = RankedTensorType::get(
      {inputType.getDimSize(0), inputType.getDimSize(1), usedH, usedW},
      inputType.getElementType());
  OpBuilder &b = g.b;
  auto conv = linalg::Conv2DNchwFchwOp::create(
      b, loc, TypeRange{usedType}, ValueRange{spread, flipped},
      ValueRange{g.zeros(loc, usedType)}, b.getI64TensorAttr({1, 1}),
      b.getI64TensorAttr({w.dilationH, w.dilationW}));
  if (config)
    conv->setAttr(SoapDialect::getConfigAttrName(), config);
  if (transposedConfig)
    conv->setAttr(SoapDialect::getTransposedConfigAttrName(), transposedConfig);
  Value result = conv.getResult(0);
  if (usedH != inputType.getDimSize(2) || usedW != inputType.getDimSize(3))
    result = g.insertIntoZeros(loc, result, inputType, {0, 0, 0, 0},
                               {1, 1, 1, 1});
  return result;
}

/// Whether `config` is a conv_2d_nchw_fchw's (7 loops) and splits none of
/// `loops`.
static bool unsplitConvLoops(ConfigAttr config, ArrayRef<unsigned> loops) {
  return config && config.getDegrees().size() == 7 &&
         llvm::all_of(loops, [&](unsigned loop) {
           return config.getDegrees()[loop] == 1;
         });
}

/// The forward config of a conv_2d_nchw_fchw (loops n, f, oh, ow, c, kh, kw)
/// over a gradient convolution's loops, gradient loop l being the forward
/// loop `forwardLoops[l]`, as the simulator prices the op's backward task:
/// each device computes the input-gradient blocks and the partial filter
/// gradient of its forward task. The filter gradient's loops are the
/// forward's renamed (`sameGeometry`): each task reads the input and the
/// adjoint boxes its forward task read and wrote, whatever the split. The
/// input gradient's rows and columns are other loops than the forward's
/// (its tasks would read the adjoint with halos), so a forward that splits
/// a spatial or window loop gives it none, and neither does a forward
/// without a config; the partitioner then places it by its operands.
static ConfigAttr convGradientConfig(GradientBuilder &g,
                                     ArrayRef<unsigned> forwardLoops,
                                     bool sameGeometry) {
  ConfigAttr config = g.forwardConfig;
  if (!unsplitConvLoops(config, sameGeometry ? ArrayRef<unsigned>{}
                                             : ArrayRef<unsigned>{2, 3, 5, 6}))
    return nullptr;
  return reorderedConfig(config, forwardLoops);
}

static LogicalResult differentiateConv(GradientBuilder &g,
                                       linalg::Conv2DNchwFchwOp op) {
  Location loc = op.getLoc();
  OpBuilder &b = g.b;
  Value input = op.getDpsInputs()[0], filter = op.getDpsInputs()[1];
  Value adjoint = g.adjoint(op->getResult(0));
  RankedTensorType inputType = tensorType(input);
  RankedTensorType filterType = tensorType(filter);
  SmallVector<int64_t> strides = attrValues(op.getStrides());
  SmallVector<int64_t> dilations = attrValues(op.getDilations());
  Window w{strides[0], strides[1], dilations[0], dilations[1],
           filterType.getDimSize(2), filterType.getDimSize(3)};
  ArrayRef<int64_t> dy = tensorType(adjoint).getShape();

  if (g.isActive(input)) {
    // flipped[c,f,kh,kw] = w[f,c,KH-1-kh,KW-1-kw]
    auto flippedType = RankedTensorType::get(
        {filterType.getDimSize(1), filterType.getDimSize(0), w.kernelH,
         w.kernelW},
        filterType.getElementType());
    MLIRContext *context = b.getContext();
    AffineExpr c = getAffineDimExpr(0, context), f = getAffineDimExpr(1, context),
               kh = getAffineDimExpr(2, context),
               kw = getAffineDimExpr(3, context);
    AffineMap read =
        AffineMap::get(4, 0, {f, c, w.kernelH - 1 - kh, w.kernelW - 1 - kw},
                       context);
    Value flipped = copyThrough(b, loc, filter, flippedType, read);
    // Its loops n, c, h, w, f, kh, kw. A forward that splits rows,
    // columns or windows gives its config as soap.transposed_config: the
    // partitioner runs each forward task's part of the gradient.
    ConfigAttr config =
        convGradientConfig(g, {0, 4, 2, 3, 1, 5, 6}, /*sameGeometry=*/false);
    ConfigAttr transposed;
    if (!config && unsplitConvLoops(g.forwardConfig, {}))
      transposed = g.forwardConfig;
    Value gradient = convInputGradient(g, loc, adjoint, flipped, w, inputType,
                                       config, transposed);
    g.accumulate(loc, input, gradient);
  }

  if (g.isActive(filter)) {
    // dW[f,c,kh,kw] = sum_{n,oh,ow} dY[n,f,oh,ow] x[n,c,s*oh+d*kh,...]: a
    // convolution of x^T [C,N,H,W] with dY^T [F,N,OH,OW] as the filter,
    // stride d and dilation s, on the rows the forward read.
    int64_t usedH = w.strideH * (dy[2] - 1) + w.dilationH * (w.kernelH - 1) + 1;
    int64_t usedW = w.strideW * (dy[3] - 1) + w.dilationW * (w.kernelW - 1) + 1;
    Value used = input;
    if (usedH != inputType.getDimSize(2) || usedW != inputType.getDimSize(3))
      used = g.slice(loc, input, {0, 0, 0, 0},
                     {inputType.getDimSize(0), inputType.getDimSize(1), usedH,
                      usedW},
                     {1, 1, 1, 1});
    Value inputT = g.transpose(loc, used, {1, 0, 2, 3});
    Value adjointT = g.transpose(loc, adjoint, {1, 0, 2, 3});
    auto resultType = RankedTensorType::get(
        {filterType.getDimSize(1), filterType.getDimSize(0), w.kernelH,
         w.kernelW},
        filterType.getElementType());
    auto conv = linalg::Conv2DNchwFchwOp::create(
        b, loc, TypeRange{resultType}, ValueRange{inputT, adjointT},
        ValueRange{g.zeros(loc, resultType)},
        b.getI64TensorAttr({w.dilationH, w.dilationW}),
        b.getI64TensorAttr({w.strideH, w.strideW}));
    // Its loops c, f, kh, kw, n, oh, ow: the forward batch is reduced.
    if (ConfigAttr config = convGradientConfig(g, {4, 1, 5, 6, 0, 2, 3},
                                               /*sameGeometry=*/true))
      conv->setAttr(SoapDialect::getConfigAttrName(), config);
    g.accumulate(loc, filter, g.transpose(loc, conv.getResult(0), {1, 0, 2, 3}));
  }
  g.accumulate(loc, op.getDpsInits()[0], adjoint);
  return success();
}

template <typename PoolTy>
static Window poolingWindow(PoolTy op) {
  SmallVector<int64_t> strides = attrValues(op.getStrides());
  SmallVector<int64_t> dilations = attrValues(op.getDilations());
  RankedTensorType window = tensorType(op.getDpsInputs()[1]);
  return Window{strides[0],           strides[1],
                dilations[0],         dilations[1],
                window.getDimSize(0), window.getDimSize(1)};
}

static LogicalResult differentiateSumPool(GradientBuilder &g,
                                          linalg::PoolingNchwSumOp op) {
  Location loc = op.getLoc();
  Value input = op.getDpsInputs()[0];
  Value adjoint = g.adjoint(op->getResult(0));
  g.accumulate(loc, op.getDpsInits()[0], adjoint);
  if (!g.isActive(input))
    return success();
  // Each (n, c) plane is a one-channel convolution with a filter of ones.
  Window w = poolingWindow(op);
  RankedTensorType inputType = tensorType(input);
  RankedTensorType adjointType = tensorType(adjoint);
  ArrayRef<int64_t> x = inputType.getShape(), dy = adjointType.getShape();
  Type element = inputType.getElementType();
  OpBuilder &b = g.b;
  // One window along a dimension (the output's size 1) tiles it whatever
  // the stride.
  bool tilesH = w.strideH == w.kernelH || dy[2] == 1;
  bool tilesW = w.strideW == w.kernelW || dy[3] == 1;
  if (w.dilationH == 1 && w.dilationW == 1 && tilesH && tilesW) {
    // Windows that tile the input without overlapping (a global pooling,
    // whose one window is the whole input, is one): each input point is in
    // at most one window, and its gradient is that window's adjoint. As a
    // broadcast into [N, C, OH, KH, OW, KW], merged to the input's rows
    // and columns; the spread convolution below would spend KH * KW
    // multiply-adds on each point (3136 for a global pooling over 56 x 56,
    // as MobileNetV3's squeeze-excitation blocks have).
    auto tiledType = RankedTensorType::get(
        {dy[0], dy[1], dy[2], w.kernelH, dy[3], w.kernelW}, element);
    MLIRContext *context = b.getContext();
    AffineMap read = AffineMap::get(
        6, 0,
        {getAffineDimExpr(0, context), getAffineDimExpr(1, context),
         getAffineDimExpr(2, context), getAffineDimExpr(4, context)},
        context);
    Value tiled = copyThrough(b, loc, adjoint, tiledType, read);
    // The pooling's config over its loops (n, c, oh, ow, kh, kw): each of
    // its tasks broadcasts the adjoint of its output block over its
    // windows, as the simulator prices the pooling's backward task. Unset,
    // the broadcast ran where the adjoint was (a squeeze-excitation block's
    // pooled gradient on one device made the whole input's gradient there).
    if (ConfigAttr config =
            reorderedConfig(g.forwardConfig, {0, 1, 2, 4, 3, 5}))
      tiled.getDefiningOp()->setAttr(SoapDialect::getConfigAttrName(), config);
    auto coveredType = RankedTensorType::get(
        {x[0], x[1], dy[2] * w.kernelH, dy[3] * w.kernelW}, element);
    Value gradient = tensor::CollapseShapeOp::create(
        b, loc, coveredType, tiled,
        SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}, {4, 5}});
    if (coveredType != inputType)
      gradient = g.insertIntoZeros(loc, gradient, inputType, {0, 0, 0, 0},
                                   {1, 1, 1, 1});
    g.accumulate(loc, input, gradient);
    return success();
  }
  SmallVector<ReassociationIndices> merge = {{0, 1}, {2}, {3}};
  SmallVector<ReassociationIndices> unit = {{0, 1}, {2}, {3}};
  auto planes = [&](Value value, ArrayRef<int64_t> shape) {
    auto flat = RankedTensorType::get({shape[0] * shape[1], shape[2], shape[3]},
                                      element);
    Value collapsed =
        tensor::CollapseShapeOp::create(b, loc, flat, value, merge);
    auto single = RankedTensorType::get(
        {shape[0] * shape[1], 1, shape[2], shape[3]}, element);
    return tensor::ExpandShapeOp::create(b, loc, single, collapsed, unit)
        .getResult();
  };
  Value ones = g.filled(
      loc, RankedTensorType::get({1, 1, w.kernelH, w.kernelW}, element), 1.0);
  auto planeType =
      RankedTensorType::get({x[0] * x[1], 1, x[2], x[3]}, element);
  Value gradient = convInputGradient(g, loc, planes(adjoint, dy), ones, w,
                                     planeType);
  auto flat = RankedTensorType::get({x[0] * x[1], x[2], x[3]}, element);
  Value collapsed =
      tensor::CollapseShapeOp::create(b, loc, flat, gradient, unit);
  g.accumulate(loc, input,
               tensor::ExpandShapeOp::create(b, loc, inputType, collapsed,
                                             merge));
  return success();
}

static LogicalResult differentiateTranspose(GradientBuilder &g,
                                            linalg::TransposeOp op) {
  Location loc = op.getLoc();
  ArrayRef<int64_t> perm = op.getPermutation();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = static_cast<int64_t>(i);
  g.accumulate(loc, op.getInput(),
               g.transpose(loc, g.adjoint(op->getResult(0)), inverse));
  return success();
}

/// Generalizes a copy of `op`, differentiates the copy as a generic and
/// erases it.
static LogicalResult differentiateGeneralized(GradientBuilder &g,
                                              linalg::LinalgOp op) {
  IRRewriter rewriter(g.b);
  Operation *copy = rewriter.clone(*op.getOperation());
  FailureOr<linalg::GenericOp> generic =
      linalg::generalizeNamedOp(rewriter, cast<linalg::LinalgOp>(copy));
  if (failed(generic)) {
    copy->erase();
    return op->emitOpError("cannot be differentiated: it has no generic form");
  }
  // The gradient ops go after the copy (the builder appends).
  LogicalResult result = differentiateGeneric(g, *generic, op->getResults(), op);
  (*generic)->erase();
  return result;
}

LogicalResult differentiateLinalgOp(GradientBuilder &g, linalg::LinalgOp op) {
  if (!op.hasPureTensorSemantics() || !hasStaticTensors(op))
    return op->emitOpError(
        "cannot be differentiated: only ops on static tensors are supported");
  return llvm::TypeSwitch<Operation *, LogicalResult>(op.getOperation())
      .Case([&](linalg::FillOp fill) -> LogicalResult {
        if (g.isActive(fill.getDpsInputs()[0]))
          return fill.emitOpError("cannot be differentiated: the fill value "
                                  "depends on the parameters");
        return success(); // the output is overwritten
      })
      .Case([&](linalg::MatmulOp matmul) {
        if (matmul.hasUserDefinedMaps() ||
            tensorType(matmul.getDpsInputs()[0]).getElementType() !=
                tensorType(matmul->getResult(0)).getElementType())
          return differentiateGeneralized(g, op);
        return differentiateContraction(g, matmul);
      })
      .Case([&](linalg::BatchMatmulOp matmul) {
        if (matmul.hasUserDefinedMaps() ||
            tensorType(matmul.getDpsInputs()[0]).getElementType() !=
                tensorType(matmul->getResult(0)).getElementType())
          return differentiateGeneralized(g, op);
        return differentiateContraction(g, matmul);
      })
      .Case([&](linalg::Conv2DNchwFchwOp conv) {
        return differentiateConv(g, conv);
      })
      .Case([&](linalg::PoolingNchwSumOp pool) {
        return differentiateSumPool(g, pool);
      })
      .Case([&](linalg::TransposeOp transpose) {
        return differentiateTranspose(g, transpose);
      })
      .Default([&](Operation *) { return differentiateGeneralized(g, op); });
}

} // namespace soap::autodiff

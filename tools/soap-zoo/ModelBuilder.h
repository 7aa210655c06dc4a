//===- ModelBuilder.h - layers of the zoo's models --------------*- C++ -*-===//
//
// Builds one `@loss` function out of layers. Arguments appear as the layers
// ask for them: parameters (marked {soap.param}) first, in the order they are
// created, then inputs and labels. Every layer is built from upstream linalg,
// tensor, arith and math ops, each of which SOAP can partition. Ops carry a
// name location (`layer1.0.conv2`) from the current scope.
//
// Sizes that do not fit (an image too small for a network's pooling) are not
// bugs: the first such problem is recorded with `fail`, layers go on with a
// size of 1 so the caller can finish, and `finish` reports the message.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_TOOLS_SOAP_ZOO_MODELBUILDER_H
#define SOAP_TOOLS_SOAP_ZOO_MODELBUILDER_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace soap::zoo {

using mlir::Value;

/// Body of a linalg.generic: gets the scalars of the inputs, then of the
/// output, and returns the value to yield.
using BodyFn = llvm::function_ref<Value(mlir::OpBuilder &, mlir::Location,
                                        mlir::ValueRange)>;

/// Scalar helpers for generic bodies.
Value f32Constant(mlir::OpBuilder &b, mlir::Location loc, double value);
/// 1 / (1 + exp(-v)).
Value sigmoidOf(mlir::OpBuilder &b, mlir::Location loc, Value v);

/// A convolution or pooling window.
struct Window {
  int64_t kh, kw;
  int64_t stride = 1;
  int64_t padH = 0, padW = 0;

  static Window square(int64_t k, int64_t stride = 1, int64_t pad = 0) {
    return {k, k, stride, pad, pad};
  }
};

class ModelBuilder {
public:
  ModelBuilder(mlir::ModuleOp module, llvm::StringRef functionName = "loss");

  //===--------------------------------------------------------------------===//
  // The function
  //===--------------------------------------------------------------------===//

  /// A new f32 parameter argument called `<scope>.<name>`. `init` says how
  /// the runtime initialises it (`soap.init`, docs/train-step.md): "zeros",
  /// "ones", "fan-in:N", or empty for "fan-in" (all dimensions but the
  /// first).
  Value param(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
              llvm::StringRef init = {});
  /// A new input argument (images, token ids, labels), after every
  /// parameter; its batch is dimension 0. Integer inputs take values in
  /// [0, range) (`soap.range`).
  Value input(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
              mlir::Type elementType, int64_t range = 0);
  /// Returns `loss` and fixes the function's signature. Fails with the
  /// first recorded problem.
  llvm::LogicalResult finish(Value loss, std::string &error);

  /// Records a problem with the options (the first one wins).
  void fail(const llvm::Twine &message);
  bool hasFailed() const { return !failure.empty(); }

  /// Names ops and parameters created while it lives `<outer>.<name>`.
  class Scope {
  public:
    Scope(ModelBuilder &builder, const llvm::Twine &name);
    ~Scope();
    Scope(const Scope &) = delete;
    Scope &operator=(const Scope &) = delete;

  private:
    ModelBuilder &builder;
  };

  mlir::OpBuilder &getBuilder() { return builder; }
  mlir::MLIRContext *getContext() { return builder.getContext(); }
  mlir::Location loc() const { return locations.back(); }
  mlir::Type f32() { return builder.getF32Type(); }
  mlir::Type i64() { return builder.getI64Type(); }
  static llvm::ArrayRef<int64_t> shapeOf(Value value);
  static int64_t dimOf(Value value, unsigned dim) {
    return shapeOf(value)[dim];
  }

  //===--------------------------------------------------------------------===//
  // Tensors and generic loop nests
  //===--------------------------------------------------------------------===//

  Value empty(llvm::ArrayRef<int64_t> shape, mlir::Type elementType = {});
  /// linalg.fill of a new tensor.
  Value filled(llvm::ArrayRef<int64_t> shape, double value);
  Value zeros(llvm::ArrayRef<int64_t> shape) { return filled(shape, 0.0); }

  /// The map from `numDims` loops to the listed loops.
  mlir::AffineMap dims(unsigned numDims, llvm::ArrayRef<unsigned> loops);
  mlir::AffineMap identity(unsigned rank);

  /// A linalg.generic with parallel loops over `shape` that writes a new
  /// tensor of that shape (identity output map); `maps` index the inputs.
  Value parallel(mlir::ValueRange inputs, llvm::ArrayRef<mlir::AffineMap> maps,
                 llvm::ArrayRef<int64_t> shape, BodyFn body,
                 mlir::Type elementType = {});
  /// A linalg.generic over loops `shape` that keeps the loops `kept` (in
  /// order) and reduces the others into a tensor filled with `init`. The
  /// body gets the input scalars and the accumulator.
  Value reduction(mlir::ValueRange inputs, llvm::ArrayRef<mlir::AffineMap> maps,
                  llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<unsigned> kept,
                  double init, BodyFn body);

  /// Elementwise over one tensor.
  Value
  unary(Value x,
        llvm::function_ref<Value(mlir::OpBuilder &, mlir::Location, Value)> fn);
  /// Elementwise over two tensors of one shape.
  Value binary(
      Value a, Value b,
      llvm::function_ref<Value(mlir::OpBuilder &, mlir::Location, Value, Value)>
          fn);

  Value add(Value a, Value b);
  Value mul(Value a, Value b);
  Value relu(Value x);
  Value tanh(Value x);
  Value sigmoid(Value x);
  /// GELU, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
  Value gelu(Value x);
  Value scale(Value x, double factor);
  /// x + bias, with the rank-1 `bias` along dimension `dim` of x.
  Value addBias(Value x, Value bias, unsigned dim);

  //===--------------------------------------------------------------------===//
  // Shapes
  //===--------------------------------------------------------------------===//

  Value collapse(Value x, llvm::ArrayRef<mlir::ReassociationIndices> groups);
  Value expand(Value x, llvm::ArrayRef<int64_t> shape,
               llvm::ArrayRef<mlir::ReassociationIndices> groups);
  /// linalg.transpose: result dimension i is input dimension perm[i].
  Value transpose(Value x, llvm::ArrayRef<int64_t> perm);
  /// A unit-stride slice; dimensions in `dropped` (of size 1) are removed
  /// from the result.
  Value slice(Value x, llvm::ArrayRef<int64_t> offsets,
              llvm::ArrayRef<int64_t> sizes,
              llvm::ArrayRef<unsigned> dropped = {});
  Value concat(mlir::ValueRange values, int64_t dim);
  Value pad(Value x, llvm::ArrayRef<int64_t> low, llvm::ArrayRef<int64_t> high,
            double value);
  /// [N, C, H, W] to [N, C*H*W].
  Value flatten(Value x);

  //===--------------------------------------------------------------------===//
  // Layers
  //===--------------------------------------------------------------------===//

  /// [M, K] x [K, N] into a zero-filled accumulator.
  Value matmul(Value a, Value b);
  /// [B, M, K] x [B, K, N].
  Value batchMatmul(Value a, Value b);
  /// x [N, in] times a parameter `<name>.weight` [in, out], plus
  /// `<name>.bias` [out] when `bias`.
  Value linear(Value x, int64_t out, llvm::StringRef name, bool bias = true);

  /// NCHW convolution with a parameter `<name>.weight` [F, C, kh, kw] (and
  /// `<name>.bias` [F]); padding is a tensor.pad producer.
  Value conv2d(Value x, int64_t outChannels, Window window,
               llvm::StringRef name, bool bias);
  /// Batch normalization in training mode: per-channel batch mean and
  /// variance over N, H and W, then `<name>.weight` * x^ + `<name>.bias`.
  Value batchNorm(Value x, llvm::StringRef name, double epsilon);
  /// Mean and (biased) variance of `x` over the loops not in `kept`, each
  /// scaled by `inverse` (1 / the count reduced): the statistics of batch
  /// and layer norm. `statistic` maps the loops to the statistics' indices.
  std::pair<Value, Value> meanAndVariance(Value x, mlir::AffineMap all,
                                          mlir::AffineMap statistic,
                                          llvm::ArrayRef<unsigned> kept,
                                          double inverse);
  /// Max pooling; padding (-inf) never wins.
  Value maxPool(Value x, Window window, llvm::StringRef name);
  /// The NCHW pooling op `PoolOp` over `window`, padding with `padValue`
  /// and starting from `initValue` (what max and average pooling share).
  template <typename PoolOp>
  Value pool(Value x, Window window, double padValue, double initValue);
  /// Average pooling; padding counts in the divisor (k*k).
  Value avgPool(Value x, Window window, llvm::StringRef name);
  /// [N, C, H, W] to [N, C]: the mean over H and W.
  Value globalAvgPool(Value x);

  /// Layer normalization over the last dimension of [N, H].
  Value layerNorm(Value x, llvm::StringRef name, double epsilon);
  /// Softmax over the last dimension.
  Value softmax(Value x);

  /// Embedding lookup as a gather: row ids[n] of `table` [V, D] for each of
  /// the [N] ids (a generic reading the table with tensor.extract).
  Value lookup(Value ids, Value table);
  /// A new `<name>.weight` table [vocab, dim] and the lookup of [N] ids.
  Value embedding(Value ids, int64_t vocab, int64_t dim, llvm::StringRef name);

  /// Softmax cross-entropy of logits [N, C] against class ids [N] (i64),
  /// averaged over N: a tensor<f32>.
  Value softmaxCrossEntropy(Value logits, Value labels);

private:
  friend class Scope;

  std::string qualify(llvm::StringRef name) const;
  int64_t windowOutput(int64_t in, int64_t k, int64_t stride, int64_t padLow,
                       int64_t padHigh, llvm::StringRef what);
  mlir::Attribute i64Pair(int64_t value);

  mlir::OpBuilder builder;
  mlir::func::FuncOp function;
  mlir::Block *entry;
  unsigned numParams = 0;
  /// `soap.init` of each parameter, in argument order.
  llvm::SmallVector<std::string> paramInits;
  /// `soap.range` of each input, in the order inputs were added (0: none).
  llvm::SmallVector<int64_t> inputRanges;
  llvm::SmallVector<std::string> scopes;
  llvm::SmallVector<mlir::Location> locations;
  std::string failure;
};

} // namespace soap::zoo

#endif // SOAP_TOOLS_SOAP_ZOO_MODELBUILDER_H

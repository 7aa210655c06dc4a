//===- Transformer.cpp - BERT and GPT-2 -----------------------------------===//
//
// Transformer encoders (BERT: post-norm, with the pooler and a sequence
// classifier) and decoders (GPT-2: pre-norm, causal, with the output
// projection tied to the token embedding). The residual stream is
// [batch*seq, hidden]. Attention splits heads with expand_shape +
// linalg.transpose + collapse_shape into [batch*heads, seq, head_dim],
// multiplies with linalg.batch_matmul, scales (and masks) the scores in a
// linalg.generic and takes a softmax over the keys. The feed-forward is
// linear (4 * hidden) + GELU (tanh form) + linear. Token ids are i64;
// embeddings are gathers (see Lstm.cpp); positions are a slice of
// the position table added to every sample.
//
//===----------------------------------------------------------------------===//

#include "ModelBuilder.h"
#include "Models.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include <cmath>

using namespace mlir;
using namespace soap::zoo;

namespace {

struct TransformerShape {
  int64_t batch, seq, hidden, heads, layers, vocab, maxPositions;
  int64_t headDim() const { return hidden / heads; }
};
} // namespace

static LogicalResult readShape(const ModelOptions &options,
                               TransformerShape &shape, std::string &error) {
  shape = {options.get("batch"),  options.get("seq"),    options.get("hidden"),
           options.get("heads"),  options.get("layers"), options.get("vocab"),
           options.get("max-pos")};
  if (shape.hidden % shape.heads != 0) {
    error = "--heads " + std::to_string(shape.heads) +
            " does not divide --hidden " + std::to_string(shape.hidden);
    return failure();
  }
  if (shape.seq > shape.maxPositions) {
    error = "--seq " + std::to_string(shape.seq) +
            " is longer than --max-pos " + std::to_string(shape.maxPositions);
    return failure();
  }
  return success();
}

namespace {
class Transformer {
public:
  Transformer(ModelBuilder &mb, const TransformerShape &shape)
      : mb(mb), s(shape) {}

  /// x [batch*seq, hidden] + the first `seq` rows of a position table.
  Value addPositions(Value x, Value table) {
    Value positions = mb.slice(table, {0, 0}, {s.seq, s.hidden});
    Value x3 = mb.expand(x, {s.batch, s.seq, s.hidden}, {{0, 1}, {2}});
    Value sum =
        mb.parallel({x3, positions}, {mb.identity(3), mb.dims(3, {1, 2})},
                    {s.batch, s.seq, s.hidden},
                    [](OpBuilder &b, Location l, ValueRange args) {
                      return arith::AddFOp::create(b, l, args[0], args[1]);
                    });
    return mb.collapse(sum, {{0, 1}, {2}});
  }

  /// Multi-head self-attention of x [batch*seq, hidden], including the
  /// output projection `outputName`.
  Value attention(Value x, bool causal, const std::string &outputName) {
    Value q = mb.linear(x, s.hidden, "query");
    Value k = mb.linear(x, s.hidden, "key");
    Value v = mb.linear(x, s.hidden, "value");
    // Separate statements keep the ops in a fixed order.
    Value queries = splitHeads(q, {0, 2, 1, 3});
    Value keys = splitHeads(k, {0, 2, 3, 1});
    Value scores = mb.batchMatmul(queries, keys);
    double factor = 1.0 / std::sqrt(static_cast<double>(s.headDim()));
    Value scaled = mb.parallel(
        {scores}, {mb.identity(3)}, ModelBuilder::shapeOf(scores),
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value scaledScore =
              arith::MulFOp::create(b, l, args[0], f32Constant(b, l, factor));
          if (!causal)
            return scaledScore;
          // Query i sees keys j <= i.
          Value query = linalg::IndexOp::create(b, l, 1);
          Value key = linalg::IndexOp::create(b, l, 2);
          Value future = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ugt,
                                               key, query);
          Value masked = f32Constant(b, l, -1e9);
          return arith::SelectOp::create(b, l, future, masked, scaledScore);
        });
    Value probabilities = mb.softmax(scaled);
    Value values = splitHeads(v, {0, 2, 1, 3});
    Value context = mb.batchMatmul(probabilities, values);
    return mb.linear(mergeHeads(context), s.hidden, outputName);
  }

  /// linear (4 * hidden) + GELU + linear (hidden).
  Value feedForward(Value x, const std::string &inName,
                    const std::string &outName) {
    Value h = mb.gelu(mb.linear(x, 4 * s.hidden, inName));
    return mb.linear(h, s.hidden, outName);
  }

private:
  /// [batch*seq, hidden] to [batch*heads, seq, head_dim] (perm {0, 2, 1, 3})
  /// or [batch*heads, head_dim, seq] (perm {0, 2, 3, 1}).
  Value splitHeads(Value x, ArrayRef<int64_t> perm) {
    Value split =
        mb.expand(x, {s.batch, s.seq, s.heads, s.headDim()}, {{0, 1}, {2, 3}});
    return mb.collapse(mb.transpose(split, perm), {{0, 1}, {2}, {3}});
  }

  /// [batch*heads, seq, head_dim] to [batch*seq, hidden].
  Value mergeHeads(Value x) {
    Value split = mb.expand(x, {s.batch, s.heads, s.seq, s.headDim()},
                            {{0, 1}, {2}, {3}});
    return mb.collapse(mb.transpose(split, {0, 2, 1, 3}), {{0, 1}, {2, 3}});
  }

  ModelBuilder &mb;
  TransformerShape s;
};

} // namespace

LogicalResult soap::zoo::buildTransformerEncoder(ModuleOp module,
                                                 const ModelOptions &options,
                                                 std::string &error) {
  TransformerShape s;
  if (failed(readShape(options, s, error)))
    return failure();
  constexpr double kEpsilon = 1e-12;
  ModelBuilder mb(module);
  Transformer t(mb, s);
  Value tokens = mb.input("tokens", {s.batch, s.seq}, mb.i64(), s.vocab);
  Value types =
      mb.input("token_types", {s.batch, s.seq}, mb.i64(), options.get("types"));

  Value x;
  {
    ModelBuilder::Scope scope(mb, "embeddings");
    Value words = mb.embedding(mb.collapse(tokens, {{0, 1}}), s.vocab, s.hidden,
                               "word_embeddings");
    Value positions =
        mb.param("position_embeddings.weight", {s.maxPositions, s.hidden});
    Value segments =
        mb.embedding(mb.collapse(types, {{0, 1}}), options.get("types"),
                     s.hidden, "token_type_embeddings");
    x = t.addPositions(mb.add(words, segments), positions);
    x = mb.layerNorm(x, "LayerNorm", kEpsilon);
  }
  for (int64_t layer = 0; layer < s.layers; ++layer) {
    ModelBuilder::Scope scope(mb, "encoder.layer." + std::to_string(layer));
    Value attended;
    {
      ModelBuilder::Scope attentionScope(mb, "attention");
      attended = t.attention(x, /*causal=*/false, "output.dense");
      x = mb.layerNorm(mb.add(x, attended), "output.LayerNorm", kEpsilon);
    }
    Value transformed = t.feedForward(x, "intermediate.dense", "output.dense");
    x = mb.layerNorm(mb.add(x, transformed), "output.LayerNorm", kEpsilon);
  }

  // Pooler (tanh of a linear map of the first token) and classifier.
  Value sequence = mb.expand(x, {s.batch, s.seq, s.hidden}, {{0, 1}, {2}});
  Value first = mb.slice(sequence, {0, 0, 0}, {s.batch, 1, s.hidden}, {1});
  Value pooled = mb.tanh(mb.linear(first, s.hidden, "pooler.dense"));
  Value logits = mb.linear(pooled, options.get("classes"), "classifier");
  Value labels =
      mb.input("labels", {s.batch}, mb.i64(), options.get("classes"));
  return mb.finish(mb.softmaxCrossEntropy(logits, labels), error);
}

LogicalResult soap::zoo::buildTransformerDecoder(ModuleOp module,
                                                 const ModelOptions &options,
                                                 std::string &error) {
  TransformerShape s;
  if (failed(readShape(options, s, error)))
    return failure();
  constexpr double kEpsilon = 1e-5;
  ModelBuilder mb(module);
  Transformer t(mb, s);
  Value tokens = mb.input("tokens", {s.batch, s.seq}, mb.i64(), s.vocab);

  Value tokenTable = mb.param("wte.weight", {s.vocab, s.hidden});
  Value positionTable = mb.param("wpe.weight", {s.maxPositions, s.hidden});
  Value x = t.addPositions(mb.lookup(mb.collapse(tokens, {{0, 1}}), tokenTable),
                           positionTable);
  for (int64_t layer = 0; layer < s.layers; ++layer) {
    ModelBuilder::Scope scope(mb, "h." + std::to_string(layer));
    Value attended;
    {
      Value normed = mb.layerNorm(x, "ln_1", kEpsilon);
      ModelBuilder::Scope attentionScope(mb, "attn");
      attended = t.attention(normed, /*causal=*/true, "c_proj");
    }
    x = mb.add(x, attended);
    Value normed = mb.layerNorm(x, "ln_2", kEpsilon);
    x = mb.add(x, t.feedForward(normed, "mlp.c_fc", "mlp.c_proj"));
  }
  x = mb.layerNorm(x, "ln_f", kEpsilon);

  // The output projection reuses the token embedding (tied weights).
  Value logits = mb.matmul(x, mb.transpose(tokenTable, {1, 0}));
  Value labels = mb.input("labels", {s.batch, s.seq}, mb.i64(), s.vocab);
  return mb.finish(
      mb.softmaxCrossEntropy(logits, mb.collapse(labels, {{0, 1}})), error);
}

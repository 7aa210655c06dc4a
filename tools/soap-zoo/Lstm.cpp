//===- Lstm.cpp - the FlexFlow paper's recurrent networks -----------------===//
//
// RNNTC (text classification), RNNLM (language model) and NMT (encoder-
// decoder with attention), after the FlexFlow paper's benchmarks (batch 64,
// 20 steps, 2048-wide embeddings and states, as in FlexFlow's NMT code).
//
// Tokens come in as integer ids [batch, seq] (i64). An embedding lookup is a
// gather in the form torch-mlir and IREE emit: a linalg.generic over
// [batch*seq, embed] whose body reads row ids[n] of the table [vocab, embed]
// with tensor.extract. No one-hot tensor exists; the table's gradient is a
// scatter-add (lib/autodiff/GatherGradient.cpp).
//
// LSTMs are unrolled over the sequence. A step of a layer concatenates its
// input with the previous state ([batch, in + hidden]), multiplies by one
// weight [in + hidden, 4 * hidden] plus a bias [4 * hidden], slices the
// gates (input, forget, cell, output, PyTorch's order), and updates the cell
// and the state in two elementwise linalg.generics:
//   c' = sigmoid(f) * c + sigmoid(i) * tanh(g),   h' = sigmoid(o) * tanh(c').
// States start at zero.
//
//===----------------------------------------------------------------------===//

#include "ModelBuilder.h"
#include "Models.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace soap::zoo;

namespace {
/// Stacked LSTM layers with their parameters and running states.
class LstmStack {
public:
  LstmStack(ModelBuilder &mb, const std::string &name, int64_t input,
            int64_t hidden, int64_t layers)
      : mb(mb), name(name), hidden(hidden) {
    ModelBuilder::Scope scope(mb, name);
    for (int64_t layer = 0; layer < layers; ++layer) {
      ModelBuilder::Scope layerScope(mb, std::to_string(layer));
      int64_t in = layer == 0 ? input : hidden;
      // PyTorch's LSTM initialisation: uniform in ±1/sqrt(hidden).
      std::string init = "fan-in:" + std::to_string(hidden);
      weights.push_back(mb.param("weight", {in + hidden, 4 * hidden}, init));
      biases.push_back(mb.param("bias", {4 * hidden}, init));
    }
    states.resize(layers);
    cells.resize(layers);
  }

  /// Runs one time step of every layer on x [batch, input]; returns the
  /// top layer's new state.
  Value step(Value x, int64_t time) {
    ModelBuilder::Scope scope(mb, name + ".t" + std::to_string(time));
    for (size_t layer = 0; layer < weights.size(); ++layer) {
      ModelBuilder::Scope layerScope(mb, std::to_string(layer));
      cell(x, layer);
      x = states[layer];
    }
    return x;
  }

  /// Starts from the final states and cells of `other` rather than zeros
  /// (a decoder from its encoder).
  void copyStateFrom(const LstmStack &other) {
    states = other.states;
    cells = other.cells;
  }

private:
  void cell(Value x, size_t layer) {
    int64_t batch = ModelBuilder::dimOf(x, 0);
    if (!states[layer]) {
      states[layer] = mb.zeros({batch, hidden});
      cells[layer] = mb.zeros({batch, hidden});
    }
    Value joined = mb.concat({x, states[layer]}, 1);
    Value gates =
        mb.addBias(mb.matmul(joined, weights[layer]), biases[layer], 1);
    auto gate = [&](int64_t index) {
      return mb.slice(gates, {0, index * hidden}, {batch, hidden});
    };
    Value in = gate(0), forget = gate(1), candidate = gate(2), out = gate(3);
    AffineMap id = mb.identity(2);
    Value c = mb.parallel(
        {in, forget, candidate, cells[layer]}, {id, id, id, id},
        {batch, hidden}, [](OpBuilder &b, Location l, ValueRange args) {
          Value kept =
              arith::MulFOp::create(b, l, sigmoidOf(b, l, args[1]), args[3]);
          Value added =
              arith::MulFOp::create(b, l, sigmoidOf(b, l, args[0]),
                                    math::TanhOp::create(b, l, args[2]));
          return arith::AddFOp::create(b, l, kept, added);
        });
    Value h = mb.parallel({out, c}, {id, id}, {batch, hidden},
                          [](OpBuilder &b, Location l, ValueRange args) {
                            return arith::MulFOp::create(
                                b, l, sigmoidOf(b, l, args[0]),
                                math::TanhOp::create(b, l, args[1]));
                          });
    cells[layer] = c;
    states[layer] = h;
  }

  ModelBuilder &mb;
  std::string name;
  int64_t hidden;
  SmallVector<Value> weights, biases, states, cells;
};
} // namespace

/// Embeds ids [batch, seq] into [batch, seq, embed].
static Value embedSequence(ModelBuilder &mb, Value ids, int64_t vocab,
                           int64_t embed, const std::string &name) {
  int64_t batch = ModelBuilder::dimOf(ids, 0),
          seq = ModelBuilder::dimOf(ids, 1);
  Value flat = mb.collapse(ids, {{0, 1}});
  Value rows = mb.embedding(flat, vocab, embed, name);
  return mb.expand(rows, {batch, seq, embed}, {{0, 1}, {2}});
}

/// Step `time` of an embedded sequence [batch, seq, embed]: [batch, embed].
static Value at(ModelBuilder &mb, Value sequence, int64_t time) {
  int64_t batch = ModelBuilder::dimOf(sequence, 0);
  int64_t width = ModelBuilder::dimOf(sequence, 2);
  return mb.slice(sequence, {0, time, 0}, {batch, 1, width}, {1});
}

/// Runs `stack` over every step of `sequence`; returns the top states
/// stacked as [batch, seq, hidden].
static Value runSequence(ModelBuilder &mb, LstmStack &stack, Value sequence) {
  int64_t batch = ModelBuilder::dimOf(sequence, 0);
  int64_t seq = ModelBuilder::dimOf(sequence, 1);
  SmallVector<Value> outputs;
  for (int64_t t = 0; t < seq; ++t) {
    Value h = stack.step(at(mb, sequence, t), t);
    int64_t hidden = ModelBuilder::dimOf(h, 1);
    outputs.push_back(mb.expand(h, {batch, 1, hidden}, {{0}, {1, 2}}));
  }
  return mb.concat(outputs, 1);
}

/// Softmax cross-entropy of per-step logits [batch*seq, vocab] against
/// next-token ids [batch, seq], averaged over the batch and the steps.
static Value sequenceLoss(ModelBuilder &mb, Value logits, int64_t batch,
                          int64_t seq, int64_t vocab) {
  Value labels = mb.input("labels", {batch, seq}, mb.i64(), vocab);
  return mb.softmaxCrossEntropy(logits, mb.collapse(labels, {{0, 1}}));
}

LogicalResult soap::zoo::buildRnnTc(ModuleOp module,
                                    const ModelOptions &options,
                                    std::string &error) {
  int64_t batch = options.get("batch"), seq = options.get("seq");
  int64_t embed = options.get("embed"), hidden = options.get("hidden");
  ModelBuilder mb(module);
  Value tokens =
      mb.input("tokens", {batch, seq}, mb.i64(), options.get("vocab"));
  Value embedded =
      embedSequence(mb, tokens, options.get("vocab"), embed, "embedding");
  LstmStack lstm(mb, "lstm", embed, hidden, options.get("layers"));
  Value last;
  for (int64_t t = 0; t < seq; ++t)
    last = lstm.step(at(mb, embedded, t), t);
  Value logits = mb.linear(last, options.get("classes"), "classifier");
  Value labels = mb.input("labels", {batch}, mb.i64(), options.get("classes"));
  return mb.finish(mb.softmaxCrossEntropy(logits, labels), error);
}

LogicalResult soap::zoo::buildRnnLm(ModuleOp module,
                                    const ModelOptions &options,
                                    std::string &error) {
  int64_t batch = options.get("batch"), seq = options.get("seq");
  int64_t embed = options.get("embed"), hidden = options.get("hidden");
  int64_t vocab = options.get("vocab");
  ModelBuilder mb(module);
  Value tokens = mb.input("tokens", {batch, seq}, mb.i64(), vocab);
  Value embedded = embedSequence(mb, tokens, vocab, embed, "embedding");
  LstmStack lstm(mb, "lstm", embed, hidden, options.get("layers"));
  Value outputs = runSequence(mb, lstm, embedded);
  Value logits =
      mb.linear(mb.collapse(outputs, {{0, 1}, {2}}), vocab, "decoder");
  return mb.finish(sequenceLoss(mb, logits, batch, seq, vocab), error);
}

LogicalResult soap::zoo::buildNmt(ModuleOp module, const ModelOptions &options,
                                  std::string &error) {
  int64_t batch = options.get("batch"), seq = options.get("seq");
  int64_t embed = options.get("embed"), hidden = options.get("hidden");
  int64_t vocab = options.get("vocab"), layers = options.get("layers");
  ModelBuilder mb(module);
  Value source = mb.input("source", {batch, seq}, mb.i64(), vocab);
  Value target = mb.input("target", {batch, seq}, mb.i64(), vocab);

  // Encoder.
  Value sourceEmbedded =
      embedSequence(mb, source, vocab, embed, "encoder.embedding");
  LstmStack encoder(mb, "encoder.lstm", embed, hidden, layers);
  Value encoded = runSequence(mb, encoder, sourceEmbedded);

  // Decoder (teacher forcing: the target tokens are its inputs), started
  // from the encoder's final states.
  Value targetEmbedded =
      embedSequence(mb, target, vocab, embed, "decoder.embedding");
  LstmStack decoder(mb, "decoder.lstm", embed, hidden, layers);
  decoder.copyStateFrom(encoder);
  Value decoded = runSequence(mb, decoder, targetEmbedded);

  // Global (Luong "dot") attention of every decoder state over the encoder
  // states, then h~ = tanh(W_c [context; h]).
  Value combined;
  {
    ModelBuilder::Scope scope(mb, "attention");
    Value scores = mb.batchMatmul(decoded, mb.transpose(encoded, {0, 2, 1}));
    Value weights = mb.softmax(scores);
    Value context = mb.batchMatmul(weights, encoded);
    Value joined = mb.concat({context, decoded}, 2);
    combined = mb.tanh(mb.linear(mb.collapse(joined, {{0, 1}, {2}}), hidden,
                                 "combine", /*bias=*/false));
  }
  Value logits = mb.linear(combined, vocab, "generator");
  return mb.finish(sequenceLoss(mb, logits, batch, seq, vocab), error);
}

#!/usr/bin/env python3
"""Checks what the zoo's models compute.

For each model named on the command line: builds a tiny version with
soap-zoo, fills every argument with deterministic pseudo-random values, runs
@loss on the CPU through upstream MLIR (one-shot bufferization, loops, LLVM,
mlir-runner), and compares the loss with an independent pure-Python
implementation of the architecture. Prints one line per model and exits 1 on
any mismatch.

  zoo_reference.py --zoo path/to/soap-zoo --work DIR MODEL...
"""
import argparse
import math
import os
import re
import shutil
import subprocess
import sys

# ---------------------------------------------------------------------------
# Running a model through upstream MLIR
# ---------------------------------------------------------------------------

LOWERING = [
    "--one-shot-bufferize=bufferize-function-boundaries",
    "--buffer-deallocation-pipeline",
    "--convert-linalg-to-loops",
    "--convert-scf-to-cf",
    "--expand-strided-metadata",
    "--lower-affine",
    "--math-expand-ops",
    "--finalize-memref-to-llvm",
    "--convert-math-to-llvm",
    "--convert-arith-to-llvm",
    "--convert-index-to-llvm",
    "--convert-func-to-llvm",
    "--convert-cf-to-llvm",
    "--reconcile-unrealized-casts",
]


def numel(shape):
    count = 1
    for size in shape:
        count *= size
    return count


def pseudo_random(seed):
    """Uniform values in [0, 1) from a linear congruential generator."""
    state = seed
    while True:
        state = (state * 1103515245 + 12345) % (1 << 31)
        yield state / (1 << 31)


def loss_arguments(module_text):
    """(name, shape, element type) of each argument of @loss."""
    signature = re.search(r"func\.func @loss\((.*?)\) -> tensor<f32>",
                          module_text).group(1)
    arguments = []
    for match in re.finditer(r"%([\w.]+): tensor<((?:\d+x)*)(f32|i64)>",
                             signature):
        shape = [int(d) for d in match.group(2).split("x") if d]
        arguments.append((match.group(1), shape, match.group(3)))
    return arguments


def argument_values(arguments, id_ranges):
    """Weights in [-0.5, 0.5) (vectors in [-0.2, 0.2)), normalization scales
    around 1, integer ids below the range given for their argument."""
    generator = pseudo_random(7)
    values = {}
    for name, shape, element in arguments:
        count = numel(shape)
        if element == "i64":
            flat = [int(next(generator) * id_ranges[name]) for _ in range(count)]
        else:
            scale = 0.5 if len(shape) > 1 else 0.2
            flat = [(next(generator) - 0.5) * 2 * scale for _ in range(count)]
            if re.search(r"(ln_\w+|LayerNorm|bn\d*|downsample\.1)\.weight$", name):
                flat = [1.0 + v for v in flat]
        values[name] = (shape, flat)
    return values


def harness(module_text, arguments, values):
    """The module with a @main that calls @loss on constants and prints it."""
    lines, operands, types = [], [], []
    for index, (name, shape, element) in enumerate(arguments):
        flat_values = values[name][1]
        literal = ", ".join(repr(float(v)) if element == "f32" else str(v)
                            for v in flat_values)
        flat_type = f"tensor<{len(flat_values)}x{element}>"
        full_type = "tensor<" + "".join(f"{d}x" for d in shape) + element + ">"
        lines.append(f"    %flat{index} = arith.constant dense<[{literal}]> : {flat_type}")
        if len(shape) == 1:
            lines.append(f"    %arg{index} = tensor.cast %flat{index} : {flat_type} to {full_type}")
        else:
            lines.append(f"    %shape{index} = arith.constant dense<{shape}> : tensor<{len(shape)}xindex>")
            lines.append(f"    %arg{index} = tensor.reshape %flat{index}(%shape{index}) : "
                         f"({flat_type}, tensor<{len(shape)}xindex>) -> {full_type}")
        operands.append(f"%arg{index}")
        types.append(full_type)
    body = "\n".join(lines)
    main = f"""
  func.func @main() {{
{body}
    %loss = call @loss({", ".join(operands)}) : ({", ".join(types)}) -> tensor<f32>
    %unranked = tensor.cast %loss : tensor<f32> to tensor<*xf32>
    call @printMemrefF32(%unranked) : (tensor<*xf32>) -> ()
    return
  }}
  func.func private @printMemrefF32(tensor<*xf32>)
}}
"""
    text = module_text.rstrip()
    assert text.endswith("}"), "soap-zoo printed an unexpected module"
    return text[:-1] + main


def run_mlir(zoo, work, model, flags, id_ranges):
    module_text = subprocess.run([zoo, model] + flags, check=True,
                                 capture_output=True, text=True).stdout
    arguments = loss_arguments(module_text)
    values = argument_values(arguments, id_ranges)
    source = os.path.join(work, f"{model}.mlir")
    lowered = os.path.join(work, f"{model}.llvm.mlir")
    with open(source, "w") as f:
        f.write(harness(module_text, arguments, values))
    subprocess.run(["mlir-opt", source, "-o", lowered] + LOWERING, check=True)
    libs = os.path.join(os.path.dirname(shutil.which("mlir-runner")), "..", "lib")
    shared = ",".join(os.path.join(libs, lib) for lib in
                      ("libmlir_runner_utils.so", "libmlir_c_runner_utils.so"))
    output = subprocess.run(["mlir-runner", lowered, "-e", "main",
                             "-entry-point-result=void", f"-shared-libs={shared}"],
                            check=True, capture_output=True, text=True).stdout
    return float(re.search(r"data =\s*\[([-+0-9.eE]+|nan|inf)\]", output).group(1)), values


# ---------------------------------------------------------------------------
# Reference layers on nested lists
# ---------------------------------------------------------------------------

def tensor(values, name):
    shape, flat = values[name]

    def nest(items, dims):
        if len(dims) <= 1:
            return list(items)
        step = numel(dims[1:])
        return [nest(items[i * step:(i + 1) * step], dims[1:]) for i in range(dims[0])]
    return nest(flat, shape)


def flat_ids(values, name):
    return [i for row in tensor(values, name) for i in row]


def matmul(a, b):
    columns = list(zip(*b))
    return [[sum(x * y for x, y in zip(row, column)) for column in columns] for row in a]


def linear(values, x, name, bias=True):
    y = matmul(x, tensor(values, name + ".weight"))
    if bias:
        y = [[u + v for u, v in zip(row, tensor(values, name + ".bias"))] for row in y]
    return y


def apply(x, fn):
    return [[fn(v) for v in row] for row in x]


def add(a, b):
    return [[u + v for u, v in zip(r, s)] for r, s in zip(a, b)]


def relu(v):
    return max(0.0, v)


def sigmoid(v):
    return 1 / (1 + math.exp(-v))


def gelu(v):
    return 0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3)))


def layer_norm(values, x, name, epsilon):
    gamma, beta = tensor(values, name + ".weight"), tensor(values, name + ".bias")
    out = []
    for row in x:
        mean = sum(row) / len(row)
        variance = sum((v - mean) ** 2 for v in row) / len(row)
        out.append([(v - mean) / math.sqrt(variance + epsilon) * g + b
                    for v, g, b in zip(row, gamma, beta)])
    return out


def softmax(scores):
    top = max(scores)
    exps = [math.exp(s - top) for s in scores]
    total = sum(exps)
    return [e / total for e in exps]


def cross_entropy(logits, labels):
    total = 0.0
    for row, label in zip(logits, labels):
        top = max(row)
        total += math.log(sum(math.exp(v - top) for v in row)) + top - row[label]
    return total / len(logits)


# ---------------------------------------------------------------------------
# Reference models
# ---------------------------------------------------------------------------

def mlp(values, layers):
    x = tensor(values, "input")
    for layer in range(layers):
        x = apply(linear(values, x, f"fc{layer}"), relu)
    return cross_entropy(linear(values, x, "classifier"), tensor(values, "labels"))


def self_attention(values, x, prefix, batch, seq, heads, causal, output):
    width = len(x[0])
    head_dim = width // heads
    q = linear(values, x, prefix + ".query")
    k = linear(values, x, prefix + ".key")
    v = linear(values, x, prefix + ".value")
    context = [[0.0] * width for _ in range(batch * seq)]
    for b in range(batch):
        for h in range(heads):
            columns = range(h * head_dim, (h + 1) * head_dim)
            for i in range(seq):
                scores = []
                for j in range(seq):
                    score = sum(q[b * seq + i][c] * k[b * seq + j][c] for c in columns)
                    scores.append(-1e9 if causal and j > i else score / math.sqrt(head_dim))
                weights = softmax(scores)
                for c in columns:
                    context[b * seq + i][c] = sum(weights[j] * v[b * seq + j][c] for j in range(seq))
    return linear(values, context, prefix + "." + output)


def gpt2(values, batch, seq, heads, layers):
    tokens = flat_ids(values, "tokens")
    wte, wpe = tensor(values, "wte.weight"), tensor(values, "wpe.weight")
    x = [[t + p for t, p in zip(wte[tokens[b * seq + s]], wpe[s])]
         for b in range(batch) for s in range(seq)]
    for layer in range(layers):
        p = f"h.{layer}"
        h = layer_norm(values, x, p + ".ln_1", 1e-5)
        x = add(x, self_attention(values, h, p + ".attn", batch, seq, heads, True, "c_proj"))
        h = layer_norm(values, x, p + ".ln_2", 1e-5)
        h = apply(linear(values, h, p + ".mlp.c_fc"), gelu)
        x = add(x, linear(values, h, p + ".mlp.c_proj"))
    x = layer_norm(values, x, "ln_f", 1e-5)
    logits = matmul(x, [list(column) for column in zip(*wte)])
    return cross_entropy(logits, flat_ids(values, "labels"))


def bert(values, batch, seq, heads, layers):
    tokens, types = flat_ids(values, "tokens"), flat_ids(values, "token_types")
    words = tensor(values, "embeddings.word_embeddings.weight")
    positions = tensor(values, "embeddings.position_embeddings.weight")
    segments = tensor(values, "embeddings.token_type_embeddings.weight")
    x = []
    for b in range(batch):
        for s in range(seq):
            n = b * seq + s
            x.append([w + t + p for w, t, p in
                      zip(words[tokens[n]], segments[types[n]], positions[s])])
    x = layer_norm(values, x, "embeddings.LayerNorm", 1e-12)
    for layer in range(layers):
        p = f"encoder.layer.{layer}"
        a = self_attention(values, x, p + ".attention", batch, seq, heads, False, "output.dense")
        x = layer_norm(values, add(x, a), p + ".attention.output.LayerNorm", 1e-12)
        h = apply(linear(values, x, p + ".intermediate.dense"), gelu)
        x = layer_norm(values, add(x, linear(values, h, p + ".output.dense")),
                       p + ".output.LayerNorm", 1e-12)
    first = [x[b * seq] for b in range(batch)]
    pooled = apply(linear(values, first, "pooler.dense"), math.tanh)
    return cross_entropy(linear(values, pooled, "classifier"), tensor(values, "labels"))


def lstm(values, prefix, steps, hidden, layers, state=None):
    """Runs stacked LSTMs over `steps` (a list of [batch][in]); returns the
    top states of every step and the final (states, cells)."""
    batch = len(steps[0])
    zeros = [[[0.0] * hidden for _ in range(batch)] for _ in range(layers)]
    states, cells = (list(state[0]), list(state[1])) if state else (zeros, list(zeros))
    tops = []
    for x in steps:
        for layer in range(layers):
            joined = [x[b] + states[layer][b] for b in range(batch)]
            gates = linear(values, joined, f"{prefix}.{layer}")
            new_states, new_cells = [], []
            for b in range(batch):
                g = gates[b]
                i, f = g[:hidden], g[hidden:2 * hidden]
                c, o = g[2 * hidden:3 * hidden], g[3 * hidden:]
                cell = [sigmoid(ff) * cc + sigmoid(ii) * math.tanh(gg)
                        for ii, ff, gg, cc in zip(i, f, c, cells[layer][b])]
                new_cells.append(cell)
                new_states.append([sigmoid(oo) * math.tanh(cc) for oo, cc in zip(o, cell)])
            states[layer], cells[layer] = new_states, new_cells
            x = new_states
        tops.append(x)
    return tops, (states, cells)


def embedded_steps(values, table, ids_name):
    table, ids = tensor(values, table), tensor(values, ids_name)
    return [[table[row[t]] for row in ids] for t in range(len(ids[0]))]


def rnntc(values, hidden, layers):
    tops, _ = lstm(values, "lstm", embedded_steps(values, "embedding.weight", "tokens"),
                   hidden, layers)
    return cross_entropy(linear(values, tops[-1], "classifier"), tensor(values, "labels"))


def rnnlm(values, hidden, layers):
    tops, _ = lstm(values, "lstm", embedded_steps(values, "embedding.weight", "tokens"),
                   hidden, layers)
    rows = [tops[t][b] for b in range(len(tops[0])) for t in range(len(tops))]
    return cross_entropy(linear(values, rows, "decoder"), flat_ids(values, "labels"))


def nmt(values, hidden, layers):
    encoded, final = lstm(values, "encoder.lstm",
                          embedded_steps(values, "encoder.embedding.weight", "source"),
                          hidden, layers)
    decoded, _ = lstm(values, "decoder.lstm",
                      embedded_steps(values, "decoder.embedding.weight", "target"),
                      hidden, layers, final)
    rows = []
    for b in range(len(decoded[0])):
        for t in range(len(decoded)):
            weights = softmax([sum(d * e for d, e in zip(decoded[t][b], encoded[s][b]))
                               for s in range(len(encoded))])
            context = [sum(w * encoded[s][b][c] for s, w in enumerate(weights))
                       for c in range(hidden)]
            rows.append(context + decoded[t][b])
    combined = apply(linear(values, rows, "attention.combine", bias=False), math.tanh)
    return cross_entropy(linear(values, combined, "generator"), flat_ids(values, "labels"))


def conv(x, weight, bias, stride, pad_h, pad_w):
    height, width = len(x[0][0]), len(x[0][0][0])
    kh, kw = len(weight[0][0]), len(weight[0][0][0])
    oh = (height + 2 * pad_h - kh) // stride + 1
    ow = (width + 2 * pad_w - kw) // stride + 1
    out = []
    for sample in x:
        maps = []
        for f, filt in enumerate(weight):
            rows = []
            for i in range(oh):
                row = []
                for j in range(ow):
                    total = bias[f] if bias else 0.0
                    for channel, kernel in zip(sample, filt):
                        for a in range(kh):
                            r = i * stride + a - pad_h
                            if 0 <= r < height:
                                for c in range(kw):
                                    q = j * stride + c - pad_w
                                    if 0 <= q < width:
                                        total += channel[r][q] * kernel[a][c]
                    row.append(total)
                rows.append(row)
            maps.append(rows)
        out.append(maps)
    return out


def pool(x, k, stride, pad, kind):
    """Max pooling ignores padding; average pooling divides by k*k."""
    height, width = len(x[0][0]), len(x[0][0][0])
    oh, ow = (height + 2 * pad - k) // stride + 1, (width + 2 * pad - k) // stride + 1

    def window(channel, i, j):
        return [channel[r][q] for r in range(i * stride - pad, i * stride - pad + k)
                for q in range(j * stride - pad, j * stride - pad + k)
                if 0 <= r < height and 0 <= q < width]
    reduce = max if kind == "max" else (lambda w: sum(w) / (k * k))
    return [[[[reduce(window(channel, i, j)) for j in range(ow)] for i in range(oh)]
             for channel in sample] for sample in x]


def batch_norm(values, x, name, epsilon):
    gamma, beta = tensor(values, name + ".weight"), tensor(values, name + ".bias")
    out = [[None] * len(x[0]) for _ in x]
    for c in range(len(x[0])):
        data = [v for sample in x for row in sample[c] for v in row]
        mean = sum(data) / len(data)
        variance = sum((v - mean) ** 2 for v in data) / len(data)
        for n, sample in enumerate(x):
            out[n][c] = [[(v - mean) / math.sqrt(variance + epsilon) * gamma[c] + beta[c]
                          for v in row] for row in sample[c]]
    return out


def relu4(x):
    return [[apply(channel, relu) for channel in sample] for sample in x]


def add4(a, b):
    return [[add(p, q) for p, q in zip(s, t)] for s, t in zip(a, b)]


def concat(parts):
    return [[channel for part in parts for channel in part[n]] for n in range(len(parts[0]))]


def flatten(x):
    return [[v for channel in sample for row in channel for v in row] for sample in x]


def global_average(x):
    return [[sum(v for row in channel for v in row) / (len(channel) * len(channel[0]))
             for channel in sample] for sample in x]


def conv_layer(values, x, name, stride, pad, bias=True):
    return conv(x, tensor(values, name + ".weight"),
                tensor(values, name + ".bias") if bias else None, stride, pad, pad)


def alexnet(values):
    x = tensor(values, "images")
    x = pool(relu4(conv_layer(values, x, "conv1", 4, 2)), 3, 2, 0, "max")
    x = pool(relu4(conv_layer(values, x, "conv2", 1, 2)), 3, 2, 0, "max")
    for name in ("conv3", "conv4", "conv5"):
        x = relu4(conv_layer(values, x, name, 1, 1))
    x = flatten(pool(x, 3, 2, 0, "max"))
    x = apply(linear(values, x, "fc6"), relu)
    x = apply(linear(values, x, "fc7"), relu)
    return cross_entropy(linear(values, x, "fc8"), tensor(values, "labels"))


def vgg16(values):
    x = tensor(values, "images")
    for stage, convs in enumerate((2, 2, 3, 3, 3)):
        for index in range(convs):
            x = relu4(conv_layer(values, x, f"conv{stage + 1}_{index + 1}", 1, 1))
        x = pool(x, 2, 2, 0, "max")
    x = apply(linear(values, flatten(x), "fc6"), relu)
    x = apply(linear(values, x, "fc7"), relu)
    return cross_entropy(linear(values, x, "fc8"), tensor(values, "labels"))


def resnet(values, bottleneck, blocks):
    def conv_bn(x, conv_name, bn_name, stride, pad, activate):
        y = batch_norm(values, conv_layer(values, x, conv_name, stride, pad, bias=False),
                       bn_name, 1e-5)
        return relu4(y) if activate else y
    x = conv_bn(tensor(values, "images"), "conv1", "bn1", 2, 3, True)
    x = pool(x, 3, 2, 1, "max")
    for stage, count in enumerate(blocks):
        for index in range(count):
            p = f"layer{stage + 1}.{index}"
            stride = 2 if stage > 0 and index == 0 else 1
            if bottleneck:
                y = conv_bn(x, p + ".conv1", p + ".bn1", 1, 0, True)
                y = conv_bn(y, p + ".conv2", p + ".bn2", stride, 1, True)
                y = conv_bn(y, p + ".conv3", p + ".bn3", 1, 0, False)
            else:
                y = conv_bn(x, p + ".conv1", p + ".bn1", stride, 1, True)
                y = conv_bn(y, p + ".conv2", p + ".bn2", 1, 1, False)
            shortcut = x
            if p + ".downsample.0.weight" in values:
                shortcut = conv_bn(x, p + ".downsample.0", p + ".downsample.1", stride, 0, False)
            x = relu4(add4(y, shortcut))
    return cross_entropy(linear(values, global_average(x), "fc"), tensor(values, "labels"))


def inception_v3(values):
    def basic(x, name, kh, kw, stride=1, pad_h=0, pad_w=0):
        y = conv(x, tensor(values, name + ".conv.weight"), None, stride, pad_h, pad_w)
        return relu4(batch_norm(values, y, name + ".bn", 1e-3))

    def row(x, name, k):
        return basic(x, name, 1, k, 1, 0, k // 2)

    def column(x, name, k):
        return basic(x, name, k, 1, 1, k // 2, 0)

    def pool_branch(x, m):
        return basic(pool(x, 3, 1, 1, "avg"), m + ".branch_pool", 1, 1)

    x = tensor(values, "images")
    x = basic(x, "Conv2d_1a_3x3", 3, 3, 2)
    x = basic(x, "Conv2d_2a_3x3", 3, 3)
    x = basic(x, "Conv2d_2b_3x3", 3, 3, 1, 1, 1)
    x = pool(x, 3, 2, 0, "max")
    x = basic(x, "Conv2d_3b_1x1", 1, 1)
    x = basic(x, "Conv2d_4a_3x3", 3, 3)
    x = pool(x, 3, 2, 0, "max")
    for m in ("Mixed_5b", "Mixed_5c", "Mixed_5d"):
        b1 = basic(x, m + ".branch1x1", 1, 1)
        b5 = basic(basic(x, m + ".branch5x5_1", 1, 1), m + ".branch5x5_2", 5, 5, 1, 2, 2)
        b3 = basic(x, m + ".branch3x3dbl_1", 1, 1)
        b3 = basic(b3, m + ".branch3x3dbl_2", 3, 3, 1, 1, 1)
        b3 = basic(b3, m + ".branch3x3dbl_3", 3, 3, 1, 1, 1)
        x = concat([b1, b5, b3, pool_branch(x, m)])
    m = "Mixed_6a"
    b3 = basic(x, m + ".branch3x3", 3, 3, 2)
    bd = basic(x, m + ".branch3x3dbl_1", 1, 1)
    bd = basic(bd, m + ".branch3x3dbl_2", 3, 3, 1, 1, 1)
    bd = basic(bd, m + ".branch3x3dbl_3", 3, 3, 2)
    x = concat([b3, bd, pool(x, 3, 2, 0, "max")])
    for m in ("Mixed_6b", "Mixed_6c", "Mixed_6d", "Mixed_6e"):
        b1 = basic(x, m + ".branch1x1", 1, 1)
        b7 = basic(x, m + ".branch7x7_1", 1, 1)
        b7 = column(row(b7, m + ".branch7x7_2", 7), m + ".branch7x7_3", 7)
        bd = basic(x, m + ".branch7x7dbl_1", 1, 1)
        bd = row(column(bd, m + ".branch7x7dbl_2", 7), m + ".branch7x7dbl_3", 7)
        bd = row(column(bd, m + ".branch7x7dbl_4", 7), m + ".branch7x7dbl_5", 7)
        x = concat([b1, b7, bd, pool_branch(x, m)])
    m = "Mixed_7a"
    b3 = basic(basic(x, m + ".branch3x3_1", 1, 1), m + ".branch3x3_2", 3, 3, 2)
    b7 = basic(x, m + ".branch7x7x3_1", 1, 1)
    b7 = column(row(b7, m + ".branch7x7x3_2", 7), m + ".branch7x7x3_3", 7)
    b7 = basic(b7, m + ".branch7x7x3_4", 3, 3, 2)
    x = concat([b3, b7, pool(x, 3, 2, 0, "max")])
    for m in ("Mixed_7b", "Mixed_7c"):
        b1 = basic(x, m + ".branch1x1", 1, 1)
        b3 = basic(x, m + ".branch3x3_1", 1, 1)
        b3 = concat([row(b3, m + ".branch3x3_2a", 3), column(b3, m + ".branch3x3_2b", 3)])
        bd = basic(x, m + ".branch3x3dbl_1", 1, 1)
        bd = basic(bd, m + ".branch3x3dbl_2", 3, 3, 1, 1, 1)
        bd = concat([row(bd, m + ".branch3x3dbl_3a", 3), column(bd, m + ".branch3x3dbl_3b", 3)])
        x = concat([b1, b3, bd, pool_branch(x, m)])
    return cross_entropy(linear(values, global_average(x), "fc"), tensor(values, "labels"))


TRANSFORMER = ["--batch", "2", "--seq", "4", "--vocab", "11", "--hidden", "8",
               "--layers", "2", "--heads", "2", "--max-pos", "6"]
RECURRENT = ["--batch", "2", "--seq", "3", "--vocab", "7", "--embed", "5",
             "--hidden", "4", "--layers", "2"]

# model: (soap-zoo options, exclusive upper bounds of the id inputs, reference)
# Batch norm over tiny batches (2 samples of 1x1 maps in the last stages)
# divides by standard deviations close to epsilon, which magnifies f32
# rounding: the CNNs with batch norm get a looser tolerance.
CASES = {
    "mlp": (["--batch", "3", "--input", "5", "--hidden", "6", "--layers", "2", "--classes", "4"],
            {"labels": 4}, lambda v: mlp(v, 2)),
    "alexnet": (["--batch", "2", "--image", "67", "--width", "4", "--hidden", "8", "--classes", "3"],
                {"labels": 3}, alexnet),
    "vgg16": (["--batch", "2", "--image", "32", "--width", "2", "--hidden", "8", "--classes", "3"],
              {"labels": 3}, vgg16),
    "resnet50": (["--batch", "2", "--image", "16", "--width", "2", "--classes", "3"],
                 {"labels": 3}, lambda v: resnet(v, True, (3, 4, 6, 3))),
    "resnet101": (["--batch", "2", "--image", "16", "--width", "2", "--classes", "3"],
                  {"labels": 3}, lambda v: resnet(v, True, (3, 4, 23, 3))),
    "resnet18": (["--batch", "2", "--image", "16", "--width", "2", "--classes", "3", "--depth", "18"],
                 {"labels": 3}, lambda v: resnet(v, False, (2, 2, 2, 2))),
    "inception_v3": (["--batch", "2", "--image", "75", "--width", "2", "--classes", "3"],
                     {"labels": 3}, inception_v3),
    "rnntc": (RECURRENT + ["--classes", "3"], {"tokens": 7, "labels": 3},
              lambda v: rnntc(v, 4, 2)),
    "rnnlm": (RECURRENT, {"tokens": 7, "labels": 7}, lambda v: rnnlm(v, 4, 2)),
    "nmt": (RECURRENT, {"source": 7, "target": 7, "labels": 7}, lambda v: nmt(v, 4, 2)),
    "bert-base": (TRANSFORMER + ["--classes", "3"], {"tokens": 11, "token_types": 2, "labels": 3},
                  lambda v: bert(v, 2, 4, 2, 2)),
    "gpt2": (TRANSFORMER, {"tokens": 11, "labels": 11}, lambda v: gpt2(v, 2, 4, 2, 2)),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zoo", required=True, help="the soap-zoo executable")
    parser.add_argument("--work", required=True, help="a folder for the generated files")
    parser.add_argument("models", nargs="+", choices=sorted(CASES))
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    failed = False
    for name in args.models:
        flags, id_ranges, reference = CASES[name]
        model = "resnet50" if name == "resnet18" else name
        computed, values = run_mlir(args.zoo, args.work, model, flags, id_ranges)
        expected = reference(values)
        tolerance = 1e-2 if name.startswith(("resnet", "inception")) else 1e-4
        ok = abs(computed - expected) <= tolerance * max(1.0, abs(expected))
        failed |= not ok
        print(f"{name}: {'ok' if ok else 'MISMATCH'} mlir {computed:.6g} reference {expected:.6g}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

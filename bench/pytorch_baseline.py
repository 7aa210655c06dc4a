#!/usr/bin/env python3
"""PyTorch eager baseline for bench/gpu.sh and bench/vs-pytorch.sh: the
training step of a zoo model (the same architecture and sizes as
`soap-zoo`, with the same options), timed on the GPU or on the CPU.

    python3 bench/pytorch_baseline.py resnet50 --batch 64 --math tf32
    python3 bench/pytorch_baseline.py bert-base --batch 64 --math f32
    python3 bench/pytorch_baseline.py gpt2 --device cpu --threads 1 \
        --hidden 128 --layers 2 --heads 4 --seq 64 --vocab 2000 --batch 4
    python3 bench/pytorch_baseline.py nmt --device cpu --threads 1 --ddp 2 \
        --vocab 2000 --embed 256 --hidden 256 --seq 10 --batch 16

Models (tools/soap-zoo): mlp, alexnet, vgg16, resnet50, resnet101,
inception_v3, rnnlm, nmt, bert-base, gpt2. Options are soap-zoo's, with
its defaults; an option the zoo model does not take is an error. And the
torchvision models of ../shared/realmodels/'s torch-mlir exports:
torchvision-resnet18, torchvision-squeezenet1_1,
torchvision-mobilenet_v3_small (--batch, --image, --classes; Debian's
python3-torchvision).

One step is forward, mean softmax cross-entropy, backward and a plain SGD
update, as `--soap-training-step` builds it (default optimizer sgd). Prints
one line: `model=... batch=... math=... median_ms=... mean_ms=...`, the
median and mean over --steps steps after --warmup steps, each step timed
with CUDA events around it (on the CPU: the wall clock). With --peak-rss it
also prints the process's peak resident memory (MiB).

--ddp N: N processes on this machine's CPU (gloo, tcp://127.0.0.1),
DistributedDataParallel, each with --batch / N samples (--batch stays the
global batch); a step's time is the slowest process's, the peak memory the
largest process's.

--params: prints `params=N`, the trainable parameters (a tied weight
counts once), and exits.

--soap-init CKPT --write-data FILE: the loss check of bench/vs-pytorch.sh.
Loads the parameters SOAP's executable saved (`X --steps 0 --save CKPT`:
SOAP's names and layouts, in the zoo's order: linear weights are
[in, out], an LSTM layer's one weight is [in + hidden, 4 * hidden] with one
bias, attention's query, key and value are separate), draws one batch,
writes it as a SOAP --data file, trains --check-steps steps (default 3) on
it, prints `first_loss=... last_loss=...` (the losses the first and the
last step computed) and exits. A torchvision twin takes the tensors of an
export's checkpoint by shape (load_by_shape); --data-names gives the
executable's names of its inputs and labels.

--math: f32 (no TF32 anywhere), tf32 (TF32 matmuls and convolutions), or
bf16 (autocast to bfloat16), matching soap-lower-gpu's math= option.
"""

import argparse
import functools
import os
import resource
import socket
import statistics
import struct
import sys
import time

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    sys.exit("error: PyTorch is not installed (pip install torch)")


# soap-zoo's options and their defaults (tools/soap-zoo/Zoo.cpp).
ZOO_OPTIONS = {
    "mlp": dict(batch=64, input=784, hidden=1024, layers=2, classes=10),
    "alexnet": dict(batch=64, image=224, classes=1000, width=64, hidden=4096),
    "vgg16": dict(batch=64, image=224, classes=1000, width=64, hidden=4096,
                  depth=16),
    "resnet50": dict(batch=64, image=224, classes=1000, width=64, depth=50),
    "resnet101": dict(batch=64, image=224, classes=1000, width=64, depth=101),
    "inception_v3": dict(batch=64, image=299, classes=1000, width=32),
    "rnnlm": dict(batch=64, seq=20, vocab=10000, embed=2048, hidden=2048,
                  layers=2),
    "nmt": dict(batch=64, seq=20, vocab=20480, embed=2048, hidden=2048,
                layers=2),
    "bert-base": dict(batch=32, seq=128, vocab=30522, hidden=768, layers=12,
                      heads=12, max_pos=512, types=2, classes=2),
    "gpt2": dict(batch=8, seq=1024, vocab=50257, hidden=768, layers=12,
                 heads=12, max_pos=1024),
}

# Twins of the torchvision models that ../shared/realmodels/ holds as
# torch-mlir exports (torchvision, Debian's python3-torchvision): the
# architecture the exporter traced, with SOAP's `--soap-set-batch` batch.
# Dropout is off (the exports were traced in evaluation form, which has
# none); batch norm trains with the batch's statistics, as
# `--soap-lift-params` (batch-norm=train) makes the export do.
TORCHVISION = {"torchvision-" + arch: arch
               for arch in ("resnet18", "squeezenet1_1",
                            "mobilenet_v3_small")}
for _name in TORCHVISION:
    ZOO_OPTIONS[_name] = dict(batch=4, image=224, classes=1000)


def gelu_tanh(x):
    """The zoo's GELU: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    return F.gelu(x, approximate="tanh")


class Mlp(nn.Module):
    """soap-zoo mlp: `layers` linear + ReLU layers and a linear classifier."""

    def __init__(self, input, hidden, layers, classes):
        super().__init__()
        widths = [input] + [hidden] * layers
        self.hidden = nn.ModuleList(
            nn.Linear(a, b) for a, b in zip(widths, widths[1:]))
        self.classifier = nn.Linear(widths[-1], classes)

    def forward(self, x):
        for layer in self.hidden:
            x = F.relu(layer(x))
        return self.classifier(x)


def flat_features(features, image):
    """The width of `features`' output on one image, flattened."""
    with torch.no_grad():
        return features(torch.zeros(1, 3, image, image)).numel()


class AlexNet(nn.Module):
    """soap-zoo alexnet (torchvision's layout, channels scaled by
    width / 64): no dropout and no adaptive pool, fc6 reads the last feature
    map as it is."""

    def __init__(self, image, classes, width, hidden):
        super().__init__()

        def ch(c):
            return max(1, c * width // 64)

        self.features = nn.Sequential(
            nn.Conv2d(3, ch(64), 11, 4, 2), nn.ReLU(), nn.MaxPool2d(3, 2),
            nn.Conv2d(ch(64), ch(192), 5, 1, 2), nn.ReLU(), nn.MaxPool2d(3, 2),
            nn.Conv2d(ch(192), ch(384), 3, 1, 1), nn.ReLU(),
            nn.Conv2d(ch(384), ch(256), 3, 1, 1), nn.ReLU(),
            nn.Conv2d(ch(256), ch(256), 3, 1, 1), nn.ReLU(),
            nn.MaxPool2d(3, 2))
        self.classifier = nn.Sequential(
            nn.Linear(flat_features(self.features, image), hidden), nn.ReLU(),
            nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, classes))

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


VGG_STAGES = {11: (1, 1, 2, 2, 2), 13: (2, 2, 2, 2, 2), 16: (2, 2, 3, 3, 3),
              19: (2, 2, 4, 4, 4)}


class Vgg(nn.Module):
    """soap-zoo vgg16 (no batch norm, channels scaled by width / 64): 3x3
    pad-1 convolutions + ReLU, a 2x2 max pool per stage, fc6, fc7 + ReLU,
    fc8; no dropout, fc6 reads the last feature map as it is."""

    def __init__(self, image, classes, width, hidden, depth):
        super().__init__()
        layers, inputs = [], 3
        for stage, convs in enumerate(VGG_STAGES[depth]):
            channels = max(1, (64, 128, 256, 512, 512)[stage] * width // 64)
            for _ in range(convs):
                layers += [nn.Conv2d(inputs, channels, 3, 1, 1), nn.ReLU()]
                inputs = channels
            layers.append(nn.MaxPool2d(2, 2))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(
            nn.Linear(flat_features(self.features, image), hidden), nn.ReLU(),
            nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, classes))

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


class Bottleneck(nn.Module):
    """ResNet v1.5 bottleneck: the stride is on the 3x3 convolution."""

    expansion = 4

    def __init__(self, inplanes, planes, stride):
        super().__init__()
        width = planes
        self.conv1 = nn.Conv2d(inplanes, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, planes * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.down = None
        if stride != 1 or inplanes != planes * 4:
            self.down = nn.Sequential(
                nn.Conv2d(inplanes, planes * 4, 1, stride, bias=False),
                nn.BatchNorm2d(planes * 4))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        identity = x if self.down is None else self.down(x)
        return F.relu(out + identity)


class BasicBlock(nn.Module):
    """ResNet-18/34 block: two 3x3 convolutions, the stride on the first."""

    expansion = 1

    def __init__(self, inplanes, planes, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.down = None
        if stride != 1 or inplanes != planes:
            self.down = nn.Sequential(
                nn.Conv2d(inplanes, planes, 1, stride, bias=False),
                nn.BatchNorm2d(planes))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        identity = x if self.down is None else self.down(x)
        return F.relu(out + identity)


# soap-zoo's depths (tools/soap-zoo/ResNet.cpp): block kind and counts.
RESNET_DEPTHS = {18: (BasicBlock, (2, 2, 2, 2)), 34: (BasicBlock, (3, 4, 6, 3)),
                 50: (Bottleneck, (3, 4, 6, 3)),
                 101: (Bottleneck, (3, 4, 23, 3)),
                 152: (Bottleneck, (3, 8, 36, 3))}


class ResNet50(nn.Module):
    def __init__(self, classes=1000, width=64, depth=50):
        super().__init__()
        block, counts = RESNET_DEPTHS[depth]
        self.stem = nn.Sequential(
            nn.Conv2d(3, width, 7, 2, 3, bias=False), nn.BatchNorm2d(width),
            nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        layers, inplanes = [], width
        for stage, blocks in enumerate(counts):
            planes, stride = width << stage, (1 if stage == 0 else 2)
            for b in range(blocks):
                layers.append(block(inplanes, planes,
                                    stride if b == 0 else 1))
                inplanes = planes * block.expansion
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(inplanes, classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class BasicConv2d(nn.Module):
    """Inception's convolution without bias + batch norm (eps 1e-3) + ReLU."""

    def __init__(self, inputs, outputs, kernel, stride=1, padding=0):
        super().__init__()
        self.conv = nn.Conv2d(inputs, outputs, kernel, stride, padding,
                              bias=False)
        self.bn = nn.BatchNorm2d(outputs, eps=1e-3)
        self.outputs = outputs

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


class InceptionV3(nn.Module):
    """soap-zoo inception_v3: torchvision's Inception-v3 without the
    auxiliary classifier and dropout, channels scaled by width / 32. The
    modules are registered in the zoo's parameter order."""

    def __init__(self, classes, width):
        super().__init__()
        self.width = width
        c = self.c
        conv = BasicConv2d
        self.stem = nn.ModuleList([
            conv(3, c(32), 3, 2), conv(c(32), c(32), 3),
            conv(c(32), c(64), 3, 1, 1), conv(c(64), c(80), 1),
            conv(c(80), c(192), 3)])
        self.layers = nn.ModuleList()
        self.kinds = []
        channels = c(192)
        for pool in (32, 64, 64):
            channels = self.add("A", channels, pool)
        channels = self.add("B", channels)
        for c7 in (128, 160, 160, 192):
            channels = self.add("C", channels, c7)
        channels = self.add("D", channels)
        for _ in range(2):
            channels = self.add("E", channels)
        self.fc = nn.Linear(channels, classes)

    def c(self, channels):
        return max(1, channels * self.width // 32)

    def add(self, kind, x, arg=None):
        """Appends a module of `kind` on `x` input channels; returns its
        output channels."""
        c, conv = self.c, BasicConv2d
        m = nn.ModuleDict()
        if kind == "A":
            m["b1"] = conv(x, c(64), 1)
            m["b5_1"] = conv(x, c(48), 1)
            m["b5_2"] = conv(c(48), c(64), 5, 1, 2)
            m["b3_1"] = conv(x, c(64), 1)
            m["b3_2"] = conv(c(64), c(96), 3, 1, 1)
            m["b3_3"] = conv(c(96), c(96), 3, 1, 1)
            m["pool"] = conv(x, c(arg), 1)
            out = c(64) + c(64) + c(96) + c(arg)
        elif kind == "B":
            m["b3"] = conv(x, c(384), 3, 2)
            m["bd_1"] = conv(x, c(64), 1)
            m["bd_2"] = conv(c(64), c(96), 3, 1, 1)
            m["bd_3"] = conv(c(96), c(96), 3, 2)
            out = c(384) + c(96) + x
        elif kind == "C":
            c7 = c(arg)
            m["b1"] = conv(x, c(192), 1)
            m["b7_1"] = conv(x, c7, 1)
            m["b7_2"] = conv(c7, c7, (1, 7), 1, (0, 3))
            m["b7_3"] = conv(c7, c(192), (7, 1), 1, (3, 0))
            m["bd_1"] = conv(x, c7, 1)
            m["bd_2"] = conv(c7, c7, (7, 1), 1, (3, 0))
            m["bd_3"] = conv(c7, c7, (1, 7), 1, (0, 3))
            m["bd_4"] = conv(c7, c7, (7, 1), 1, (3, 0))
            m["bd_5"] = conv(c7, c(192), (1, 7), 1, (0, 3))
            m["pool"] = conv(x, c(192), 1)
            out = 4 * c(192)
        elif kind == "D":
            m["b3_1"] = conv(x, c(192), 1)
            m["b3_2"] = conv(c(192), c(320), 3, 2)
            m["b7_1"] = conv(x, c(192), 1)
            m["b7_2"] = conv(c(192), c(192), (1, 7), 1, (0, 3))
            m["b7_3"] = conv(c(192), c(192), (7, 1), 1, (3, 0))
            m["b7_4"] = conv(c(192), c(192), 3, 2)
            out = c(320) + c(192) + x
        else:
            m["b1"] = conv(x, c(320), 1)
            m["b3_1"] = conv(x, c(384), 1)
            m["b3_2a"] = conv(c(384), c(384), (1, 3), 1, (0, 1))
            m["b3_2b"] = conv(c(384), c(384), (3, 1), 1, (1, 0))
            m["bd_1"] = conv(x, c(448), 1)
            m["bd_2"] = conv(c(448), c(384), 3, 1, 1)
            m["bd_3a"] = conv(c(384), c(384), (1, 3), 1, (0, 1))
            m["bd_3b"] = conv(c(384), c(384), (3, 1), 1, (1, 0))
            m["pool"] = conv(x, c(192), 1)
            out = c(320) + 4 * c(384) + c(192)
        self.layers.append(m)
        self.kinds.append(kind)
        return out

    @staticmethod
    def avg_pool(x):
        # Padding counts in the divisor, as in the zoo and torchvision.
        return F.avg_pool2d(x, 3, 1, 1, count_include_pad=True)

    def forward(self, x):
        s = self.stem
        x = s[2](s[1](s[0](x)))
        x = F.max_pool2d(x, 3, 2)
        x = F.max_pool2d(s[4](s[3](x)), 3, 2)
        for kind, m in zip(self.kinds, self.layers):
            if kind == "A":
                x = torch.cat([
                    m["b1"](x), m["b5_2"](m["b5_1"](x)),
                    m["b3_3"](m["b3_2"](m["b3_1"](x))),
                    m["pool"](self.avg_pool(x))], 1)
            elif kind == "B":
                x = torch.cat([
                    m["b3"](x), m["bd_3"](m["bd_2"](m["bd_1"](x))),
                    F.max_pool2d(x, 3, 2)], 1)
            elif kind == "C":
                b7 = m["b7_3"](m["b7_2"](m["b7_1"](x)))
                bd = m["bd_5"](m["bd_4"](m["bd_3"](m["bd_2"](m["bd_1"](x)))))
                x = torch.cat([m["b1"](x), b7, bd,
                               m["pool"](self.avg_pool(x))], 1)
            elif kind == "D":
                x = torch.cat([
                    m["b3_2"](m["b3_1"](x)),
                    m["b7_4"](m["b7_3"](m["b7_2"](m["b7_1"](x)))),
                    F.max_pool2d(x, 3, 2)], 1)
            else:
                b3 = m["b3_1"](x)
                bd = m["bd_2"](m["bd_1"](x))
                x = torch.cat([
                    m["b1"](x), m["b3_2a"](b3), m["b3_2b"](b3),
                    m["bd_3a"](bd), m["bd_3b"](bd),
                    m["pool"](self.avg_pool(x))], 1)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class Bert(nn.Module):
    """BERT-base encoder (post-norm), pooler and sequence classifier."""

    def __init__(self, vocab=30522, hidden=768, layers=12, heads=12,
                 max_pos=512, types=2, classes=2):
        super().__init__()
        self.word = nn.Embedding(vocab, hidden)
        self.position = nn.Embedding(max_pos, hidden)
        self.token_type = nn.Embedding(types, hidden)
        self.norm = nn.LayerNorm(hidden, eps=1e-12)
        layer = nn.TransformerEncoderLayer(
            hidden, heads, 4 * hidden, dropout=0.0, activation=gelu_tanh,
            batch_first=True, norm_first=False, layer_norm_eps=1e-12)
        self.encoder = nn.TransformerEncoder(layer, layers,
                                             enable_nested_tensor=False)
        self.pooler = nn.Linear(hidden, hidden)
        self.classifier = nn.Linear(hidden, classes)

    def forward(self, ids, types):
        positions = torch.arange(ids.shape[1], device=ids.device)
        x = self.word(ids) + self.position(positions)[None] + \
            self.token_type(types)
        x = self.encoder(self.norm(x))
        return self.classifier(torch.tanh(self.pooler(x[:, 0])))


class Gpt2(nn.Module):
    """soap-zoo gpt2: pre-norm causal decoder layers (separate query, key
    and value projections in the zoo, one in_proj here: the same
    parameters), a final layer norm and the output projection tied to the
    token embedding (no bias)."""

    def __init__(self, vocab, hidden, layers, heads, max_pos):
        super().__init__()
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(max_pos, hidden)
        self.h = nn.ModuleList(
            nn.TransformerEncoderLayer(
                hidden, heads, 4 * hidden, dropout=0.0, activation=gelu_tanh,
                batch_first=True, norm_first=True, layer_norm_eps=1e-5)
            for _ in range(layers))
        self.ln_f = nn.LayerNorm(hidden, eps=1e-5)
        # GPT-2's initialisation of the tables (PyTorch's N(0, 1) would give
        # logits of a standard deviation of sqrt(hidden) through the tied
        # projection).
        nn.init.normal_(self.wte.weight, std=0.02)
        nn.init.normal_(self.wpe.weight, std=0.02)

    def forward(self, ids):
        seq = ids.shape[1]
        positions = torch.arange(seq, device=ids.device)
        x = self.wte(ids) + self.wpe(positions)[None]
        mask = torch.full((seq, seq), float("-inf"),
                          device=ids.device).triu(1)
        for layer in self.h:
            x = layer(x, src_mask=mask)
        x = self.ln_f(x)
        return (x @ self.wte.weight.t()).reshape(-1, self.wte.num_embeddings)


def zoo_lstm(input, hidden, layers):
    """nn.LSTM with the zoo's parameters: the zoo's LSTM layer has one bias
    (PyTorch's two are summed), so bias_hh stays at zero, untrained."""
    lstm = nn.LSTM(input, hidden, layers, batch_first=True)
    for layer in range(layers):
        bias = getattr(lstm, f"bias_hh_l{layer}")
        with torch.no_grad():
            bias.zero_()
        bias.requires_grad_(False)
    return lstm


class RnnLm(nn.Module):
    """soap-zoo rnnlm: embedding, stacked LSTMs (PyTorch's gate order), a
    linear layer over the vocabulary at every step."""

    def __init__(self, vocab, embed, hidden, layers):
        super().__init__()
        self.embedding = nn.Embedding(vocab, embed)
        self.lstm = zoo_lstm(embed, hidden, layers)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, ids):
        x, _ = self.lstm(self.embedding(ids))
        return self.out(x).reshape(-1, self.out.out_features)


class Nmt(nn.Module):
    """soap-zoo nmt: an LSTM encoder; an LSTM decoder fed the target tokens
    (teacher forcing), started from the encoder's final states; Luong "dot"
    attention over the encoder states, tanh(W_c [context; h]) without bias,
    and a linear layer over the vocabulary at every target step."""

    def __init__(self, vocab, embed, hidden, layers):
        super().__init__()
        self.encoder_embedding = nn.Embedding(vocab, embed)
        self.encoder = zoo_lstm(embed, hidden, layers)
        self.decoder_embedding = nn.Embedding(vocab, embed)
        self.decoder = zoo_lstm(embed, hidden, layers)
        self.combine = nn.Linear(2 * hidden, hidden, bias=False)
        self.generator = nn.Linear(hidden, vocab)

    def forward(self, source, target):
        encoded, state = self.encoder(self.encoder_embedding(source))
        decoded, _ = self.decoder(self.decoder_embedding(target), state)
        weights = torch.softmax(decoded @ encoded.transpose(1, 2), -1)
        joined = torch.cat([weights @ encoded, decoded], 2)
        combined = torch.tanh(self.combine(joined.reshape(-1, joined.shape[2])))
        return self.generator(combined)


# The twins of zoo models, whose parameters SOAP saves in the zoo's order
# and layouts (soap_slots); other models are loaded by shape.
ZOO_TWINS = (Mlp, AlexNet, Vgg, ResNet50, InceptionV3, Bert, Gpt2, RnnLm,
             Nmt)


def build(name, o, batch, device, generator=None):
    """The twin of zoo model `name` with options `o`, and a batch of
    `batch` samples: (model, [(input name, tensor)], (label name, tensor)),
    named as the zoo's inputs."""

    def randint(high, shape):
        return torch.randint(0, high, shape, generator=generator).to(device)

    def images():
        return [("images", torch.randn(batch, 3, o["image"], o["image"],
                                       generator=generator).to(device))]

    if name in TORCHVISION:
        try:
            import torchvision
        except ImportError:
            sys.exit("error: torchvision is not installed "
                     "(Debian: python3-torchvision)")
        model = getattr(torchvision.models, TORCHVISION[name])(
            num_classes=o["classes"])
        for m in model.modules():
            if isinstance(m, nn.Dropout):
                m.p = 0.0
        inputs, labels = images(), randint(o["classes"], (batch,))
    elif name == "mlp":
        model = Mlp(o["input"], o["hidden"], o["layers"], o["classes"])
        inputs = [("input", torch.randn(batch, o["input"],
                                        generator=generator).to(device))]
        labels = randint(o["classes"], (batch,))
    elif name == "alexnet":
        model = AlexNet(o["image"], o["classes"], o["width"], o["hidden"])
        inputs, labels = images(), randint(o["classes"], (batch,))
    elif name == "vgg16":
        model = Vgg(o["image"], o["classes"], o["width"], o["hidden"],
                    o["depth"])
        inputs, labels = images(), randint(o["classes"], (batch,))
    elif name in ("resnet50", "resnet101"):
        model = ResNet50(o["classes"], o["width"], o["depth"])
        inputs, labels = images(), randint(o["classes"], (batch,))
    elif name == "inception_v3":
        model = InceptionV3(o["classes"], o["width"])
        inputs, labels = images(), randint(o["classes"], (batch,))
    elif name == "bert-base":
        model = Bert(o["vocab"], o["hidden"], o["layers"], o["heads"],
                     o["max_pos"], o["types"], o["classes"])
        inputs = [("tokens", randint(o["vocab"], (batch, o["seq"]))),
                  ("token_types", randint(o["types"], (batch, o["seq"])))]
        labels = randint(o["classes"], (batch,))
    elif name == "gpt2":
        model = Gpt2(o["vocab"], o["hidden"], o["layers"], o["heads"],
                     o["max_pos"])
        inputs = [("tokens", randint(o["vocab"], (batch, o["seq"])))]
        labels = randint(o["vocab"], (batch, o["seq"]))
    elif name == "rnnlm":
        model = RnnLm(o["vocab"], o["embed"], o["hidden"], o["layers"])
        inputs = [("tokens", randint(o["vocab"], (batch, o["seq"])))]
        labels = randint(o["vocab"], (batch, o["seq"]))
    elif name == "nmt":
        model = Nmt(o["vocab"], o["embed"], o["hidden"], o["layers"])
        inputs = [("source", randint(o["vocab"], (batch, o["seq"]))),
                  ("target", randint(o["vocab"], (batch, o["seq"])))]
        labels = randint(o["vocab"], (batch, o["seq"]))
    else:
        raise ValueError(name)
    return model.to(device), inputs, ("labels", labels)


def count_parameters(model):
    """Trainable parameters; parameters() yields a tied weight once."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


#
# SOAP checkpoints (runtime/Checkpoint.h) and the zoo's parameter order.
#

CKPT_DTYPES = {"f32": torch.float32, "f64": torch.float64,
               "i64": torch.int64, "i32": torch.int32}


def read_checkpoint(path):
    """[(name, tensor)] of a SOAP checkpoint, in the file's order."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"SOAPCKPT":
        sys.exit(f"error: {path} is not a SOAP checkpoint")
    _, count, _ = struct.unpack_from("<IIQ", data, 8)
    at, tensors = 24, []

    def take(n):
        nonlocal at
        at += n
        return data[at - n:at]

    for _ in range(count):
        name = take(struct.unpack("<I", take(4))[0]).decode()
        dtype = take(struct.unpack("<I", take(4))[0]).decode()
        rank = struct.unpack("<I", take(4))[0]
        shape = struct.unpack(f"<{rank}q", take(8 * rank))
        raw = take(struct.unpack("<Q", take(8))[0])
        t = torch.frombuffer(bytearray(raw), dtype=CKPT_DTYPES[dtype])
        tensors.append((name, t.reshape(shape)))
    return tensors


def write_checkpoint(path, tensors):
    """A SOAP checkpoint (or --data file) of [(name, tensor)]."""
    names = {v: k for k, v in CKPT_DTYPES.items()}
    out = [b"SOAPCKPT", struct.pack("<IIQ", 1, len(tensors), 0)]
    for name, t in tensors:
        t = t.detach().cpu().contiguous()
        dtype = names[t.dtype].encode()
        raw = t.numpy().tobytes()
        out += [struct.pack("<I", len(name)), name.encode(),
                struct.pack("<I", len(dtype)), dtype,
                struct.pack("<I", t.dim()),
                struct.pack(f"<{t.dim()}q", *t.shape),
                struct.pack("<Q", len(raw)), raw]
    with open(path, "wb") as f:
        f.write(b"".join(out))


def copy_into(dst, src, what):
    if tuple(dst.shape) != tuple(src.shape):
        raise ValueError(f"{what}: SOAP's tensor gives {tuple(src.shape)}, "
                         f"the PyTorch twin has {tuple(dst.shape)}")
    with torch.no_grad():
        dst.copy_(src)


def soap_slots(module):
    """One function per zoo parameter, in the zoo's argument order, that
    copies SOAP's tensor (the zoo's layout) into this twin's parameters."""
    slots = []

    def direct(p, transform=lambda t: t):
        p = p.data  # (a slice of) the parameter, outside autograd
        slots.append(lambda t, what: copy_into(p, transform(t), what))

    def linear(m):
        direct(m.weight, lambda t: t.t())  # the zoo's [in, out]
        if m.bias is not None:
            direct(m.bias)

    def attention(m):  # the zoo's query, key, value, then the output
        h = m.embed_dim
        for i in range(3):
            direct(m.in_proj_weight.data[i * h:(i + 1) * h],
                   lambda t: t.t())
            direct(m.in_proj_bias.data[i * h:(i + 1) * h])
        linear(m.out_proj)

    def lstm(m):
        for layer in range(m.num_layers):
            w_ih = getattr(m, f"weight_ih_l{layer}")
            w_hh = getattr(m, f"weight_hh_l{layer}")
            inputs = w_ih.shape[1]

            def weight(t, what, w_ih=w_ih, w_hh=w_hh, inputs=inputs):
                # The zoo's [in + hidden, 4 * hidden], gates i, f, g, o.
                copy_into(w_ih.data, t[:inputs].t(), what)
                copy_into(w_hh.data, t[inputs:].t(), what)

            slots.append(weight)
            direct(getattr(m, f"bias_ih_l{layer}"))
            with torch.no_grad():
                getattr(m, f"bias_hh_l{layer}").zero_()

    def walk(m):
        if isinstance(m, nn.Linear):
            linear(m)
        elif isinstance(m, nn.LSTM):
            lstm(m)
        elif isinstance(m, nn.TransformerEncoderLayer):
            ff = [m.linear1, m.linear2]
            if m.norm_first:  # GPT-2: ln_1, attn, ln_2, mlp
                order = [m.norm1, m.self_attn, m.norm2] + ff
            else:  # BERT: attention, its LayerNorm, feed-forward, LayerNorm
                order = [m.self_attn, m.norm1] + ff + [m.norm2]
            for part in order:
                walk(part)
        elif isinstance(m, nn.MultiheadAttention):
            attention(m)
        else:
            for p in m.parameters(recurse=False):
                direct(p)
            for child in m.children():
                walk(child)

    walk(module)
    return slots


def execution_order(model, inputs):
    """The model's parameters in the order its forward pass first uses
    them, each with the module that owns it (forward hooks on the modules
    that own parameters directly)."""
    order, hooks = [], []
    for m in model.modules():
        own = list(m.parameters(recurse=False))
        if own:
            hooks.append(m.register_forward_pre_hook(
                lambda m, _x, own=own: order.extend(
                    (p, m) for p in own
                    if all(p is not q for q, _ in order))))
    with torch.no_grad():
        model(*inputs)
    for h in hooks:
        h.remove()
    return order


def is_constant(t):
    flat = t.detach().reshape(-1)
    return flat.numel() > 0 and bool((flat == flat[0]).all())


def load_by_shape(model, inputs, tensors, path):
    """Loads SOAP's tensors into a twin of an exported model, whose
    parameters SOAP names by position only (param.N). A torch-mlir export
    lists its weights in reverse order of use (the backward pass's order,
    which --soap-lift-params keeps): each parameter, from the last used to
    the first, takes the first unused tensor of its shape (or, for a
    matrix, of its transposed shape). The export groups tensors of one
    shape by value (a width's batch-norm gammas, then its betas), so a
    batch norm's weight and bias prefer a tensor holding their own
    constant (1 and 0, how both sides start them), and any other parameter
    (a convolution's bias, which SOAP may start from its seed where
    torchvision starts it from zeros) prefers a tensor that is not one
    constant. A wrong guess shows as a different first loss."""
    left = list(tensors)
    order = execution_order(model, [t for _, t in inputs])
    for p, owner in reversed(order):
        shape = tuple(p.shape)
        fits = [i for i, (_, t) in enumerate(left)
                if tuple(t.shape) == shape or
                (t.dim() == 2 and tuple(t.shape) == shape[::-1])]
        if not fits:
            sys.exit(f"error: {path}: no tensor of shape {list(shape)} is "
                     f"left for the twin's parameter")
        if isinstance(owner, nn.modules.batchnorm._BatchNorm) and \
                is_constant(p):
            value = p.detach().reshape(-1)[0]
            preferred = [i for i in fits
                         if bool((left[i][1] == value).all())]
        else:
            preferred = [i for i in fits if not is_constant(left[i][1])]
        name, t = left.pop((preferred or fits)[0])
        copy_into(p.data, t if tuple(t.shape) == shape else t.t(), name)
    if left:
        sys.exit(f"error: {path} holds {len(left)} f32 tensors the twin "
                 f"has no parameters for")


def load_soap_parameters(model, path, inputs):
    tensors = [(n, t) for n, t in read_checkpoint(path)
               if t.dtype == torch.float32]
    if not isinstance(model, ZOO_TWINS):
        load_by_shape(model, inputs, tensors, path)
        return
    slots = soap_slots(model)
    if len(slots) != len(tensors):
        sys.exit(f"error: {path} holds {len(tensors)} f32 tensors, the "
                 f"PyTorch twin takes {len(slots)} in the zoo's order")
    for slot, (name, t) in zip(slots, tensors):
        try:
            slot(t, name)
        except ValueError as e:
            sys.exit(f"error: {path}: {e}")


#
# Training steps
#


def make_step(model, inputs, labels, optimizer, device, bf16):
    tensors = [t for _, t in inputs]
    flat_labels = labels[1].reshape(-1)

    def step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device, dtype=torch.bfloat16, enabled=bf16):
            loss = F.cross_entropy(model(*tensors), flat_labels)
        loss.backward()
        optimizer.step()
        return loss

    return step


def peak_rss_mib():
    # ru_maxrss is in KiB on Linux.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def ddp_worker(rank, world, port, args, options, queue):
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}",
                            rank=rank, world_size=world)
    torch.manual_seed(0)  # the same initial model everywhere
    generator = torch.Generator().manual_seed(1 + rank)  # each its samples
    model, inputs, labels = build(args.model, options, args.batch // world,
                                  "cpu", generator)
    model.train()
    # No buffer broadcasts: the zoo's batch norm keeps no running
    # statistics, and each process normalises its own samples.
    ddp = DistributedDataParallel(model, broadcast_buffers=False)
    optimizer = torch.optim.SGD(
        [p for p in ddp.parameters() if p.requires_grad], lr=args.lr)
    step = make_step(ddp, inputs, labels, optimizer, "cpu", False)
    for _ in range(args.warmup):
        step()
    dist.barrier()
    times = []
    for _ in range(args.steps):
        start = time.perf_counter()
        loss = step()
        times.append((time.perf_counter() - start) * 1e3)
    # A step takes as long as its slowest process; the loss is the mean of
    # the processes' (equal batches).
    stats = torch.tensor(times + [peak_rss_mib()], dtype=torch.float64)
    dist.all_reduce(stats, op=dist.ReduceOp.MAX)
    mean_loss = loss.detach().clone()
    dist.all_reduce(mean_loss)
    if rank == 0:
        queue.put((stats[:-1].tolist(), stats[-1].item(),
                   mean_loss.item() / world))
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ddp(args, options):
    import torch.multiprocessing as mp

    world = args.ddp
    if args.batch % world:
        sys.exit(f"error: --batch {args.batch} does not split into "
                 f"{world} processes")
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    mp.spawn(ddp_worker, args=(world, free_port(), args, options, queue),
             nprocs=world, join=True)
    times, peak, loss = queue.get()
    line = (f"model={args.model} batch={args.batch} processes={world} "
            f"median_ms={statistics.median(times):.3f} "
            f"mean_ms={statistics.fmean(times):.3f} final_loss={loss:.6f}")
    if args.peak_rss:
        line += f" peak_rss_mib={peak:.1f}"
    print(line)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model", choices=sorted(ZOO_OPTIONS))
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--threads", type=int, default=0,
                        help="CPU threads (0: PyTorch's default)")
    # The zoo's options (defaults: the zoo's for the model).
    for option in ("batch", "image", "classes", "width", "hidden", "depth",
                   "input", "layers", "seq", "vocab", "embed", "heads",
                   "max-pos", "types"):
        parser.add_argument("--" + option, type=int)
    parser.add_argument("--classes-resnet", type=int,
                        help="the same as --classes (older name)")
    parser.add_argument("--peak-rss", action="store_true")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--math", choices=["f32", "tf32", "bf16"],
                        default="f32")
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--ddp", type=int, default=0, metavar="N",
                        help="N processes with DistributedDataParallel "
                        "(gloo, CPU), --batch / N samples each")
    parser.add_argument("--params", action="store_true",
                        help="print the trainable parameter count and exit")
    parser.add_argument("--soap-init", metavar="CKPT",
                        help="start from SOAP's saved parameters")
    parser.add_argument("--write-data", metavar="FILE",
                        help="with --soap-init: write the batch as a SOAP "
                        "--data file, print the first step's loss, exit")
    parser.add_argument("--data-names", metavar="A,B,...",
                        help="with --write-data: the executable's names "
                        "of the inputs and the labels (default: the zoo's)")
    parser.add_argument("--check-steps", type=int, default=3, metavar="N",
                        help="with --write-data: N steps on the batch; also "
                        "print the last one's loss (last_loss)")
    args = parser.parse_args()
    if args.classes_resnet is not None:
        args.classes = args.classes_resnet
    options = dict(ZOO_OPTIONS[args.model])
    for key in ("batch", "image", "classes", "width", "hidden", "depth",
                "input", "layers", "seq", "vocab", "embed", "heads",
                "max_pos", "types"):
        value = getattr(args, key)
        if value is None:
            continue
        if key not in options:
            parser.error(f"{args.model} takes no --{key.replace('_', '-')} "
                         f"(soap-zoo {args.model} --help)")
        options[key] = value
    args.batch = options["batch"]
    if args.model == "vgg16" and options["depth"] not in VGG_STAGES:
        parser.error("--depth must be 11, 13, 16 or 19")
    if args.model.startswith("resnet") and \
            options["depth"] not in RESNET_DEPTHS:
        parser.error("--depth must be 18, 34, 50, 101 or 152")

    cuda = args.device == "cuda"
    if args.ddp or args.params or args.write_data:
        cuda = False
        args.device = "cpu"
    if args.ddp:
        if args.soap_init or args.math != "f32":
            parser.error("--ddp runs f32 on the CPU, from PyTorch's "
                         "initial parameters")
        run_ddp(args, options)
        return
    if cuda and not torch.cuda.is_available():
        sys.exit("error: no CUDA device is usable by PyTorch")
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    device = torch.device(args.device)
    tf32 = args.math == "tf32"
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        torch.backends.cudnn.benchmark = True

    model, inputs, labels = build(args.model, options, args.batch, device)
    if args.params:
        print(f"params={count_parameters(model)}")
        return
    if args.soap_init:
        load_soap_parameters(model, args.soap_init, inputs)
    model.train()
    optimizer = torch.optim.SGD(
        [p for p in model.parameters() if p.requires_grad], lr=args.lr)
    step = make_step(model, inputs, labels, optimizer, args.device,
                     args.math == "bf16")
    if args.write_data:
        if not args.soap_init:
            parser.error("--write-data needs --soap-init")
        data = inputs + [labels]
        if args.data_names:
            names = args.data_names.split(",")
            if len(names) != len(data):
                parser.error(f"--data-names: {len(data)} names needed")
            data = [(n, t) for n, (_, t) in zip(names, data)]
        write_checkpoint(args.write_data, data)
        losses = [step().item() for _ in range(max(1, args.check_steps))]
        print(f"first_loss={losses[0]:.9g} last_loss={losses[-1]:.9g}")
        return

    for _ in range(args.warmup):
        step()
    times = []
    if cuda:
        torch.cuda.synchronize()
        for _ in range(args.steps):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            loss = step()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
    else:
        for _ in range(args.steps):
            start = time.perf_counter()
            loss = step()
            times.append((time.perf_counter() - start) * 1e3)
    line = (f"model={args.model} batch={args.batch} math={args.math} "
            f"median_ms={statistics.median(times):.3f} "
            f"mean_ms={statistics.fmean(times):.3f} "
            f"final_loss={loss.item():.6f}")
    if args.peak_rss:
        line += f" peak_rss_mib={peak_rss_mib():.1f}"
    print(line)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""PyTorch eager baseline for bench/gpu.sh and bench/vs-pytorch.sh: the
training step of a zoo model (the same architecture and sizes as
`soap-zoo`), timed on the GPU or on the CPU.

    python3 bench/pytorch_baseline.py resnet50 --batch 64 --math tf32
    python3 bench/pytorch_baseline.py bert-base --batch 64 --math f32
    python3 bench/pytorch_baseline.py bert-base --device cpu --threads 1 \
        --hidden 256 --layers 2 --heads 4 --seq 64 --batch 8
    python3 bench/pytorch_baseline.py rnnlm --device cpu --threads 1 \
        --vocab 2000 --embed 256 --hidden 256 --seq 10 --batch 16

One step is forward, mean softmax cross-entropy, backward and a plain SGD
update, as `--soap-training-step` builds it (default optimizer sgd). Prints
one line: `model=... batch=... math=... median_ms=... mean_ms=...`, the
median and mean over --steps steps after --warmup steps, each step timed
with CUDA events around it (on the CPU: the wall clock). With --peak-rss it
also prints the process's peak resident memory (MiB).

--math: f32 (no TF32 anywhere), tf32 (TF32 matmuls and convolutions), or
bf16 (autocast to bfloat16), matching soap-lower-gpu's math= option.
"""

import argparse
import resource
import statistics
import sys
import time

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    sys.exit("error: PyTorch is not installed (pip install torch)")


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
            hidden, heads, 4 * hidden, dropout=0.0, activation="gelu",
            batch_first=True, norm_first=False, layer_norm_eps=1e-12)
        self.encoder = nn.TransformerEncoder(layer, layers,
                                             enable_nested_tensor=False)
        self.pooler = nn.Linear(hidden, hidden)
        self.classifier = nn.Linear(hidden, classes)

    def forward(self, ids):
        positions = torch.arange(ids.shape[1], device=ids.device)
        x = self.word(ids) + self.position(positions)[None] + \
            self.token_type(torch.zeros_like(ids))
        x = self.encoder(self.norm(x))
        return self.classifier(torch.tanh(self.pooler(x[:, 0])))


class RnnLm(nn.Module):
    """soap-zoo rnnlm: embedding, stacked LSTMs (PyTorch's gate order), a
    linear layer over the vocabulary at every step."""

    def __init__(self, vocab, embed, hidden, layers):
        super().__init__()
        self.embedding = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden, layers, batch_first=True)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, ids):
        x, _ = self.lstm(self.embedding(ids))
        return self.out(x).reshape(-1, self.out.out_features)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model", choices=["resnet50", "bert-base", "rnnlm"])
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--threads", type=int, default=0,
                        help="CPU threads (0: PyTorch's default)")
    parser.add_argument("--vocab", type=int, default=0,
                        help="vocabulary (default: 30522 bert, 10000 rnnlm)")
    parser.add_argument("--hidden", type=int, default=0,
                        help="hidden width (default: 768 bert, 2048 rnnlm)")
    parser.add_argument("--embed", type=int, default=2048)
    parser.add_argument("--layers", type=int, default=0,
                        help="layers (default: 12 bert, 2 rnnlm)")
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--max-pos", type=int, default=512)
    parser.add_argument("--classes", type=int, default=2)
    parser.add_argument("--peak-rss", action="store_true")
    parser.add_argument("--depth", type=int, default=50,
                        choices=sorted(RESNET_DEPTHS))
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--classes-resnet", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--image", type=int, default=224)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--math", choices=["f32", "tf32", "bf16"],
                        default="f32")
    parser.add_argument("--lr", type=float, default=0.01)
    args = parser.parse_args()
    cuda = args.device == "cuda"
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

    if args.model == "resnet50":
        model = ResNet50(classes=args.classes_resnet, width=args.width,
                         depth=args.depth).to(device)
        inputs = torch.randn(args.batch, 3, args.image, args.image,
                             device=device)
        labels = torch.randint(0, args.classes_resnet, (args.batch,),
                               device=device)
    elif args.model == "bert-base":
        vocab = args.vocab or 30522
        model = Bert(vocab=vocab, hidden=args.hidden or 768,
                     layers=args.layers or 12, heads=args.heads,
                     max_pos=args.max_pos, classes=args.classes).to(device)
        inputs = torch.randint(0, vocab, (args.batch, args.seq),
                               device=device)
        labels = torch.randint(0, args.classes, (args.batch,), device=device)
    else:
        vocab = args.vocab or 10000
        model = RnnLm(vocab, args.embed, args.hidden or 2048,
                      args.layers or 2).to(device)
        inputs = torch.randint(0, vocab, (args.batch, args.seq),
                               device=device)
        labels = torch.randint(0, vocab, (args.batch * args.seq,),
                               device=device)
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)

    def step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(args.device, dtype=torch.bfloat16,
                            enabled=args.math == "bf16"):
            loss = F.cross_entropy(model(inputs), labels)
        loss.backward()
        optimizer.step()
        return loss

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
        # ru_maxrss is in KiB on Linux.
        line += f" peak_rss_mib={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f}"
    print(line)


if __name__ == "__main__":
    main()

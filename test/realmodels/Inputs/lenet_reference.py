"""Independent check of LeNet (realmodels/lenet.mlir) trained by SOAP.

  lenet_reference.py write MODEL DATA   writes a data file (the runtime's
                                         checkpoint format, docs/runtime.md)
                                         with 4 images and labels drawn from
                                         Python's own generator
  lenet_reference.py check MODEL DATA   reads the executable's output on
                                         stdin; checks that step 1's loss is
                                         the softmax cross-entropy of LeNet
                                         with the exported weights (read
                                         from the model's resource blobs and
                                         computed here in plain Python), and
                                         that the loss falls every step
"""
import math
import random
import re
import struct
import sys

BATCH = 4


def blobs(model):
    """The float32 weights in the module's dialect_resources, by key."""
    out = {}
    for key, hexdata in re.findall(r'(torch_tensor_[\w.]+): "0x([0-9A-Fa-f]+)"',
                                   open(model).read()):
        raw = bytes.fromhex(hexdata)[4:]  # a u32 alignment comes first
        out[key] = list(struct.unpack("<%df" % (len(raw) // 4), raw))
    return out


def data():
    rng = random.Random(20261122)
    images = [rng.uniform(-1.0, 1.0) for _ in range(BATCH * 3 * 32 * 32)]
    labels = [rng.randrange(10) for _ in range(BATCH)]
    return images, labels


def tensor(name, dtype, shape, fmt, values):
    body = struct.pack("<%d%s" % (len(values), fmt), *values)
    out = struct.pack("<I", len(name)) + name.encode()
    out += struct.pack("<I", len(dtype)) + dtype.encode()
    out += struct.pack("<I", len(shape)) + struct.pack("<%dq" % len(shape), *shape)
    return out + struct.pack("<Q", len(body)) + body


def conv_relu(x, c, h, w, weight, f, k, stride):
    """x [c][h][w] (flat) * weight [f][c][k][k], no padding, then ReLU."""
    oh = (h - k) // stride + 1
    ow = (w - k) // stride + 1
    out = []
    for fo in range(f):
        for i in range(oh):
            for j in range(ow):
                acc = 0.0
                for ci in range(c):
                    for a in range(k):
                        row = (ci * h + i * stride + a) * w + j * stride
                        wrow = ((fo * c + ci) * k + a) * k
                        for b in range(k):
                            acc += x[row + b] * weight[wrow + b]
                out.append(max(acc, 0.0))
    return out, oh, ow


def linear(x, weight, bias, relu):
    """weight [out][in] as PyTorch stores it."""
    n = len(x)
    out = []
    for o in range(len(bias)):
        acc = bias[o] + sum(x[i] * weight[o * n + i] for i in range(n))
        out.append(max(acc, 0.0) if relu else acc)
    return out


def loss(model):
    wt = blobs(model)
    images, labels = data()
    total = 0.0
    for n in range(BATCH):
        x = images[n * 3072:(n + 1) * 3072]
        x, h, w = conv_relu(x, 3, 32, 32, wt["torch_tensor_6_3_5_5_torch.float32"], 6, 5, 2)
        x, h, w = conv_relu(x, 6, h, w, wt["torch_tensor_16_6_5_5_torch.float32"], 16, 5, 2)
        x = linear(x, wt["torch_tensor_120_400_torch.float32"], wt["torch_tensor_120_torch.float32"], True)
        x = linear(x, wt["torch_tensor_84_120_torch.float32"], wt["torch_tensor_84_torch.float32"], True)
        x = linear(x, wt["torch_tensor_10_84_torch.float32"], wt["torch_tensor_10_torch.float32"], False)
        top = max(x)
        total += top + math.log(sum(math.exp(v - top) for v in x)) - x[labels[n]]
    return total / BATCH


def main():
    mode, model, path = sys.argv[1:4]
    if mode == "write":
        images, labels = data()
        tensors = [tensor("arg8", "f32", [BATCH, 3, 32, 32], "f", images),
                   tensor("labels", "i64", [BATCH], "q", labels)]
        with open(path, "wb") as f:
            f.write(b"SOAPCKPT" + struct.pack("<IIQ", 1, len(tensors), 0) + b"".join(tensors))
        return 0
    losses = [float(v) for v in re.findall(r"^step=\d+ loss=(\S+)", sys.stdin.read(), re.M)]
    expected = loss(model)
    print("steps: %d" % len(losses))
    print("step 1 loss %.6f, reference %.6f" % (losses[0], expected))
    ok = abs(losses[0] - expected) <= 1e-4 * max(1.0, abs(expected))
    falls = all(b < a for a, b in zip(losses, losses[1:]))
    print("first loss matches the reference: %s" % ("yes" if ok else "NO"))
    print("loss falls every step: %s" % ("yes" if falls else "NO"))
    return 0 if ok and falls else 1


if __name__ == "__main__":
    sys.exit(main())

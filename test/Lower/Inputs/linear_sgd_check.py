"""Independent check of the linear-sgd executable (linear-sgd.mlir).

  linear_sgd_check.py write INIT DATA   writes a checkpoint with the initial
                                         parameters and a data file with
                                         inputs and targets (the runtime's
                                         checkpoint format, docs/runtime.md)
  linear_sgd_check.py check OUTPUT      recomputes the SGD steps in plain
                                         Python and compares each step's loss
                                         with the executable's output
"""
import re
import struct
import sys

W0 = [[0.5, -0.25], [0.125, 0.75], [-0.5, 0.375]]
B0 = [0.1, -0.2]
X = [[1.0, 2.0, -1.0], [0.5, -1.5, 2.0], [-2.0, 0.25, 1.0], [1.5, 1.0, 0.5]]
Y = [[1.0, -1.0], [0.0, 2.0], [-1.5, 0.5], [2.0, 1.0]]
LR = 0.1


def tensor(name, dtype, shape, values):
    body = struct.pack("<%df" % len(values), *values)
    out = struct.pack("<I", len(name)) + name.encode()
    out += struct.pack("<I", len(dtype)) + dtype.encode()
    out += struct.pack("<I", len(shape)) + struct.pack("<%dq" % len(shape), *shape)
    return out + struct.pack("<Q", len(body)) + body


def checkpoint(tensors, step=0):
    return b"SOAPCKPT" + struct.pack("<IIQ", 1, len(tensors), step) + b"".join(tensors)


def flat(m):
    return [v for row in m for v in row]


def losses(steps):
    w = [row[:] for row in W0]
    b = B0[:]
    out = []
    for _ in range(steps):
        pred = [[sum(X[i][k] * w[k][j] for k in range(3)) + b[j] for j in range(2)] for i in range(4)]
        diff = [[pred[i][j] - Y[i][j] for j in range(2)] for i in range(4)]
        out.append(sum(d * d for row in diff for d in row) / 8)
        g = [[d / 4 for d in row] for row in diff]
        dw = [[sum(X[i][k] * g[i][j] for i in range(4)) for j in range(2)] for k in range(3)]
        db = [sum(g[i][j] for i in range(4)) for j in range(2)]
        w = [[w[k][j] - LR * dw[k][j] for j in range(2)] for k in range(3)]
        b = [b[j] - LR * db[j] for j in range(2)]
    return out


def main():
    if sys.argv[1] == "write":
        with open(sys.argv[2], "wb") as f:
            f.write(checkpoint([tensor("fc.weight", "f32", [3, 2], flat(W0)),
                                tensor("fc.bias", "f32", [2], B0)]))
        with open(sys.argv[3], "wb") as f:
            f.write(checkpoint([tensor("input", "f32", [4, 3], flat(X)),
                                tensor("target", "f32", [4, 2], flat(Y))]))
        return 0
    got = [float(m) for m in re.findall(r"^step=\d+ loss=(\S+)", open(sys.argv[2]).read(), re.M)]
    want = losses(len(got))
    if not got:
        print("FAIL: no step lines")
        return 1
    for i, (g, w) in enumerate(zip(got, want)):
        if abs(g - w) > 1e-5 * max(1.0, abs(w)):
            print("FAIL: step %d loss %r, expected %r" % (i + 1, g, w))
            return 1
    if not got[-1] < got[0]:
        print("FAIL: the loss did not fall")
        return 1
    print("OK: %d losses match, %.6f -> %.6f" % (len(got), got[0], got[-1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

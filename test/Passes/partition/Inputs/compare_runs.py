"""Compares a partitioned run with the single-device run of the same model:
every step's loss, and every tensor of the checkpoints they saved (the
runtime's format, docs/runtime.md), to a relative tolerance (for tensors:
relative to the tensor's largest value, plus 1e-6 absolute, since some
parameters keep values at rounding level, e.g. attention key biases, whose
exact gradient is zero).

  compare_runs.py RTOL SINGLE_OUT SINGLE_CKPT PARTITIONED_OUT PARTITIONED_CKPT
"""
import re
import struct
import sys


def losses(path):
    return [float(v) for v in re.findall(r"^step=\d+ loss=(\S+)", open(path).read(), re.M)]


def checkpoint(path):
    data = open(path, "rb").read()
    assert data[:8] == b"SOAPCKPT", path
    _, count, _ = struct.unpack_from("<IIQ", data, 8)
    pos = 24
    tensors = {}
    for _ in range(count):
        (n,) = struct.unpack_from("<I", data, pos); pos += 4
        name = data[pos:pos + n].decode(); pos += n
        (n,) = struct.unpack_from("<I", data, pos); pos += 4
        dtype = data[pos:pos + n].decode(); pos += n
        (rank,) = struct.unpack_from("<I", data, pos); pos += 4
        pos += 8 * rank
        (size,) = struct.unpack_from("<Q", data, pos); pos += 8
        fmt = {"f32": "f", "f64": "d"}.get(dtype)
        if fmt:
            width = struct.calcsize(fmt)
            tensors[name] = struct.unpack_from("<%d%s" % (size // width, fmt), data, pos)
        pos += size
    return tensors


def main():
    rtol = float(sys.argv[1])
    want, got = losses(sys.argv[2]), losses(sys.argv[4])
    if not want or len(want) != len(got):
        print("FAIL: %d losses, expected %d" % (len(got), len(want)))
        return 1
    worst = max(abs(g - w) / max(abs(w), 1e-12) for g, w in zip(got, want))
    if worst > rtol:
        print("FAIL: losses differ by %.3g (relative): %s vs %s" % (worst, got, want))
        return 1
    a, b = checkpoint(sys.argv[3]), checkpoint(sys.argv[5])
    if sorted(a) != sorted(b):
        print("FAIL: checkpoints hold different tensors")
        return 1
    for name in sorted(a):
        scale = max(max(abs(v) for v in a[name]), 1e-12)
        diff = max(abs(x - y) for x, y in zip(a[name], b[name]))
        if diff > rtol * scale + 1e-6:
            print("FAIL: %s differs by %.3g (relative to its largest value)" % (name, diff / scale))
            return 1
    print("OK: %d losses and %d tensors equal to %g" % (len(got), len(a), rtol))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Compares a partitioned run with the single-device run of the same model:
every step's loss, and every tensor of the checkpoints they saved (the
runtime's format, docs/runtime.md), to a relative tolerance (for tensors:
relative to the tensor's largest value, plus 1e-6 absolute, since some
parameters keep values at rounding level, e.g. attention key biases, whose
exact gradient is zero).

  compare_runs.py RTOL SINGLE_OUT SINGLE_CKPT PARTITIONED_OUT PARTITIONED_CKPT
                  [OTHER_OUT OTHER_CKPT]

OTHER is an optional second single-device run of the same program whose
arithmetic sums in another order (SOAP_DNNL=0: im2col + GEMM in place of
oneDNN's convolutions). Where the two single-device runs differ by more
than RTOL, which happens where a value is a cancellation of large terms
(the gradient of a batch norm's beta ahead of another batch norm) or where
training amplifies rounding from step to step, the partitioned run may
differ from the single device by up to NOISE_FACTOR times as much as they
differ from each other, and the message counts those values.
"""
import re
import struct
import sys

NOISE_FACTOR = 4


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
    other = losses(sys.argv[6]) if len(sys.argv) > 6 else None
    if not want or len(want) != len(got) or (other is not None and len(other) != len(want)):
        print("FAIL: %d losses, expected %d" % (len(got), len(want)))
        return 1
    noisy = 0
    for step, (g, w) in enumerate(zip(got, want)):
        scale = max(abs(w), 1e-12)
        limit = rtol * scale
        if other is not None and NOISE_FACTOR * abs(other[step] - w) > limit:
            limit = NOISE_FACTOR * abs(other[step] - w)
            noisy += abs(g - w) > rtol * scale
        if abs(g - w) > limit:
            print("FAIL: losses differ by %.3g (relative): %s vs %s" % (abs(g - w) / scale, got, want))
            return 1
    a, b = checkpoint(sys.argv[3]), checkpoint(sys.argv[5])
    c = checkpoint(sys.argv[7]) if len(sys.argv) > 7 else None
    if sorted(a) != sorted(b) or (c is not None and sorted(c) != sorted(a)):
        print("FAIL: checkpoints hold different tensors")
        return 1
    for name in sorted(a):
        scale = max(max(abs(v) for v in a[name]), 1e-12)
        diff = max(abs(x - y) for x, y in zip(a[name], b[name]))
        limit = rtol * scale + 1e-6
        if c is not None:
            noise = max(abs(x - y) for x, y in zip(a[name], c[name]))
            if NOISE_FACTOR * noise > limit:
                limit = NOISE_FACTOR * noise
                noisy += diff > rtol * scale + 1e-6
        if diff > limit:
            print("FAIL: %s differs by %.3g (relative to its largest value)" % (name, diff / scale))
            return 1
    print("OK: %d losses and %d tensors equal to %g" % (len(got), len(a), rtol) +
          (" (%d of them only within %dx the single-device rounding noise)" % (noisy, NOISE_FACTOR)
           if noisy else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())

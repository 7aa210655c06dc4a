"""Rewrites a SOAP checkpoint (docs/runtime.md format) keeping, of each f32/f64
tensor over LIMIT elements, every k-th element (k = ceil(n / LIMIT)) as a
rank-1 tensor; smaller tensors and other dtypes are kept whole. Applied alike
to the GPU and the CPU checkpoints so that compare_runs.py compares the same
elements.   shrink_ckpt.py IN OUT [LIMIT]"""
import array, struct, sys
src, dst = sys.argv[1], sys.argv[2]
limit = int(sys.argv[3]) if len(sys.argv) > 3 else 65536
data = open(src, "rb").read()
assert data[:8] == b"SOAPCKPT", src
version, count, extra = struct.unpack_from("<IIQ", data, 8)
out = [data[:24]]
pos = 24
for _ in range(count):
    start = pos
    (n,) = struct.unpack_from("<I", data, pos); pos += 4 + n
    name_end = pos
    (n,) = struct.unpack_from("<I", data, pos); pos += 4
    dtype = data[pos:pos + n].decode(); pos += n
    dtype_end = pos
    (rank,) = struct.unpack_from("<I", data, pos); pos += 4
    dims = struct.unpack_from("<%dQ" % rank, data, pos); pos += 8 * rank
    (size,) = struct.unpack_from("<Q", data, pos); pos += 8
    body = data[pos:pos + size]; pos += size
    code = {"f32": "f", "f64": "d"}.get(dtype)
    if code:
        a = array.array(code); a.frombytes(body)
        if len(a) > limit:
            k = -(-len(a) // limit)
            a = a[::k]
            body = a.tobytes()
            out.append(data[start:dtype_end] + struct.pack("<IQ", 1, len(a)) +
                       struct.pack("<Q", len(body)) + body)
            continue
    out.append(data[start:pos])
open(dst, "wb").write(b"".join(out))

# Writes a --data file (runtime/Checkpoint.h) for a zoo mlp of batch 4 and
# 6 input features: zero inputs and the i64 labels given, comma-separated.
#   python3 write_labels.py FILE 0,1,2,2
import struct
import sys


def tensor(name, dtype, shape, data):
    return (struct.pack('<I', len(name)) + name.encode() +
            struct.pack('<I', len(dtype)) + dtype.encode() +
            struct.pack('<I', len(shape)) +
            b''.join(struct.pack('<q', d) for d in shape) +
            struct.pack('<Q', len(data)) + data)


labels = [int(x) for x in sys.argv[2].split(',')]
with open(sys.argv[1], 'wb') as f:
    f.write(b'SOAPCKPT' + struct.pack('<IIQ', 1, 2, 0) +
            tensor('input', 'f32', [4, 6], bytes(4 * 4 * 6)) +
            tensor('labels', 'i64', [4],
                   b''.join(struct.pack('<q', l) for l in labels)))

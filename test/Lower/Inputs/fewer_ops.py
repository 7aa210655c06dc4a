#!/usr/bin/env python3
"""fewer_ops.py UNFUSED FUSED: counts the ops each lowered module brackets
with soaprt_op_begin (one per linalg op left to run) and fails unless the
fused module has fewer."""
import re
import sys


def count(path):
    return len(re.findall(r"call @soaprt_op_begin", open(path).read()))


unfused, fused = count(sys.argv[1]), count(sys.argv[2])
print(f"fused: {fused} ops, unfused: {unfused}")
if not 0 < fused < unfused:
    sys.exit("FAIL: fusion left as many ops as before")

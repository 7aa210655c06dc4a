#!/usr/bin/env python3
"""fewer_ops.py [--loops] BEFORE AFTER: counts the ops each lowered module
brackets with soaprt_op_begin (one per linalg op left to run), or with
--loops its loops (one conditional branch each in the LLVM dialect), and
fails unless AFTER has fewer."""
import re
import sys

loops = sys.argv[1] == "--loops"
paths = sys.argv[2:] if loops else sys.argv[1:]
pattern = r"llvm\.cond_br" if loops else r"call @soaprt_op_begin"


def count(path):
    return len(re.findall(pattern, open(path).read()))


before, after = count(paths[0]), count(paths[1])
if loops:
    print(f"collapsed: {after} loops, uncollapsed: {before}")
else:
    print(f"fused: {after} ops, unfused: {before}")
if not 0 < after < before:
    sys.exit("FAIL: as many as before")

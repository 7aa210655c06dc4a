"""Counts the CPU matmul calls of a lowered module (soap-opt --soap-lower-cpu
output) by their last argument: 0 overwrites the output (its zero fill
went), 1 adds to it. Prints one line per runtime function:
  soaprt_matmul_f32 overwrite N accumulate M
and fails when an argument is not a constant it can read."""
import re
import sys

text = open(sys.argv[1]).read()
constants = dict(re.findall(r'(%[\w.]+) = llvm\.mlir\.constant\((-?\d+) : i64\)', text))
counts = {}
for name, args in re.findall(r'llvm\.call @(soaprt_(?:batch_)?matmul_f\d+)\(([^)]*)\)', text):
    last = args.split(',')[-1].strip()
    if constants.get(last) not in ('0', '1'):
        sys.exit(f'{name}: last argument {last} is not the constant 0 or 1')
    counts.setdefault(name, [0, 0])[int(constants[last])] += 1
for name, (overwrite, accumulate) in sorted(counts.items()):
    print(f'{name} overwrite {overwrite} accumulate {accumulate}')

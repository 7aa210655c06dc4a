"""Compares the communication of a partitioned program with the simulator's.

usage: compare_comm.py PARTITIONED.mlir SIMULATED.json

PARTITIONED.mlir: the output of --soap-partition. SIMULATED.json: what
--soap-simulate="... communication=FILE" wrote for the same strategy. Each
soap collective becomes (kind, devices, bytes) with bytes as
Machine::collectiveCost counts them (all_reduce, reduce_scatter, all_to_all:
each member's input; all_gather: the gathered output; broadcast: the root's
buffer); each pair of a soap.send becomes ("send", [from, to], bytes). The
two multisets must be equal: prints "OK: N communication steps equal", or
the steps only one side has and exits 1.
"""
import collections
import json
import re
import sys

ELEMENT_BYTES = {"f64": 8, "f32": 4, "f16": 2, "bf16": 2, "i64": 8, "i32": 4,
                 "i16": 2, "i8": 1, "i1": 1, "index": 8}


def tensor_bytes(text):
    m = re.fullmatch(r"tensor<(.*)>", text.strip())
    if not m:
        sys.exit("cannot read tensor type " + text)
    *dims, element = m.group(1).split("x")
    count = 1
    for d in dims:
        count *= int(d)
    return count * ELEMENT_BYTES[element]


def devices(text):
    return [int(x) for x in text.split(",") if x.strip()]


def program_steps(path):
    steps = collections.Counter()
    for line in open(path):
        line = line.strip()
        m = re.search(r"soap\.(all_reduce|all_gather|reduce_scatter|all_to_all|"
                      r"broadcast) .* over \[([^\]]*)\].* : (tensor<[^>]*>)"
                      r"(?: -> (tensor<[^>]*>))?$", line)
        if m:
            kind, group, first, result = m.groups()
            bytes_ = tensor_bytes(result if kind == "all_gather" else first)
            steps[(kind, tuple(sorted(devices(group))), bytes_)] += 1
            continue
        m = re.search(r"soap\.send .* from \[([^\]]*)\] to \[([^\]]*)\].* : "
                      r"(tensor<[^>]*>)$", line)
        if m:
            bytes_ = tensor_bytes(m.group(3))
            for a, b in zip(devices(m.group(1)), devices(m.group(2))):
                steps[("send", (a, b), bytes_)] += 1
    return steps


def simulated_steps(path):
    steps = collections.Counter()
    for s in json.load(open(path))["steps"]:
        group = tuple(s["group"]) if s["kind"] == "send" else tuple(sorted(s["group"]))
        steps[(s["kind"], group, s["bytes"])] += 1
    return steps


program = program_steps(sys.argv[1])
simulated = simulated_steps(sys.argv[2])
only_program = program - simulated
only_simulated = simulated - program
if not only_program and not only_simulated:
    print("OK: %d communication steps equal" % sum(program.values()))
    sys.exit(0)
print("MISMATCH: %d in the program, %d simulated, %d equal" % (
    sum(program.values()), sum(simulated.values()),
    sum((program & simulated).values())))
for name, steps in (("only in the program", only_program),
                    ("only simulated", only_simulated)):
    for (kind, group, bytes_), count in sorted(steps.items()):
        print("  %s: %d x %s over %s, %d bytes" % (name, count, kind,
                                                   list(group), bytes_))
sys.exit(1)

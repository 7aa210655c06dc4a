#!/usr/bin/env python3
"""Mutation fuzzer for soap-opt: IR, pass options and machine files.

Each case takes a seed input (a small .mlir file of the test suite or a
zoo model), mutates it (numbers, types, attributes, lines, truncation),
picks a pass pipeline with possibly mutated option values and possibly a
mutated machine file, and runs soap-opt under a time limit. The outcome:

  ok / error  soap-opt accepted the input or refused it with an exit
              status of 1 (a named error is what bad input must get);
  crash       a signal, an exit status other than 0 and 1, or a crash
              report on stderr (stack dump, LLVM ERROR, assertion,
              uncaught exception);
  hang        still running at the time limit.

Crashes and hangs are saved with the command that reproduces them. The
cases depend only on --seed, so a run with --cases N is reproducible.

  soap_fuzz.py --bin build/bin --cases 300 --seed 1 --out DIR
  soap_fuzz.py --bin build/bin --seconds 7200 --seed 7 --out DIR
"""

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

CRASH_MARKERS = (
    "Stack dump",
    "PLEASE submit a bug report",
    "LLVM ERROR",
    "Assertion",
    "terminate called",
    "Segmentation fault",
    "AddressSanitizer",
    "runtime error:",
)

INTERESTING_INTS = ["0", "1", "-1", "2", "3", "7", "64", "65536", "2147483647",
                    "2147483648", "-2147483649", "4294967296",
                    "9223372036854775807", "99999999999999999999"]
INTERESTING_FLOATS = ["0.0", "-0.0", "1.0e+38", "-1.0e+38", "nan", "inf",
                      "-inf", "1.0e-45"]
TYPES = ["f32", "f64", "f16", "bf16", "i1", "i8", "i32", "i64", "index"]

# Pipelines over a function with a body; MACHINE is replaced by a machine
# file or name.
PIPELINES = [
    ["--soap-print-dims"],
    ["--soap-export-graph=file=OUT.json"],
    ["--soap-apply-strategy=strategy=data-parallel devices=2"],
    ["--soap-apply-strategy=strategy=owt devices=4"],
    ["--soap-apply-strategy=strategy=megatron devices=2"],
    ["--soap-apply-strategy=strategy=random:SEED devices=3"],
    ["--soap-simulate=machine=MACHINE devices=4"],
    ["--soap-search=machine=MACHINE devices=4 budget=40"],
    ["--soap-training-step"],
    ["--soap-training-step=optimizer=adam lr=0.01"],
    ["--soap-training-step", "--soap-partition=devices=2"],
    ["--soap-apply-strategy=strategy=data-parallel devices=2",
     "--soap-training-step", "--soap-partition"],
    ["--soap-apply-strategy=strategy=random:SEED devices=2",
     "--soap-training-step", "--soap-partition"],
    ["--soap-set-batch=batch=6"],
    ["--soap-lift-params"],
    ["--soap-training-step", "--soap-lower-cpu"],
    ["--soap-lower-cpu"],
]


def replace_one(text, rng, pattern, make, group=0):
    """Replaces one match of `pattern` (its `group`), chosen at random, by
    make(match)."""
    found = list(re.finditer(pattern, text))
    if not found:
        return text
    m = rng.choice(found)
    return text[:m.start(group)] + make(m) + text[m.end(group):]


def mutate_number(text, rng):
    return replace_one(
        text, rng, r"(?<![\w.%#@^])-?\d+(\.\d+)?(e[+-]?\d+)?",
        lambda m: rng.choice(INTERESTING_FLOATS if "." in m.group(0)
                             else INTERESTING_INTS))


def mutate_type(text, rng):
    return replace_one(text, rng, r"\b(f32|f64|i1|i8|i32|i64|index)\b",
                       lambda m: rng.choice(TYPES))


def mutate_shape(text, rng):
    def one_dim(m):
        dims = m.group(1).split("x")
        i = rng.randrange(len(dims))
        dims[i] = rng.choice(["0", "1", "3", "?", "1000000007"])
        return "x".join(dims)
    return replace_one(text, rng, r"tensor<([0-9x?]+)x", one_dim, group=1)


def mutate_lines(text, rng):
    lines = text.split("\n")
    if len(lines) < 3:
        return text
    i = rng.randrange(len(lines))
    j = rng.randrange(len(lines))
    kind = rng.randrange(3)
    if kind == 0:
        del lines[i]
    elif kind == 1:
        lines.insert(i, lines[j])
    else:
        lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines)


def mutate_soap_attr(text, rng):
    """Adds or changes a #soap.config on a linalg op."""
    ops = list(re.finditer(r"= linalg\.\w+", text))
    if not ops:
        return text
    m = rng.choice(ops)
    degrees = ", ".join(rng.choice(["1", "2", "4", "0", "-1", "3"])
                        for _ in range(rng.randint(1, 4)))
    devices = ", ".join(str(rng.randint(-1, 8)) for _ in range(rng.randint(0, 4)))
    attr = ' {soap.config = #soap.config<[%s], devices = [%s]>}' % (degrees,
                                                                   devices)
    # Put it after the op's result types, before the next line.
    end = text.find("\n", m.end())
    if end < 0:
        return text
    line = text[m.start():end]
    if line.rstrip().endswith("{"):
        return text
    return text[:end] + attr + text[end:]


def truncate(text, rng):
    return text[:rng.randrange(max(1, len(text)))]


IR_MUTATORS = [mutate_number, mutate_number, mutate_type, mutate_shape,
               mutate_lines, mutate_soap_attr, truncate]


def mutate_option(arg, rng):
    """Replaces one option value of `--pass=k=v k2=v2` by an odd value."""
    if "=" not in arg:
        return arg
    name, _, options = arg.partition("=")
    parts = options.split(" ")
    i = rng.randrange(len(parts))
    key, eq, _ = parts[i].partition("=")
    if not eq:
        return arg
    parts[i] = key + "=" + rng.choice(INTERESTING_INTS + INTERESTING_FLOATS +
                                      ["", "x", "p100-4x4", "random:"])
    return name + "=" + " ".join(parts)


def mutate_json(value, rng, depth=0):
    if isinstance(value, dict) and value:
        key = rng.choice(sorted(value))
        if rng.random() < 0.15:
            del value[key]
        else:
            value[key] = mutate_json(value[key], rng, depth + 1)
        return value
    if isinstance(value, list) and value:
        i = rng.randrange(len(value))
        if rng.random() < 0.15:
            del value[i]
        else:
            value[i] = mutate_json(value[i], rng, depth + 1)
        return value
    if isinstance(value, bool):
        return rng.choice([not value, "yes", 0])
    if isinstance(value, (int, float)):
        return rng.choice([0, -1, 1e308, -5, 2 ** 40, 0.5, "3", None])
    if isinstance(value, str):
        return rng.choice(["", "x" * 300, "nan", 7])
    return value


def classify(returncode, stderr, timed_out):
    if timed_out:
        return "hang"
    if returncode not in (0, 1) or any(m in stderr for m in CRASH_MARKERS):
        return "crash"
    return "ok" if returncode == 0 else "error"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin", required=True, help="folder of soap-opt")
    parser.add_argument("--root", default=os.path.dirname(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    parser.add_argument("--cases", type=int, default=0,
                        help="number of cases (0: until --seconds)")
    parser.add_argument("--seconds", type=float, default=0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=30,
                        help="seconds before a case counts as a hang")
    parser.add_argument("--max-seed-bytes", type=int, default=12000)
    parser.add_argument("--out", required=True,
                        help="folder for crashing and hanging cases")
    args = parser.parse_args()
    if args.cases <= 0 and args.seconds <= 0:
        parser.error("give --cases or --seconds")

    soap_opt = os.path.abspath(os.path.join(args.bin, "soap-opt"))
    seeds = []
    for folder, _, files in os.walk(os.path.join(args.root, "test")):
        for name in sorted(files):
            path = os.path.join(folder, name)
            if name.endswith(".mlir") and os.path.getsize(path) <= args.max_seed_bytes:
                seeds.append(path)
    seeds.sort()
    machines = sorted(os.path.join(args.root, "machines", m)
                      for m in os.listdir(os.path.join(args.root, "machines"))
                      if m.endswith(".json"))
    if not seeds:
        sys.exit("soap_fuzz: no seed inputs under test/")

    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="soap-fuzz-")
    rng = random.Random(args.seed)
    counts = {"ok": 0, "error": 0, "crash": 0, "hang": 0}
    start = time.monotonic()
    case = 0
    try:
        while True:
            if args.cases and case >= args.cases:
                break
            if args.seconds and time.monotonic() - start >= args.seconds:
                break
            case += 1
            seed_path = rng.choice(seeds)
            with open(seed_path) as f:
                text = f.read()
            # Split-input files: one piece.
            pieces = text.split("// -----")
            text = rng.choice(pieces)
            for _ in range(rng.randint(0, 3)):
                text = rng.choice(IR_MUTATORS)(text, rng)
            input_path = os.path.join(work, "input.mlir")
            with open(input_path, "w") as f:
                f.write(text)

            pipeline = list(rng.choice(PIPELINES))
            machine = rng.choice(machines)
            if rng.random() < 0.3:
                with open(machine) as f:
                    description = json.load(f)
                for _ in range(rng.randint(1, 3)):
                    description = mutate_json(description, rng)
                machine = os.path.join(work, "machine.json")
                with open(machine, "w") as f:
                    json.dump(description, f)
            if rng.random() < 0.3:
                i = rng.randrange(len(pipeline))
                pipeline[i] = mutate_option(pipeline[i], rng)
            pipeline = [p.replace("MACHINE", machine)
                         .replace("SEED", str(rng.randint(0, 99)))
                         .replace("OUT", os.path.join(work, "out"))
                        for p in pipeline]
            command = [soap_opt, input_path] + pipeline + [
                "-o", os.path.join(work, "out.mlir")]
            timed_out = False
            try:
                # In the work folder: an option mutated into a relative
                # file name writes there.
                run = subprocess.run(command, capture_output=True, text=True,
                                     errors="replace", timeout=args.timeout,
                                     cwd=work)
                returncode, stderr = run.returncode, run.stderr
            except subprocess.TimeoutExpired as e:
                timed_out = True
                returncode = None
                stderr = (e.stderr or b"").decode(errors="replace") \
                    if isinstance(e.stderr, bytes) else (e.stderr or "")
            outcome = classify(returncode, stderr, timed_out)
            counts[outcome] += 1
            if outcome in ("crash", "hang"):
                keep = os.path.join(args.out, "%s-%06d" % (outcome, case))
                os.makedirs(keep, exist_ok=True)
                shutil.copy(input_path, os.path.join(keep, "input.mlir"))
                if machine.startswith(work):
                    shutil.copy(machine, os.path.join(keep, "machine.json"))
                with open(os.path.join(keep, "README"), "w") as f:
                    f.write("seed input: %s\nexit status: %s\ncommand:\n  %s\n"
                            "stderr (tail):\n%s\n" % (
                                os.path.relpath(seed_path, args.root),
                                returncode, " ".join(
                                    repr(c) if " " in c else c
                                    for c in command), stderr[-3000:]))
                first = next((l for l in stderr.splitlines()
                              if any(m in l for m in CRASH_MARKERS)),
                             stderr.strip().splitlines()[-1]
                             if stderr.strip() else "")
                print("soap_fuzz: case %d: %s (%s, %s): %s" % (
                    case, outcome, os.path.relpath(seed_path, args.root),
                    " ".join(pipeline)[:120], first[:200]), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    elapsed = time.monotonic() - start
    print("soap_fuzz: %d cases in %.0f s (seed %d): %d accepted, %d refused "
          "with an error, %d crashes, %d hangs; saved in %s" % (
              case, elapsed, args.seed, counts["ok"], counts["error"],
              counts["crash"], counts["hang"], args.out))
    sys.exit(1 if counts["crash"] or counts["hang"] else 0)


if __name__ == "__main__":
    main()

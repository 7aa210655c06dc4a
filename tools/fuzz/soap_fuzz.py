#!/usr/bin/env python3
"""Mutation fuzzer for soap-opt: IR, pass options, machine files, strategy
files, and the executables soap-translate links with their checkpoints.

Each case takes a seed input (a small .mlir file of the test suite or a
zoo model), mutates it (numbers, types, attributes, lines, truncation),
picks a pass pipeline with possibly mutated option values and possibly a
mutated machine file, and runs soap-opt under a time limit. Two kinds of
pipeline go further:

  STRATEGY    a random strategy is applied and exported to JSON, the JSON
              is mutated, and soap-opt applies the mutated file (then
              simulates or partitions);
  EXECUTABLE  the lowered step is linked by soap-translate and run for a
              step with --save, then again with a mutated checkpoint
              (--load) or mutated driver options.

The outcome of a case is the worst of its commands':

  ok / error  soap-opt accepted the input or refused it with an exit
              status of 1 (a named error is what bad input must get);
  crash       a signal, an exit status other than 0 and 1 (for an
              executable: other than its documented 0-5), or a crash
              report on stderr (stack dump, LLVM ERROR, assertion,
              uncaught exception, sanitizer report);
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
    # time= bounds a search whose budget= is mutated to 2^31.
    ["--soap-search=machine=MACHINE devices=4 budget=40 time=10"],
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
    ["STRATEGY", "--soap-simulate=machine=MACHINE devices=4"],
    ["STRATEGY", "--soap-training-step", "--soap-partition"],
    # Seeded from training steps (inputs with a loss result).
    ["--soap-lower-cpu", "EXECUTABLE"],
]

# Odd command lines for the executables (docs/runtime.md).
DRIVER_OPTIONS = [
    ["--steps=-1"], ["--steps=0"], ["--steps=x"],
    ["--steps=99999999999999999999"], ["--warmup=3"], ["--seed=x"],
    ["--timeout=0"], ["--load=/dev/null"], ["--load=missing.bin"],
    ["--data=input.mlir"], ["--save=."], ["--save=/dev/full"],
    ["--trace=trace.json"], ["--print-model"], ["--bogus"], ["--steps"],
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
    if isinstance(value, (dict, list)) and value:
        # One key or index (the same draw for both: choice over a range).
        key = rng.choice(sorted(value) if isinstance(value, dict)
                         else range(len(value)))
        if rng.random() < 0.15:
            del value[key]
        else:
            value[key] = mutate_json(value[key], rng, depth + 1)
        return value
    if isinstance(value, bool):
        return rng.choice([not value, "yes", 0])
    if isinstance(value, (int, float)):
        return rng.choice([0, -1, 1e308, -5, 2 ** 40, 0.5, "3", None])
    if isinstance(value, str):
        return rng.choice(["", "x" * 300, "nan", 7])
    return value


def mutate_json_file(path, rng):
    with open(path) as f:
        description = json.load(f)
    for _ in range(rng.randint(1, 3)):
        description = mutate_json(description, rng)
    with open(path, "w") as f:
        json.dump(description, f)


def classify(returncode, stderr, timed_out, allowed=(0, 1)):
    if timed_out:
        return "hang"
    if returncode not in allowed or any(m in stderr for m in CRASH_MARKERS):
        return "crash"
    return "ok" if returncode == 0 else "error"


def run_command(command, timeout, cwd):
    """(exit status or None, stderr, whether it timed out)."""
    try:
        # In the work folder: an option mutated into a relative file name
        # writes there.
        run = subprocess.run(command, capture_output=True, text=True,
                             errors="replace", timeout=timeout, cwd=cwd)
        return run.returncode, run.stderr, False
    except subprocess.TimeoutExpired as e:
        stderr = e.stderr or ""
        if isinstance(stderr, bytes):
            stderr = stderr.decode(errors="replace")
        return None, stderr, True


def mutate_bytes(path, rng):
    """Truncates the file or overwrites a few of its bytes."""
    with open(path, "rb") as f:
        data = bytearray(f.read())
    if not data:
        return
    if rng.random() < 0.3:
        data = data[:rng.randrange(len(data))]
    else:
        for _ in range(rng.randint(1, 8)):
            # Mostly in the header, where sizes and names are.
            end = len(data) if rng.random() < 0.3 else min(len(data), 256)
            data[rng.randrange(end)] = rng.randrange(256)
    with open(path, "wb") as f:
        f.write(bytes(data))


# Exit statuses of the executables (docs/runtime.md): 0 ok, 1 file, 2 usage,
# 3 loss, 4 rank, 5 GPU.
EXECUTABLE_STATUSES = (0, 1, 2, 3, 4, 5)


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
    steps_seeds = []
    for path in seeds:
        with open(path) as f:
            if 'soap.role = "loss"' in f.read():
                steps_seeds.append(path)
    machines = sorted(os.path.join(args.root, "machines", m)
                      for m in os.listdir(os.path.join(args.root, "machines"))
                      if m.endswith(".json"))
    if not seeds:
        sys.exit("soap_fuzz: no seed inputs under test/")

    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="soap-fuzz-")
    counts = {"ok": 0, "error": 0, "crash": 0, "hang": 0}
    reached = {"mutated strategy files": 0, "executable runs": 0}
    exe_path = os.path.join(work, "step.exe")
    start = time.monotonic()
    case = 0
    try:
        while True:
            if args.cases and case >= args.cases:
                break
            if args.seconds and time.monotonic() - start >= args.seconds:
                break
            case += 1
            # Each case draws from its own stream, so that a test input
            # added under test/ changes only the cases that pick it.
            rng = random.Random("%d/%d" % (args.seed, case))
            pipeline = list(rng.choice(PIPELINES))
            executable = pipeline[-1] == "EXECUTABLE"
            seed_path = rng.choice(steps_seeds if executable else seeds)
            with open(seed_path) as f:
                text = f.read()
            # Split-input files: one piece.
            pieces = text.split("// -----")
            text = rng.choice(pieces)
            # Steps that are to run get fewer mutations: most mutants fail
            # before soap-translate.
            for _ in range(rng.randint(0, 1 if executable else 3)):
                text = rng.choice(IR_MUTATORS)(text, rng)
            input_path = os.path.join(work, "input.mlir")
            with open(input_path, "w") as f:
                f.write(text)

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
            out_path = os.path.join(work, "out.mlir")
            for name in ("machine.json", "strategy.json", "checkpoint.bin",
                         "step.exe"):
                if os.path.exists(os.path.join(work, name)):
                    os.remove(os.path.join(work, name))
            # (command, allowed exit statuses, what to mutate before it).
            steps = []
            if pipeline[0] == "STRATEGY":
                strategy = os.path.join(work, "strategy.json")
                steps.append(([soap_opt, input_path,
                               "--soap-apply-strategy=strategy=random:%d "
                               "devices=4" % rng.randint(0, 99),
                               "--soap-export-strategy=file=" + strategy,
                               "-o", out_path], (0, 1), None))
                pipeline = ["--soap-apply-strategy=strategy=" + strategy] + \
                    pipeline[1:]
                prepare = lambda path=strategy: mutate_json_file(path, rng)
            else:
                prepare = None
            if executable:
                pipeline = pipeline[:-1]
            steps.append(([soap_opt, input_path] + pipeline +
                          ["-o", out_path], (0, 1), prepare))
            if executable:
                exe = exe_path
                checkpoint = os.path.join(work, "checkpoint.bin")
                steps.append(([os.path.join(os.path.dirname(soap_opt),
                                            "soap-translate"),
                               "--soap-to-executable", out_path, "-o", exe],
                              (0, 1), None))
                steps.append(([exe, "--steps", "1", "--timeout", "60",
                               "--save", checkpoint], EXECUTABLE_STATUSES,
                              None))
                if rng.random() < 0.6:
                    steps.append(([exe, "--steps", "1", "--timeout", "60",
                                   "--load", checkpoint], EXECUTABLE_STATUSES,
                                  lambda: mutate_bytes(checkpoint, rng)))
                else:
                    steps.append(([exe, "--steps", "1", "--timeout", "60"] +
                                  rng.choice(DRIVER_OPTIONS),
                                  EXECUTABLE_STATUSES, None))
            # The case's outcome: its first command that does not succeed.
            for command, allowed, prepare in steps:
                if prepare:
                    prepare()
                if command[0] == exe_path:
                    reached["executable runs"] += 1
                elif any(c.startswith("--soap-apply-strategy=strategy=/")
                         for c in command):
                    reached["mutated strategy files"] += 1
                returncode, stderr, timed_out = run_command(
                    command, args.timeout, work)
                outcome = classify(returncode, stderr, timed_out, allowed)
                if outcome != "ok":
                    break
            counts[outcome] += 1
            if outcome in ("crash", "hang"):
                keep = os.path.join(args.out, "%s-%06d" % (outcome, case))
                os.makedirs(keep, exist_ok=True)
                shutil.copy(input_path, os.path.join(keep, "input.mlir"))
                for name in ("machine.json", "strategy.json",
                             "checkpoint.bin"):
                    if os.path.exists(os.path.join(work, name)):
                        shutil.copy(os.path.join(work, name),
                                    os.path.join(keep, name))
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
    print("soap_fuzz: reached %s" % ", ".join(
        "%d %s" % (n, what) for what, n in reached.items()))
    sys.exit(1 if counts["crash"] or counts["hang"] else 0)


if __name__ == "__main__":
    main()

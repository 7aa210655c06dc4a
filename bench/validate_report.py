#!/usr/bin/env python3
"""Writes bench/results/validate.md from the work folder of bench/validate.sh
and copies one-step Chrome traces (simulated and measured) to the traces
folder. Standard library only."""
import argparse
import collections
import json
import os
import re
import statistics

p = argparse.ArgumentParser()
for a in ("work", "out", "traces", "steps", "runs", "warmup", "load-before", "load-after",
          "ninja", "waited", "idle", "seconds", "models", "profile-mode", "quiet-wait"):
    p.add_argument("--" + a, required=True)
args = p.parse_args()
W = args.work


def read(path):
    with open(path) as f:
        return f.read()


def events(path):
    return json.load(open(path))["traceEvents"]


def kind(name):
    """'linalg.matmul (m.mlir:3:4)' / 'forward linalg.matmul #12' -> 'matmul'."""
    name = re.sub(r"^(forward|backward) ", "", name)
    name = name.split(" (")[0].split(" #")[0]
    return name.split(".", 1)[-1]


_source_lines = {}


def forward_kind(name):
    """The kind of the op at a kernel's location ('linalg.generic
    (m.mlir:3:4)' of a batch_matmul's backward -> 'batch_matmul'), as the
    simulator counts a backward task under its forward op; the kernel's own
    kind where the location names no op."""
    m = re.search(r"\(([^()]+):(\d+):\d+\)$", name)
    if m:
        path, line = m.group(1), int(m.group(2))
        if path not in _source_lines:
            try:
                _source_lines[path] = read(path).split("\n")
            except OSError:
                _source_lines[path] = []
        lines = _source_lines[path]
        if 0 < line <= len(lines):
            op = re.search(r"=\s*([a-z_]+\.[a-z_0-9]+)", lines[line - 1])
            if op:
                return kind(op.group(1))
    return kind(name)


def measured_step(trace_base, d):
    """Per rank: the events of the step whose duration is rank 0's median,
    rebased to the step's start; and per-kind kernel time of that step on
    rank 0 plus the time outside kernels."""
    files = [trace_base] if d == 1 else [
        trace_base.replace(".json", ".rank%d.json" % r) for r in range(d)]
    per_rank = [events(f) for f in files]
    steps0 = [e for e in per_rank[0] if e.get("cat") == "step"]
    durs = sorted(range(len(steps0)), key=lambda i: steps0[i]["dur"])
    idx = durs[(len(durs) - 1) // 2]
    out, kinds, outside, comm = [], collections.Counter(), 0.0, 0.0
    for r, ev in enumerate(per_rank):
        steps = [e for e in ev if e.get("cat") == "step"]
        s = steps[idx]
        t0, t1 = s["ts"], s["ts"] + s["dur"]
        out.append({"name": "process_name", "ph": "M", "pid": r,
                    "args": {"name": "measured rank %d" % r}})
        for tid, tn in ((0, "steps"), (1, "kernels"), (2, "communication")):
            out.append({"name": "thread_name", "ph": "M", "pid": r, "tid": tid,
                        "args": {"name": tn}})
        busy = 0.0
        for e in ev:
            if e.get("ph") != "X" or e["ts"] < t0 or e["ts"] > t1:
                continue
            e = dict(e, pid=r, ts=round(e["ts"] - t0, 3))
            out.append(e)
            if e.get("cat") in ("op", "copy", "comm"):
                busy += e["dur"]
                if r == 0 and e.get("cat") == "comm":
                    comm += e["dur"] / 1000
                elif r == 0:
                    kinds[forward_kind(e["name"]) if e.get("cat") == "op"
                          else kind(e["name"])] += e["dur"] / 1000
        if r == 0:
            outside = (s["dur"] - busy) / 1000
    return out, kinds, outside, comm, [per[idx]["dur"] / 1000 for per in
                                 ([e for e in ev if e.get("cat") == "step"] for ev in per_rank)]


# The simulator's trace categories of work on the links (Simulator's
# Chrome trace: TaskKind names).
COMMUNICATION = ("all-reduce", "collective", "transfer", "grad-transfer")


def simulated(trace):
    """Device 0's per-kind forward+backward time, its update time, and the
    communication on the links, each transfer or collective once: the
    gradients' all-reduces, the reshards' collectives and the transfers of
    values and gradients."""
    ev = events(trace)
    names = {e["pid"]: e["args"]["name"] for e in ev
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    kinds, upd, comm, busy = collections.Counter(), 0.0, 0.0, 0.0
    seen = set()
    for e in ev:
        if e.get("ph") != "X":
            continue
        pname = names.get(e["pid"], "")
        if pname == "device 0":
            busy += e["dur"] / 1000
            if e.get("cat") in ("forward", "backward"):
                kinds[kind(e["name"])] += e["dur"] / 1000
            elif e.get("cat") == "update":
                upd += e["dur"] / 1000
        if e.get("cat") in COMMUNICATION and pname.startswith("link"):
            key = (e["name"], e["ts"])
            if key not in seen:
                seen.add(key)
                comm += e["dur"] / 1000
    return kinds, upd, comm, busy


runs = [l.split("\t") for l in read(os.path.join(W, "runs.tsv")).splitlines() if l]
models = dict(x.split("=", 1) for x in args.models.split(";") if x)
rows, details, total_bytes = [], [], 0
for m, d, strategy, key in runs:
    d = int(d)
    base = os.path.join(W, "%s.%s" % (m, key))
    run = read(base + ".run.txt")
    # Measured: the median of the fastest quarter of the steps of all runs
    # (the steps this VM's host left alone, as soap-profile --run times
    # kernels); the lowest median of one run beside it.
    run_median = float(re.search(r"median_ms=([0-9.]+)", run).group(1))
    steps = sorted(float(t) for t in re.findall(r"time_ms=([0-9.]+)", read(base + ".steps.txt")))
    fast = steps[:max(1, len(steps) // 4)]
    meas = fast[(len(fast) - 1) // 2] if len(fast) % 2 else (fast[len(fast) // 2 - 1] + fast[len(fast) // 2]) / 2
    sims = {}
    for src in ("roofline", "profile"):
        sims[src] = json.load(open("%s.%s.report.json" % (base, src)))["step_time_ms"]
    err = {src: (sims[src] - meas) / meas for src in sims}
    mev, mkinds, outside, mcomm, rank_steps = measured_step(base + ".trace.json", d)
    skinds, supd, scomm, sbusy = simulated(base + ".profile.sim.json")
    # Peak memory per device: simulated (the profile run's report, the
    # fullest device) against measured (the driver's peak_tensor_mb, the
    # most any rank's tensors held at once; peak_rss_mb, its resident set,
    # runtime and libraries included, beside it).
    report = json.load(open("%s.profile.report.json" % base))
    sim_mb = max(dv["peak_memory_bytes"] for dv in report["devices"]) / 2**20
    at = max(report["devices"], key=lambda dv: dv["peak_memory_bytes"]).get("peak_memory_at", "")
    at = re.sub(r"\(\S*/([^/)]+)\)", r"(\1)", at)  # the file name, not the work folder
    rss = re.search(r"peak_rss_mb=([0-9.]+)", run)
    tensors = re.search(r"peak_tensor_mb=([0-9.]+)", run)
    rows.append(dict(model=m, d=d, strategy=strategy, meas=meas, sims=sims, err=err,
                     run_median=run_median, steps=len(steps),
                     err_median=(sims["profile"] - run_median) / run_median,
                     sim_mb=sim_mb, sim_at=at,
                     rss_mb=float(rss.group(1)) if rss else None,
                     tensor_mb=float(tensors.group(1)) if tensors else None))
    # One-step traces, small.
    stem = "%s-%ddev" % (m, d) if d == 1 else "%s-%s" % (m, key.replace(".", "dev-", 1))
    for name, obj in (("measured", {"traceEvents": mev, "displayTimeUnit": "ms"}),
                      ("simulated", json.load(open(base + ".profile.sim.json")))):
        path = os.path.join(args.traces, "%s.%s.json" % (stem, name))
        with open(path, "w") as f:
            json.dump(obj, f, separators=(",", ":"))
        total_bytes += os.path.getsize(path)
    details.append(dict(model=m, d=d, strategy=strategy, mkinds=mkinds, outside=outside,
                        mcomm=mcomm,
                        skinds=skinds, supd=supd, scomm=scomm, sbusy=sbusy, meas=meas,
                        sim=sims["profile"], rank_steps=rank_steps))


def pct(x):
    return "%+.0f %%" % (100 * x)


med = {src: statistics.median(abs(r["err"][src]) for r in rows) for src in ("roofline", "profile")}
order_lines, all_agree = [], True
NOISE = 0.10
for m in dict.fromkeys(r["model"] for r in rows):
    rs = [r for r in rows if r["model"] == m]
    by_meas = [r["strategy"] for r in sorted(rs, key=lambda r: r["meas"])]
    ok, pairs = {}, {}
    for src in ("roofline", "profile"):
        by_sim = [r["strategy"] for r in sorted(rs, key=lambda r: r["sims"][src])]
        ok[src] = by_sim == by_meas
        # Pairs the measurements tell apart beyond this VM's run-to-run
        # noise (NOISE), and how many of them the simulator orders the same.
        clear = [(a, b) for i, a in enumerate(rs) for b in rs[i + 1:]
                 if abs(a["meas"] - b["meas"]) > NOISE * min(a["meas"], b["meas"])]
        right = sum((a["meas"] < b["meas"]) == (a["sims"][src] < b["sims"][src])
                    for a, b in clear)
        pairs[src] = (right, len(clear))
    all_agree &= ok["profile"]
    order_lines.append("| %s | %s | %s | %d of %d | %s | %d of %d |" % (
        m, " < ".join(by_meas), "yes" if ok["profile"] else "**no**",
        pairs["profile"][0], pairs["profile"][1],
        "yes" if ok["roofline"] else "**no**",
        pairs["roofline"][0], pairs["roofline"][1]))

# The search (validate.sh step 5): its reported speedup over data
# parallelism against the measured one (data parallelism's measured step
# over the searched strategy's), and this run's own simulations of both.
search_lines, search_errors = [], []
for m in dict.fromkeys(r["model"] for r in rows):
    rs = {r["strategy"]: r for r in rows if r["model"] == m}
    dp, found = rs.get("data-parallel, 2 ranks"), rs.get("searched, 2 ranks")
    path = os.path.join(W, "%s.search.txt" % m)
    if not dp or not found or not os.path.exists(path):
        continue
    text = read(path)
    claim = re.search(r"([0-9.]+)x data parallel", text)
    if not claim:
        search_lines.append("| %s | | (no report: %s) | | | | |" % (m, text.strip().splitlines()[-1:]))
        continue
    claimed = float(claim.group(1))
    measured = dp["meas"] / found["meas"]
    simulated_here = dp["sims"]["profile"] / found["sims"]["profile"]
    err = claimed / measured - 1
    search_errors.append(abs(err))
    # The first search (before its strategy's program was profiled): what
    # it reported, and whether the second found the same strategy.
    first = "—"
    first_path = os.path.join(W, "%s.search-first.txt" % m)
    if os.path.exists(first_path):
        first_claim = re.search(r"([0-9.]+)x data parallel", read(first_path))
        same = read(os.path.join(W, "%s.searched-first.json" % m)) == read(
            os.path.join(W, "%s.searched.json" % m))
        rounds_path = os.path.join(W, "%s.search-rounds" % m)
        rounds = read(rounds_path).strip() if os.path.exists(rounds_path) else "?"
        first = "%s (%s; %s searches)" % (
            ("%.2fx" % float(first_claim.group(1))) if first_claim else "?",
            "same strategy" if same else "another strategy", rounds)
    search_lines.append("| %s | %s | %.2fx | %.2fx | %.2fx | %s | %.2f / %.2f |" % (
        m, first, claimed, simulated_here, measured, pct(err), dp["meas"], found["meas"]))

calib = read(os.path.join(W, "calibration.txt")).strip()
prof_lines = []
for m in dict.fromkeys(r["model"] for r in rows):
    t = read(os.path.join(W, "%s.profile.txt" % m))
    s = [l for l in t.splitlines()
         if l.startswith("soap-profile: measured") or l.startswith("soap-profile: timed")]
    prof_lines.append("- %s: %s" % (m, s[0][len("soap-profile: "):] if s else "(no summary)"))

out = []
w = out.append
w("# Simulated against measured step time on the local CPU ranks")
w("")
w("Written by `bench/validate.sh` on %s (%d s in all). Machine: %s, %d cores." % (
    __import__("datetime").datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"),
    int(args.seconds),
    re.search(r"model name\s*:\s*(.*)", read("/proc/cpuinfo")).group(1),
    os.cpu_count()))
w("")
w("Load average (1/5/15 min) before measuring: %s; after: %s. `ninja` processes "
  "at the start/end of the measurements: %s; CPUs %s %% idle over the 3 s before "
  "measuring (waited %s s for a quiet machine)." % (
      args.load_before, args.load_after, args.ninja, args.idle, args.waited))
w("")
probes = []
if os.path.exists(os.path.join(W, "host-probe.log")):
    for line in read(os.path.join(W, "host-probe.log")).splitlines():
        f = dict(kv.split("=") for kv in line.split())
        probes.append(f)
if args.quiet_wait == "0" or not probes:
    w("Host probe: off (`--quiet-wait 0`): runs started whatever the host's speed.")
else:
    quiet_at_once = sum(1 for f in probes if f["quiet"] == "1" and f["probes"] == "1")
    still_slow = sum(1 for f in probes if f["quiet"] == "0")
    waited = sum(float(f["waited_s"]) for f in probes if f["probes"] != "1")
    fastest = ", ".join(
        "%.2f ms on %s core(s)" % (min(float(f["best_ms"]) for f in probes
                                       if f.get("threads", "1") == n), n)
        for n in sorted({f.get("threads", "1") for f in probes}))
    w("Host probe (`soap-host-probe`, a 256^3 GEMM and a 16 MB triad on each core "
      "the run takes, at once, before the calibration (2 cores) and each run of a step, "
      "soap-profile's (`--before-run`, 2 cores) and the executables' below): %d runs; the host was "
      "within 15 %% of its fastest probe (%s) at once for %d, after waiting for %d "
      "(%.0f s in all), and still slower after %s s for %d (the slowest probe "
      "%.2f ms)." % (
          len(probes), fastest, quiet_at_once,
          len(probes) - quiet_at_once - still_slow, waited, args.quiet_wait, still_slow,
          max(float(f["probe_ms"]) for f in probes)))
w("")
w("Measured: the median of the fastest quarter of the steps of " + args.runs + " runs (`--runs`; "
  "a model's executables take turns, one run each per round), each run %s steps after "
  "%s warm-up steps (`time_ms` of a step is the slowest rank's): this VM's host slows "
  "the machine down for seconds at a time, and those are the steps it left alone "
  "(beside it, the lowest `median_ms` of one run, the statistic before 2026-11-28 "
  "afternoon). `OPENBLAS_NUM_THREADS=1` so that "
  "one device is one core, as in the simulator. A strategy on 2 ranks "
  "(`--soap-apply-strategy`, `--soap-training-step`, `--soap-partition`) uses both "
  "cores of this machine: mpirun, the OS and anything else running share them with "
  "the ranks (`--oversubscribe` is only needed because mpirun runs as root in a "
  "container; there is one rank per core)." % (args.steps, args.warmup))
w("Simulated: `--soap-apply-strategy=\"strategy=S devices=N\" "
  "--soap-simulate=\"machine=<calibrated cpu-local> devices=N\"` on the model's loss "
  "function, with the roofline alone and with a profile database of the model's "
  "kernels (soap-profile: whole ops and the shards of every strategy measured; "
  + ({"run": "`--program --run`: each strategy's training step run (on 2 "
            "ranks for the strategies, 10 steps after 3 warm-up steps, not "
            "the executables measured below; the steps take turns, " + args.runs + " runs "
            "each) and each of its kernels timed where the step runs it, from the "
            "step's trace, its median over the fastest quarter of the steps of all "
            "runs (as measured below), each counted for "
            "the op it comes from, each copy the bufferization left too",
     "program": "`--program`: the kernels of each strategy's training step "
                "as `--soap-lower-cpu` forms them, fused elementwise chains "
                "and merged reductions included, each timed alone and counted "
                "for the op it comes from",
     }.get(args.profile_mode,
           "each op and its backward ops compiled and timed alone")) + ").")
w("")
w("| model | strategy | simulated ms (profile) | simulated ms (roofline) | measured ms | error (profile) | error (roofline) | lowest run median ms | error (profile) against it |")
w("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for r in rows:
    w("| %s | %s | %.2f | %.2f | %.2f | %s | %s | %.2f | %s |" % (
        r["model"], r["strategy"], r["sims"]["profile"], r["sims"]["roofline"], r["meas"],
        pct(r["err"]["profile"]), pct(r["err"]["roofline"]), r["run_median"],
        pct(r["err_median"])))
w("")
med_run = statistics.median(abs(r["err_median"]) for r in rows)
w("Error = (simulated − measured) / measured. **Median |relative error|: %.0f %% "
  "with the profile database, %.0f %% with the roofline** (target: 5 %%); "
  "against the lowest median of one run, %.0f %% with the profile database." % (
      100 * med["profile"], 100 * med["roofline"], 100 * med_run))
w("")
w("Strategy order (fastest first, as measured) and whether the simulator orders "
  "them the same: the whole order, and the pairs of strategies whose measured "
  "times differ by more than %d %% (the same executable's median step varies by "
  "up to about that much between runs on this VM) that the simulator puts in "
  "the same order:" % (100 * NOISE))
w("")
w("| model | measured order | same order (profile) | clear pairs ordered right (profile) | same order (roofline) | clear pairs (roofline) |")
w("| --- | --- | --- | --- | --- | --- |")
out.extend(order_lines)
w("")
if search_lines:
    w("## The search's promise")
    w("")
    w("`--soap-search=\"machine=<calibrated cpu-local> devices=2 profile=<the "
      "model's database> seed=1\"` (validate.sh `--search-budget` proposals), "
      "run again after the database took the program of the strategy the "
      "search before found (soap-profile --merge: the shards and in-step "
      "work only that program runs), until it finds that strategy again "
      "(at most `--search-rounds` searches); the first search's report, and "
      "whether the last found the same strategy as the first: "
      "the speedup over data parallelism it reports, the same ratio in this "
      "run's simulations (the rows above), and the measured ratio (data "
      "parallelism's measured step over the searched strategy's). Target: "
      "reported within 10 % of measured.")
    w("")
    w("| model | first search reported | search reports | simulated here | measured | reported / measured − 1 | measured ms (data parallel / searched) |")
    w("| --- | --- | --- | --- | --- | --- | --- |")
    out.extend(search_lines)
    if search_errors:
        w("")
        w("**Within 10 %%: %d of %d models.**" % (
            sum(e <= 0.10 for e in search_errors), len(search_errors)))
    w("")
w("## Peak memory per device")
w("")
w("Simulated: the fullest device's peak in the simulator's report (memory "
  "from liveness in program order: docs/simulator.md), and where the step "
  "reaches it. Measured: the executable's `peak_tensor_mb`, the most any "
  "rank's tensors held at once (the driver's arguments and results and every "
  "buffer the step allocates), and, for reference, `peak_rss_mb`, the largest "
  "rank's peak resident set (the runtime, MPI, OpenBLAS and oneDNN "
  "included). Target: simulated within 10 % of measured tensors.")
w("")
w("| model | strategy | simulated MB | measured tensors MB | simulated / measured | peak resident MB | simulated peak at |")
w("| --- | --- | --- | --- | --- | --- | --- |")
mem_errors = []
for r in rows:
    rss = "%.1f" % r["rss_mb"] if r["rss_mb"] is not None else "(not reported)"
    if r["tensor_mb"] is None:
        w("| %s | %s | %.1f | (not reported) | | %s | %s |" % (r["model"], r["strategy"], r["sim_mb"], rss, r["sim_at"]))
    else:
        mem_errors.append(abs(r["sim_mb"] / r["tensor_mb"] - 1))
        w("| %s | %s | %.1f | %.1f | %.2f | %s | %s |" % (r["model"], r["strategy"], r["sim_mb"],
                                                         r["tensor_mb"], r["sim_mb"] / r["tensor_mb"], rss, r["sim_at"]))
if mem_errors:
    mem_errors.sort()
    n = len(mem_errors)
    med = mem_errors[n // 2] if n % 2 else (mem_errors[n // 2 - 1] + mem_errors[n // 2]) / 2
    w("")
    w("**Median |relative error| of the simulated peak: %.0f %%; within 10 %%: %d of %d.**"
      % (100 * med, sum(e <= 0.10 for e in mem_errors), n))
w("")
w("## Where the time goes")
w("")
w("Per op kind: measured = the kernels' trace events on rank 0 in the median step "
  "(forward, backward and optimizer-update kernels together, each counted under "
  "the kind of the op at its location, the forward op a backward kernel comes "
  "from, as the simulator counts backward tasks; `copy` is the copies "
  "bufferization left: pads, concatenations, slices); simulated = device 0's "
  "forward + backward tasks of that kind with the profile database (backward "
  "ops measured by soap-profile), and the optimizer update and the "
  "communication as separate rows. \"communication\" is, measured, the time "
  "rank 0 spends in MPI calls (waiting for the other rank included) and, "
  "simulated, the transfers and collectives on the bus (each once). "
  "\"outside\" is the measured step minus kernels, copies and "
  "communication: allocation and glue. Times in ms.")
w("")
for dt in details:
    w("### %s, %s (simulated %.2f, measured %.2f)" % (dt["model"], dt["strategy"], dt["sim"], dt["meas"]))
    w("")
    if dt["d"] > 1:
        w("Measured median step per rank: %s ms." % ", ".join("%.2f" % x for x in dt["rank_steps"]))
        w("")
    w("| | measured | simulated |")
    w("| --- | --- | --- |")
    ks = sorted(set(dt["mkinds"]) | set(dt["skinds"]),
                key=lambda k: -max(dt["mkinds"].get(k, 0), dt["skinds"].get(k, 0)))
    for k in ks:
        a, b = dt["mkinds"].get(k), dt["skinds"].get(k)
        if (a or 0) < 0.005 and (b or 0) < 0.005:
            continue
        w("| %s | %s | %s |" % (k, "%.2f" % a if a is not None else "—",
                                "%.2f" % b if b is not None else "—"))
    w("| optimizer update | (in generic) | %.2f |" % dt["supd"])
    w("| communication | %.2f | %.2f |" % (dt["mcomm"], dt["scomm"]))
    w("| outside (measured) | %.2f | |" % dt["outside"])
    w("| device 0 busy (simulated) | | %.2f |" % dt["sbusy"])
    w("")
w("## What the simulator misses")
w("")
w("Read with the per-kind tables above and the traces (these are structural "
  "differences between the simulated and the executed step, not tuned to this "
  "run's numbers):")
w("")
w("- **Kernels in context.** soap-profile times each kernel alone, its "
  "buffers evicted from the core's private caches (not from the shared last "
  "level) before each sample; in the step, its inputs were written by other "
  "ops just before or long before, and the profile's key (op, local shapes) "
  "does not tell two generics of the same shapes apart.")
w("- **Data movement left to the roofline**: pads, slices and concatenations are "
  "not profiled; their roofline (STREAM bandwidth × the `data_movement` "
  "efficiency) is optimistic for the runtime's row-by-row copies (row `copy`).")
w("- **Communication**: every collective and reshard over both ranks takes "
  "the time soap-profile --mpi measured for libsoaprt's collective of that "
  "kind and size (`collectives.measured` of the calibrated machine: MPI's "
  "collective and the blocks reordered around it, called back to back); "
  "the step's collectives also wait for a rank that arrives late, which is "
  "in the measured communication row. The bus model fitted to ping-pong "
  "(Calibration below) remains for other groups. The simulator holds both "
  "devices during a transfer or collective (`overlaps_communication: false`: "
  "blocking MPI calls).")
w("- **Ranks share the machine.** soap-profile times kernels with the other "
  "core idle; in a step on 2 ranks both cores run kernels at once and share "
  "the memory system, and every collective waits for the later rank. Compare a "
  "model's kernel rows on 1 device and on 2 ranks: data parallelism halves "
  "the work, and what the kernels take beyond half is this contention.")
w("- **Noise**: two ranks on a 2-core VM share it with mpirun and the OS; "
  "the same executable's median step varies by up to ~10 % between runs.")
w("")
w("## Calibration")
w("")
w("```")
w(calib)
w("```")
w("")
w("Profile databases:")
w("")
out.extend(prof_lines)
w("")
w("Models (the zoo's, and real exports from ../shared/realmodels through "
  "the documented partitioned path, docs/real-models.md):")
w("")
for m, line in models.items():
    w("- %s: `%s`" % (m, line))
w("")
w("## Traces")
w("")
w("`validate-traces/MODEL-Ndev.simulated.json` (the simulator's timeline of "
  "one step, with the profile database) and `MODEL-Ndev.measured.json` (the "
  "executable's median step, one process per rank, each rank's timeline "
  "rebased to its own step start) open side by side in Perfetto or "
  "chrome://tracing. %.1f MB in all." % (total_bytes / 1e6))
w("")
with open(args.out, "w") as f:
    f.write("\n".join(out))
print("\n".join(out))

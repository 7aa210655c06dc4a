"""Compares the simulated peak memory per device (a --soap-simulate report)
with the executable's measured peak_tensor_mb (the most any rank's tensors
held at once): prints both, the ratio, and whether it is within the given
relative tolerance.

    compare_memory.py TOLERANCE RUN_OUTPUT REPORT_JSON
"""
import json
import re
import sys

tolerance = float(sys.argv[1])
run = open(sys.argv[2]).read()
report = json.load(open(sys.argv[3]))
match = re.search(r"peak_tensor_mb=([0-9.]+)", run)
if not match:
    sys.exit("no peak_tensor_mb in %s" % sys.argv[2])
measured = float(match.group(1))
devices = report["devices"]
simulated = max(d["peak_memory_bytes"] for d in devices) / 2**20
at = max(devices, key=lambda d: d["peak_memory_bytes"]).get("peak_memory_at")
timeline = report.get("memory_timeline", [])
print("measured %.2f MB, simulated %.2f MB at %s (%d timeline points)"
      % (measured, simulated, at, len(timeline)))
ratio = simulated / measured
print("ratio %.3f: %s" % (ratio, "WITHIN" if abs(ratio - 1) <= tolerance else "OUTSIDE"))

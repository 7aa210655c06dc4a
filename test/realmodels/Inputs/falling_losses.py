"""Exits 0 when a run printed 3 finite losses, each below the one before."""
import math
import re
import sys

losses = [float(x) for x in re.findall(r"^step=\d+ loss=(\S+)", open(sys.argv[1]).read(), re.M)]
print(losses)
ok = len(losses) == 3 and all(math.isfinite(l) for l in losses) and losses[0] > losses[1] > losses[2]
sys.exit(0 if ok else 1)

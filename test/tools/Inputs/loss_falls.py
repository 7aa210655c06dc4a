"""Reads an executable's output (step=N loss=X ...) on stdin; prints
"NAME: N steps, loss falls" when every step's loss is below the previous
one (and finite), otherwise says why and exits 1."""
import math
import re
import sys

name = sys.argv[1]
losses = [float(v) for v in re.findall(r"^step=\d+ loss=(\S+)", sys.stdin.read(), re.M)]
if len(losses) < 2 or not all(math.isfinite(v) for v in losses):
    print("%s: bad losses %s" % (name, losses))
    sys.exit(1)
if not all(b < a for a, b in zip(losses, losses[1:])):
    print("%s: loss does not fall: %s" % (name, losses))
    sys.exit(1)
print("%s: %d steps, loss falls" % (name, len(losses)))

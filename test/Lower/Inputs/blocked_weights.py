"""Helper of blocked-weights.test.

  blocked_weights.py blocks < MODEL_JSON
      one line per 4-D argument and result: "arg|result ROLE NAME
      block=B" or "... plain";
  blocked_weights.py losses A.out B.out
      "N losses equal" when the runs' losses agree to 1e-5 (relative),
      else the two lists and exit status 1.
"""
import json
import re
import sys

if sys.argv[1] == "blocks":
    model = json.load(sys.stdin)
    for kind in ("args", "results"):
        for t in model[kind]:
            if len(t["shape"]) != 4:
                continue
            layout = "block=%d" % t["block"] if t.get("block") else "plain"
            print(kind[:-1], t["role"], t["name"], layout)
elif sys.argv[1] == "losses":
    runs = [
        [float(v) for v in re.findall(r"^step=\d+ loss=(\S+)", open(p).read(), re.M)]
        for p in sys.argv[2:4]
    ]
    same = len(runs[0]) == len(runs[1]) and all(
        abs(a - b) <= 1e-5 * max(abs(a), abs(b)) for a, b in zip(*runs)
    )
    if not same or not runs[0]:
        print(runs)
        sys.exit(1)
    print("%d losses equal" % len(runs[0]))

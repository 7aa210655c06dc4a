"""Turns an exported strategy into one that splits every 2-D convolution
along its output rows (and columns, with 4 devices) and leaves every other
op replicated: attribute parallelism, whose tasks read overlapping input
rows (halos).

usage: spatial_strategy.py IN.json OUT.json
"""
import json
import sys

with open(sys.argv[1]) as f:
    strategy = json.load(f)
devices = strategy["devices"]
split = {2: [1, 1, 2, 1, 1, 1, 1], 4: [1, 1, 2, 2, 1, 1, 1]}[devices]
convs = 0
for op in strategy["ops"]:
    if op["op"] == "linalg.conv_2d_nchw_fchw":
        op["degrees"] = split
        op["devices"] = list(range(devices))
        convs += 1
    else:
        for key in ("degrees", "devices"):
            op.pop(key, None)
        op["replicated"] = True
if convs == 0:
    sys.exit("no convolution in the strategy")
with open(sys.argv[2], "w") as f:
    json.dump(strategy, f)

"""Counts the ops of a strategy file placed on fewer devices than it has."""
import json
import sys

strategy = json.load(open(sys.argv[1]))
count = sum(1 for op in strategy["ops"]
            if op.get("devices") and len(set(op["devices"])) < strategy["devices"])
print("ops on a strict subset of the devices: %d" % count)

"""Compares the step losses of two runs of an executable built by
soap-translate: same number of step lines (one process printing), one
summary line each, and every loss equal to a relative 1e-6.

  compare_losses.py REFERENCE OUTPUT
"""
import re
import sys


def read(path):
    text = open(path).read()
    losses = [float(m) for m in re.findall(r"^step=\d+ loss=(\S+)", text, re.M)]
    summaries = len(re.findall(r"^summary ", text, re.M))
    return losses, summaries


def main():
    want, _ = read(sys.argv[1])
    got, summaries = read(sys.argv[2])
    if not want or len(got) != len(want):
        print("FAIL: %d step lines, expected %d" % (len(got), len(want)))
        return 1
    if summaries != 1:
        print("FAIL: %d summary lines, expected 1" % summaries)
        return 1
    for i, (g, w) in enumerate(zip(got, want)):
        if abs(g - w) > 1e-6 * max(abs(w), 1e-30):
            print("FAIL: step %d loss %r, expected %r" % (i + 1, g, w))
            return 1
    print("OK: %d losses equal" % len(got))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env bash
# Runs the mutation fuzzer (tools/fuzz/soap_fuzz.py) against soap-opt for
# HOURS hours (default 2) and reports the cases, the errors, the crashes and
# the hangs; the crashing and hanging inputs, each with the command that
# reproduces it, go to bench/results/fuzz-cases/ (not committed: make each
# a regression test instead).
#
#   bench/fuzz.sh [HOURS] [--build DIR] [--seed N]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
HOURS=2
BUILD=$ROOT/build
SEED=$(date +%s)
while [ $# -gt 0 ]; do
  case $1 in
    --build) BUILD=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    [0-9]*) HOURS=$1; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
SECONDS_TOTAL=$(python3 -c "print(int(float('$HOURS') * 3600))")
OUT=$ROOT/bench/results/fuzz-cases
mkdir -p "$OUT"
python3 "$ROOT/tools/fuzz/soap_fuzz.py" --bin "$BUILD/bin" --seconds "$SECONDS_TOTAL" \
  --seed "$SEED" --timeout 60 --out "$OUT"

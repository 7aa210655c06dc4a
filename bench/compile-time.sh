#!/usr/bin/env bash
# Time from a model to a running partitioned executable, per stage: the
# search and partition (`--soap-search ... --soap-training-step
# --soap-partition`), `--soap-lower-cpu`, `soap-translate`, and the same
# lowering and translation for one device; wall seconds and peak resident
# memory of each stage, then one step of the partitioned executable on
# --ranks MPI ranks (that it runs). Writes bench/results/compile-time.md.
#
#   bench/compile-time.sh [--build DIR] [--ranks N] [--cases "resnet152 bert"]
#                         [--keep DIR]
#
# The issue's target ("One communication plan ...", compile time): a
# searched ResNet-152 on 4 ranks lowers and translates in under 2 minutes.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build
RANKS=4
CASES="resnet152 bert"
KEEP=""
while [ $# -gt 0 ]; do
  case $1 in
    --build) BUILD=$2; shift 2 ;;
    --ranks) RANKS=$2; shift 2 ;;
    --cases) CASES=$2; shift 2 ;;
    --keep) KEEP=$2; shift 2 ;;
    *) echo "usage: $0 [--build DIR] [--ranks N] [--cases LIST] [--keep DIR]" >&2; exit 2 ;;
  esac
done
export PATH=$BUILD/bin:$PATH
WORK=${KEEP:-$(mktemp -d)}
mkdir -p "$WORK"
[ -n "$KEEP" ] || trap 'rm -rf "$WORK"' EXIT
MPIRUN="mpirun --oversubscribe"
[ "$(id -u)" -ne 0 ] || MPIRUN="$MPIRUN --allow-run-as-root"

# Each case: the zoo model and its options.
declare -A ZOO
ZOO[resnet152]="resnet50 --depth 152 --image 64 --batch 8"
ZOO[bert]="bert-base --hidden 256 --layers 12 --heads 4 --seq 64 --batch 8"
ZOO[mlp]="mlp"
TRAIN="optimizer=sgd lr=0.01"

# measure NAME COMMAND...: runs the command (its stderr to $WORK/NAME.err)
# and prints "SECONDS PEAK_MB" (the peak resident memory of the command's
# largest process).
measure() {
  local name=$1; shift
  python3 - "$WORK/$name.err" "$@" <<'PY'
import resource, subprocess, sys, time
err = open(sys.argv[1], "w")
start = time.monotonic()
rc = subprocess.call(sys.argv[2:], stderr=err)
seconds = time.monotonic() - start
peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
if rc != 0:
    sys.stderr.write("compile-time: %s exited with %d (see %s)\n" % (sys.argv[2], rc, sys.argv[1]))
    sys.exit(rc)
print("%.1f %.0f" % (seconds, peak_mb))
PY
}

out=$ROOT/bench/results/compile-time.md
mkdir -p "$(dirname "$out")"
{
  echo "# Compile time: model to running executable"
  echo
  echo "\`bench/compile-time.sh\` on $(date +%F) ($(nproc) cores): wall seconds"
  echo "(peak resident MB) of each stage, searched strategy on $RANKS ranks"
  echo "(\`machine=p100-4x4 budget=2000\`, SGD training step), and one device."
  echo
  echo "| model (zoo options) | search + partition | --soap-lower-cpu | soap-translate | lower + translate | one device: lower + translate | first step on $RANKS ranks |"
  echo "| --- | --- | --- | --- | --- | --- | --- |"
} > "$out.tmp"

for c in $CASES; do
  [ -n "${ZOO[$c]:-}" ] || { echo "compile-time: unknown case $c" >&2; exit 2; }
  echo "== $c" >&2
  # shellcheck disable=SC2086
  soap-zoo ${ZOO[$c]} -o "$WORK/$c.mlir"
  read -r s_search m_search < <(measure "$c.search" soap-opt "$WORK/$c.mlir" \
    --soap-search="machine=p100-4x4 devices=$RANKS budget=2000 seed=1" \
    --soap-training-step="$TRAIN" --soap-partition -o "$WORK/$c.part.mlir")
  read -r s_lower m_lower < <(measure "$c.lower" soap-opt "$WORK/$c.part.mlir" \
    --soap-lower-cpu -o "$WORK/$c.part.ll.mlir")
  read -r s_translate m_translate < <(measure "$c.translate" soap-translate \
    --soap-to-executable "$WORK/$c.part.ll.mlir" -o "$WORK/$c.part.exe")
  read -r s_one m_one < <(measure "$c.one" bash -c \
    'soap-opt "$1" --soap-training-step="$2" --soap-lower-cpu -o "$3.one.ll.mlir" &&
     soap-translate --soap-to-executable "$3.one.ll.mlir" -o "$3.one.exe"' \
    _ "$WORK/$c.mlir" "$TRAIN" "$WORK/$c")
  $MPIRUN -np "$RANKS" "$WORK/$c.part.exe" --steps 1 > "$WORK/$c.part.out"
  step=$(sed -n 's/^step=1 .*time_ms=\([0-9.]*\).*/\1/p' "$WORK/$c.part.out")
  total=$(python3 -c "print('%.1f' % ($s_lower + $s_translate))")
  echo "| $c (\`${ZOO[$c]}\`) | $s_search s ($m_search MB) | $s_lower s ($m_lower MB) | $s_translate s ($m_translate MB) | **$total s** | $s_one s ($m_one MB) | $step ms |" >> "$out.tmp"
done
mv "$out.tmp" "$out"
cat "$out"

#!/usr/bin/env bash
# Simulator benchmarks (issue: machines, cost model and simulator):
#  1. time to evaluate one proposal, full vs delta simulation, per model;
#  2. simulated step time of the baseline strategies per model and machine.
# Writes bench/results/simulator-proposals.md and simulator-strategies.md.
# Usage: bench/simulator.sh [PROPOSALS]   (default 200)
set -euo pipefail
cd "$(dirname "$0")/.."
PROPOSALS=${1:-200}
BUILD=${SOAP_BUILD_DIR:-build}
./scripts/build.sh soap-zoo soap-sim-bench > /dev/null
ZOO=$BUILD/bin/soap-zoo
BENCH=$BUILD/bin/soap-sim-bench
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

paper=(alexnet inception_v3 resnet101 rnntc rnnlm nmt)
transformers=(bert-base gpt2)
for m in "${paper[@]}"; do
  "$ZOO" "$m" > "$work/$m.mlir"
done
# Transformers at a training batch that 32 devices can split.
"$ZOO" bert-base --batch 64 > "$work/bert-base.mlir"
"$ZOO" gpt2 --batch 32 > "$work/gpt2.mlir"

out=bench/results/simulator-proposals.md
{
  echo "# Time to evaluate one proposal: full vs delta simulation"
  echo
  echo "A training step of each model at its default size (\`soap-zoo NAME\`),"
  echo "starting from data parallelism. $PROPOSALS random single-op config changes,"
  echo "each simulated incrementally (delta) and then undone, as the search does"
  echo "with a rejected proposal: median times. Every 10th of them also simulated"
  echo "in full (timed apart, so as not to evict the delta state from the caches)."
  echo "Then $PROPOSALS more random changes, all kept: the strategy drifts towards"
  echo "random configs with several times as many tasks (transfers between"
  echo "mismatched shards), and the last columns give the task count and the"
  echo "median delta time there, the worst case. Measured on"
  echo "$(nproc) cores of $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(date -u +%Y-%m-%d)."
  echo "Command: \`bench/simulator.sh $PROPOSALS\`."
  echo
  echo "| model | machine | devices | ops | tasks | full (ms) | delta (ms) | undo (ms) | speedup | tasks after drift | delta after drift (ms) |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
  for m in "${paper[@]}"; do
    for machine in p100-4x4:16 k80-16x4:16; do
      "$BENCH" proposals "$work/$m.mlir" "machines/${machine%%:*}.json" "${machine##*:}" "$PROPOSALS" \
        | sed "s|$work/||; s|\.mlir||"
    done
  done
} > "$out"
echo "wrote $out"

out=bench/results/simulator-strategies.md
{
  echo "# Simulated step time of the baseline strategies (ms)"
  echo
  echo "One training step (SGD) of each model at its default size (bert-base at"
  echo "batch 64 and gpt2 at batch 32), roofline cost"
  echo "model with the machine files' default efficiencies (not yet calibrated by"
  echo "soap-profile). Command: \`bench/simulator.sh\`, $(date -u +%Y-%m-%d)."
  echo
  echo "| model | machine | devices | data-parallel | model-parallel | owt | megatron |"
  echo "| --- | --- | --- | --- | --- | --- | --- |"
  for m in "${paper[@]}"; do
    for machine in p100-4x4:4 p100-4x4:16 k80-16x4:16 k80-16x4:64; do
      "$BENCH" strategies "$work/$m.mlir" "machines/${machine%%:*}.json" "${machine##*:}" \
        | sed "s|$work/||; s|\.mlir||"
    done
  done
  for m in "${transformers[@]}"; do
    for machine in h100-8:8 h100-4x8:32; do
      "$BENCH" strategies "$work/$m.mlir" "machines/${machine%%:*}.json" "${machine##*:}" \
        | sed "s|$work/||; s|\.mlir||"
    done
  done
} > "$out"
echo "wrote $out"

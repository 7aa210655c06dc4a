#!/usr/bin/env bash
# How far the simulator's communication agrees with what the partitioner
# emits (issue "One communication plan ..."): for zoo models at small sizes
# and each baseline and a few random strategies on 2 and 4 devices, the
# steps of --soap-simulate's communication= list and of the partitioned
# program (kind, devices, bytes), and how many are equal
# (test/Passes/partition/Inputs/compare_comm.py).
# Writes bench/results/communication-agreement.md.
# Usage: bench/communication-agreement.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${SOAP_BUILD_DIR:-build}
./scripts/build.sh soap-zoo soap-opt > /dev/null
ZOO=$BUILD/bin/soap-zoo
OPT=$BUILD/bin/soap-opt
COMPARE=test/Passes/partition/Inputs/compare_comm.py
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

models=(
  "mlp --batch 8 --input 16 --hidden 8 --layers 2 --classes 3"
  "rnnlm --vocab 50 --embed 8 --hidden 8 --seq 3 --batch 4"
  "bert-base --hidden 8 --layers 1 --heads 2 --seq 4 --batch 4 --vocab 11"
  "resnet50 --depth 18 --image 16 --width 4 --batch 4 --classes 3"
)
strategies=(data-parallel megatron owt model-parallel random:1 random:2)
out=bench/results/communication-agreement.md
total=0
agree=0
{
  echo "# The simulator's communication against the partitioned program's"
  echo
  echo "Each row: one strategy (\`--soap-apply-strategy\`), the steps of"
  echo "\`--soap-simulate=\"machine=p100-4x4 devices=N communication=FILE\"\` and those"
  echo "of \`--soap-training-step --soap-partition\` (kind, devices, bytes; each"
  echo "pair of a soap.send is one step), and how many are equal as multisets."
  echo "Command: \`bench/communication-agreement.sh\`, $(date -u +%Y-%m-%d)."
  echo
  echo "| model | strategy | devices | program steps | simulated steps | equal | agrees |"
  echo "| --- | --- | --- | --- | --- | --- | --- |"
  for m in "${models[@]}"; do
    name=${m%% *}
    "$ZOO" $m > "$work/m.mlir"
    for s in "${strategies[@]}"; do
      for n in 2 4; do
        "$OPT" "$work/m.mlir" --soap-apply-strategy="strategy=$s devices=$n" -o "$work/c.mlir" 2> /dev/null
        "$OPT" "$work/c.mlir" --soap-simulate="machine=p100-4x4 devices=$n communication=$work/s.json" -o /dev/null 2> /dev/null
        "$OPT" "$work/c.mlir" --soap-training-step --soap-partition -o "$work/p.mlir" 2> /dev/null
        line=$(python3 "$COMPARE" "$work/p.mlir" "$work/s.json" || true)
        line=${line%%$'\n'*}
        total=$((total + 1))
        if [[ $line == OK:* ]]; then
          steps=$(echo "$line" | awk '{print $2}')
          agree=$((agree + 1))
          echo "| $name | $s | $n | $steps | $steps | $steps | yes |"
        else
          read -r p s_ e <<< "$(echo "$line" | sed -E 's/MISMATCH: ([0-9]+) in the program, ([0-9]+) simulated, ([0-9]+) equal/\1 \2 \3/')"
          echo "| $name | $s | $n | $p | $s_ | $e | no |"
        fi
      done
    done
  done
  echo
  echo "$agree of $total strategies agree exactly."
} > "$out"
echo "wrote $out ($agree of $total agree)"

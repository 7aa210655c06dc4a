#!/usr/bin/env bash
# How far the simulator's communication agrees with what the partitioner
# emits (issue "One communication plan ..."): for zoo models at small sizes
# and each baseline and a few random strategies on 2 and 4 devices, the
# steps of --soap-simulate's communication= list and of the partitioned
# program (kind, devices, bytes), and how many are equal
# (test/Passes/partition/Inputs/compare_comm.py). Then the real exports
# of ../shared/realmodels (when present) as docs/real-models.md prepares
# them, with the loss appended before the strategy (--soap-append-loss).
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
REAL=../shared/realmodels
# Real exports and how docs/real-models.md prepares them.
declare -A PREPARE=(
  [lenet]="--soap-lift-params --soap-set-batch=4"
  [resnet18]="--soap-lift-params --soap-set-batch=4"
  [squeezenet1_1]="--soap-lift-params --soap-set-batch=4"
  [mobilenet_v3_small]="--soap-lift-params --soap-set-batch=4"
  [bert_hf]="--soap-lift-params=elided-integers=iota --soap-set-batch=4"
)
real_models=(lenet resnet18 squeezenet1_1 mobilenet_v3_small bert_hf)
out=bench/results/communication-agreement.md
total=0
agree=0
differ=0
{
  echo "# The simulator's communication against the partitioned program's"
  echo
  echo "Each row: one strategy (\`--soap-apply-strategy\`), the steps of"
  echo "\`--soap-simulate=\"machine=p100-4x4 devices=N communication=FILE\"\` and those"
  echo "of \`--soap-training-step --soap-partition\` (kind, devices, bytes; each"
  echo "pair of a soap.send is one step), and how many are equal as multisets."
  echo "Rows marked (export) are real exports of ../shared/realmodels, prepared"
  echo "as docs/real-models.md says, with \`--soap-append-loss=loss=softmax-xent\`."
  echo "Command: \`bench/communication-agreement.sh\`, $(date -u +%Y-%m-%d)."
  echo
  echo "| model | strategy | devices | program steps | simulated steps | equal | agrees |"
  echo "| --- | --- | --- | --- | --- | --- | --- |"
  # One row: the model in $work/m.mlir under strategy $2 on $3 devices.
  row() {
    local name=$1 s=$2 n=$3 line p s_ e
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
      differ=$((differ + p + s_ - 2 * e))
    fi
  }
  for m in "${models[@]}"; do
    "$ZOO" $m > "$work/m.mlir"
    for s in "${strategies[@]}"; do
      for n in 2 4; do row "${m%% *}" "$s" "$n"; done
    done
  done
  if [ -d "$REAL" ]; then
    for m in "${real_models[@]}"; do
      # shellcheck disable=SC2086
      "$OPT" "$REAL/$m.mlir" ${PREPARE[$m]} --soap-append-loss=loss=softmax-xent -o "$work/m.mlir"
      for s in "${strategies[@]}"; do
        for n in 2 4; do row "$m (export)" "$s" "$n"; done
      done
    done
  fi
  echo
  echo "$agree of $total strategies agree exactly; $differ communication steps"
  echo "differ in all (those only the program has plus those only the"
  echo "simulator has)."
} > "$out"
echo "wrote $out ($agree of $total agree, $differ steps differ)"

#!/usr/bin/env bash
# Every model of ../shared/realmodels through the documented path
# (docs/real-models.md): lift, resize the batch, build the training step,
# compile, train on one device (the loss must be finite and fall), then
# append the loss, search a strategy for 4 devices, partition, run it on
# 4 MPI ranks and compare every loss and every parameter with the single
# device (1e-4;
# where a second single-device run that sums in another order (SOAP_DNNL=0:
# im2col + GEMM convolutions, and OpenBLAS on another number of threads,
# which splits its sums differently) differs from the first by more,
# within 4x that difference:
# test/Passes/partition/Inputs/compare_runs.py).
# Models the path refuses are listed with the refusal. Writes
# bench/results/realmodels.md.
#
#   bench/realmodels.sh [--build DIR] [--steps N] [--ranks N]
#                       [--models "lenet resnet18 ..."] [--keep DIR]
#
# The default list leaves out mobilebert: its 24 layers take about 15
# minutes on this machine (compiling it twice, the search and partition,
# 4-rank steps of 15-36 s); name it with --models.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build
STEPS=3
RANKS=4
MODELS="lenet squeezenet1_1 resnet18 resnet50_nhwc mobilenet_v3_small bert_hf llama_ffn_sublayer jax_mlp_loss linreg_train_step gqa_attention_tosa"
KEEP=""
while [ $# -gt 0 ]; do
  case $1 in
    --build) BUILD=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    --ranks) RANKS=$2; shift 2 ;;
    --models) MODELS=$2; shift 2 ;;
    --keep) KEEP=$2; shift 2 ;;
    *) echo "usage: $0 [--build DIR] [--steps N] [--ranks N] [--models LIST] [--keep DIR]" >&2; exit 2 ;;
  esac
done
REAL=$ROOT/../shared/realmodels
[ -d "$REAL" ] || { echo "no $REAL" >&2; exit 1; }
export PATH=$BUILD/bin:$PATH
WORK=${KEEP:-$(mktemp -d)}
mkdir -p "$WORK"
[ -n "$KEEP" ] || trap 'rm -rf "$WORK"' EXIT
MPIRUN="mpirun --oversubscribe"
[ "$(id -u)" -ne 0 ] || MPIRUN="$MPIRUN --allow-run-as-root"
COMPARE=$ROOT/test/Passes/partition/Inputs/compare_runs.py
# The first single-device run uses OpenBLAS's default threads (one per
# core); the second another count.
OTHER_THREADS=1
[ "$(nproc)" -gt 1 ] || OTHER_THREADS=2

# The documented commands per model: the exporter, how the export becomes
# a model with parameters (prepare), and the training step's options.
# "refuse" runs the preparation and expects the named refusal.
declare -A EXPORTER PREPARE TRAIN
EXPORTER[lenet]=torch-mlir;         PREPARE[lenet]='--soap-lift-params --soap-set-batch=4'
EXPORTER[squeezenet1_1]=torch-mlir; PREPARE[squeezenet1_1]='--soap-lift-params --soap-set-batch=4'
EXPORTER[resnet18]=torch-mlir;      PREPARE[resnet18]='--soap-lift-params --soap-set-batch=4'
EXPORTER[mobilenet_v3_small]=torch-mlir; PREPARE[mobilenet_v3_small]='--soap-lift-params --soap-set-batch=4'
EXPORTER[bert_hf]=torch-mlir;       PREPARE[bert_hf]='--soap-lift-params=elided-integers=iota --soap-set-batch=4'
EXPORTER[llama_ffn_sublayer]=torch-mlir; PREPARE[llama_ffn_sublayer]='--soap-lift-params'
EXPORTER[resnet50_nhwc]="Keras via IREE-style linalg"; PREPARE[resnet50_nhwc]='--soap-lift-params --soap-set-batch=4'
EXPORTER[mobilebert]="IREE (TensorFlow)"; PREPARE[mobilebert]='--soap-lift-params=init=seed'
EXPORTER[jax_mlp_loss]="JAX (StableHLO to linalg)"; PREPARE[jax_mlp_loss]='--soap-lift-params=params=0-11 --soap-set-batch="batch=8 rescale-means=1"'
EXPORTER[linreg_train_step]="torch-mlir (a whole training step)"; PREPARE[linreg_train_step]='func=forward params=0,1 labels=3 loss=2'
EXPORTER[gqa_attention_tosa]=TOSA
for m in lenet squeezenet1_1 resnet18 mobilenet_v3_small bert_hf resnet50_nhwc; do
  TRAIN[$m]='loss=softmax-xent optimizer=sgd lr=0.01'
done
TRAIN[llama_ffn_sublayer]='loss=mse optimizer=sgd lr=0.01'
TRAIN[mobilebert]='loss=softmax-xent result=all optimizer=sgd lr=0.001'
TRAIN[jax_mlp_loss]='optimizer=sgd lr=0.01'

falling() { python3 - "$1" <<'EOF'
import math, re, sys
l = [float(x) for x in re.findall(r'^step=\d+ loss=(\S+)', open(sys.argv[1]).read(), re.M)]
ok = len(l) >= 2 and all(math.isfinite(x) for x in l) and all(a > b for a, b in zip(l, l[1:]))
print(" -> ".join("%.5g" % x for x in l))
sys.exit(0 if ok else 1)
EOF
}

# One model through its path; its table row goes to $WORK/$m.row. Run in
# a subshell with set -e: the first failing command ends the model.
one_model() {
  local m=$1 src=$REAL/$1.mlir
  case $m in
    linreg_train_step)
      # Already a training step: it is marked, not differentiated.
      soap-opt "$src" --soap-mark-train-step="${PREPARE[$m]}" --soap-lower-cpu 2> "$WORK/$m.err" \
        | soap-translate --soap-to-executable -o "$WORK/$m.exe" 2>> "$WORK/$m.err"
      "$WORK/$m.exe" --steps "$STEPS" > "$WORK/$m.out"
      losses=$(falling "$WORK/$m.out" || echo "NOT FALLING")
      echo "| $m | ${EXPORTER[$m]} | \`--soap-mark-train-step=\"${PREPARE[$m]}\"\` | $losses | not partitioned (no configs on a marked step) |" > "$WORK/$m.row"
      return ;;
    gqa_attention_tosa)
      soap-opt "$src" --pass-pipeline="builtin.module(tosa-to-linalg-pipeline,func.func(tosa-to-tensor,tosa-to-arith,convert-elementwise-to-linalg),canonicalize)" -o "$WORK/$m.linalg.mlir"
      if soap-opt "$WORK/$m.linalg.mlir" --soap-lift-params --soap-set-batch=4 -o "$WORK/$m.mlir" 2> "$WORK/$m.err"; then
        echo "| $m | ${EXPORTER[$m]} | TOSA pipeline, lift, set-batch | unexpectedly accepted | |" > "$WORK/$m.row"
      else
        reason=$(grep -m1 -o "error: .*" "$WORK/$m.err" | cut -c8-160)
        echo "| $m | ${EXPORTER[$m]} | TOSA pipeline; refused: $reason | (an attention kernel without weights) | |" > "$WORK/$m.row"
      fi
      return ;;
  esac
  # The options are quoted as in the docs: eval splits them as a shell would.
  eval soap-opt '"$src"' "${PREPARE[$m]}" -o '"$WORK/$m.mlir"' 2> "$WORK/$m.prep.err"
  soap-opt "$WORK/$m.mlir" --soap-training-step="${TRAIN[$m]}" --soap-lower-cpu 2> "$WORK/$m.err" \
    | soap-translate --soap-to-executable -o "$WORK/$m.exe" 2>> "$WORK/$m.err"
  start=$(date +%s)
  "$WORK/$m.exe" --steps "$STEPS" --save "$WORK/$m.ckpt" > "$WORK/$m.out"
  seconds=$(( $(date +%s) - start ))
  losses=$(falling "$WORK/$m.out" || echo "NOT FALLING")
  SOAP_DNNL=0 OPENBLAS_NUM_THREADS=$OTHER_THREADS "$WORK/$m.exe" --steps "$STEPS" \
      --save "$WORK/$m.other.ckpt" > "$WORK/$m.other.out"
  # As docs/real-models.md searches: the loss appended first (its loss=
  # and result= options), so that the search prices the loss's ops and
  # gives them configs; the training step then takes the rest.
  local loss=() step=() word
  for word in ${TRAIN[$m]}; do
    case $word in loss=*|result=*) loss+=("$word") ;; *) step+=("$word") ;; esac
  done
  local append=()
  [ ${#loss[@]} -eq 0 ] || append=(--soap-append-loss="${loss[*]}")
  soap-opt "$WORK/$m.mlir" "${append[@]}" \
      --soap-search="machine=p100-4x4 devices=$RANKS budget=2000 seed=1" \
      --soap-training-step="${step[*]}" --soap-partition --soap-lower-cpu 2> "$WORK/$m.search.err" \
    | soap-translate --soap-to-executable -o "$WORK/$m.part.exe" 2>> "$WORK/$m.search.err"
  speedup=$(grep -o "[0-9.]*x data parallel" "$WORK/$m.search.err" | head -1)
  $MPIRUN -np "$RANKS" "$WORK/$m.part.exe" --steps "$STEPS" --save "$WORK/$m.part.ckpt" > "$WORK/$m.part.out"
  compared=$(python3 "$COMPARE" 1e-4 "$WORK/$m.out" "$WORK/$m.ckpt" "$WORK/$m.part.out" "$WORK/$m.part.ckpt" \
      "$WORK/$m.other.out" "$WORK/$m.other.ckpt" || true)
  echo "| $m | ${EXPORTER[$m]} | \`${PREPARE[$m]} --soap-training-step=\"${TRAIN[$m]}\"\` | $losses (${seconds} s for $STEPS steps) | searched on $RANKS ranks${loss:+ with the loss appended} ($speedup simulated): $compared |" > "$WORK/$m.row"
}

rows=()
kept=()
failed=0
for m in $MODELS; do
  [ -f "$REAL/$m.mlir" ] || { echo "no model $m" >&2; exit 1; }
  echo "== $m" >&2
  set +e
  ( set -e; one_model "$m" )
  rc=$?
  set -e
  if [ $rc -eq 0 ]; then
    rows+=("$(cat "$WORK/$m.row")")
    if grep -q "FAIL\|NOT FALLING" "$WORK/$m.row"; then failed=1; fi
  else
    reason=$(cat "$WORK/$m".*err 2>/dev/null | grep -m1 -o "error: .*" | cut -c8-200 || true)
    rows+=("| $m | ${EXPORTER[$m]} | FAILED: ${reason:-exit status $rc} | | |")
    failed=1
  fi
done

OUT=$ROOT/bench/results/realmodels.md
# Rows of models not run this time stay as the last run left them (their
# date is in a note under the table).
if [ -f "$OUT" ]; then
  while IFS= read -r row; do
    m=$(echo "$row" | cut -d'|' -f2 | tr -d ' ')
    case " $MODELS " in *" $m "*) ;; *) kept+=("$row") ;; esac
  done < <(grep '^| [a-z]' "$OUT" | grep -v '^| model |')
fi
{
  echo "# Real exports: one device, and a searched strategy on $RANKS MPI ranks"
  echo
  echo "\`bench/realmodels.sh\` on $(date -u +%Y-%m-%d) ($(nproc) cores): $STEPS SGD steps each, the"
  echo "documented path of docs/real-models.md; the partitioned run is compared"
  echo "with the single-device run (every loss and every saved tensor, 1e-4, or"
  echo "within 4x the difference between two single-device runs that sum in"
  echo "different orders (oneDNN against im2col + GEMM convolutions, and OpenBLAS on"
  echo "$(nproc) against $OTHER_THREADS threads), where that is larger)."
  echo
  echo "| model | exporter | commands | single-device losses | partitioned |"
  echo "| --- | --- | --- | --- | --- |"
  printf '%s\n' "${rows[@]}"
  if [ ${#kept[@]} -gt 0 ]; then
    printf '%s\n' "${kept[@]}"
    echo
    echo "Rows after the first $(echo $MODELS | wc -w) are from an earlier run of this script."
  fi
} > "$OUT"
cat "$OUT"
exit $failed

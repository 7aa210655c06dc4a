#!/usr/bin/env bash
# SOAP's training step against PyTorch eager's, measured in one run on
# this machine: the same architecture and sizes (soap-zoo and its twins in
# bench/pytorch_baseline.py, which takes the same options), SGD (lr 0.01),
# the median step of --steps steps after warm-up, and the peak resident
# memory of each process. Writes bench/results/vs-pytorch.md with
#
#   1. one thread: SOAP's one-device executable with OPENBLAS_NUM_THREADS=1
#      against PyTorch with torch.set_num_threads(1); the parameter count
#      of both (from SOAP's `--print-model` and the twin's `--params`; a
#      difference is marked in the table);
#   2. --ranks N (default 2) processes of one thread each, the same global
#      batch: SOAP's searched strategy (--soap-search on machines/cpu-local
#      with N devices, --soap-partition) under mpirun against PyTorch's
#      DistributedDataParallel (gloo, N processes of batch / N). Left out,
#      with a line saying so, without mpirun or with --ranks 1;
#   3. the losses of steps 1 and 3 of SOAP (one device, and N ranks) and
#      PyTorch from the same weights on the same batch: SOAP's executable
#      saves its initial parameters (--steps 0 --save), the twin loads them
#      (the zoo's layouts and order), writes its batch as a --data file and
#      trains 3 steps on it; SOAP trains 3 steps from both (--load --data).
#      Step 1 checks the forward pass, step 3 the gradients and updates.
#
#   bench/vs-pytorch.sh [--build DIR] [--steps N] [--rounds N] [--ranks N]
#                       [--cases "bert gpt2 nmt"]
#
# --rounds N (default 3): the one-thread steps are measured N times, SOAP
# and PyTorch in turn, and each side's fastest median is reported: this
# machine's speed drifts by tens of percent over minutes, which one run of
# each side can catch on one side only.
#
# Cases (--cases; default all): mlp resnet18 resnet50-narrow bert rnnlm gpt2
# nmt alexnet inception_v3 vgg16, at sizes where one step takes well under a
# second on one core; and the torch-mlir exports of torchvision models in
# ../shared/realmodels/ (resnet18.mlir squeezenet1_1.mlir
# mobilenet_v3_small.mlir) through the documented path of
# docs/real-models.md (--soap-lift-params --soap-set-batch=4), against
# torchvision's model at batch 4 (Debian's python3-torchvision, installed
# here when missing). The loss check loads the export's parameters into
# torchvision's model by shape (bench/pytorch_baseline.py, load_by_shape).
#
# PyTorch comes from Debian's python3-torch, installed here when missing
# (benchmarks only; the build and the tests never need it). Where it cannot
# be installed, the PyTorch columns say so and SOAP's are still measured.
# A model that SOAP fails to compile or run gets a row saying so (its
# error on stderr), and the other cases go on.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build
STEPS=10
ROUNDS=3
RANKS=2
CASES="mlp resnet18 resnet50-narrow bert rnnlm gpt2 nmt alexnet inception_v3 vgg16 resnet18.mlir squeezenet1_1.mlir mobilenet_v3_small.mlir"
while [ $# -gt 0 ]; do
  case $1 in
    --build) BUILD=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --ranks) RANKS=$2; shift 2 ;;
    --cases) CASES=$2; shift 2 ;;
    *) echo "usage: $0 [--build DIR] [--steps N] [--rounds N] [--ranks N] [--cases LIST]" >&2; exit 2 ;;
  esac
done
export PATH=$BUILD/bin:$PATH
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# Each case: the zoo model and its options. The PyTorch twin takes the same
# options (TORCH[case] only where it would need others).
declare -A ZOO TORCH LABEL
ZOO[mlp]="mlp --batch 64"
ZOO[resnet18]="resnet50 --depth 18 --image 64 --batch 8"
ZOO[resnet50-narrow]="resnet50 --width 32 --image 64 --batch 4"
ZOO[bert]="bert-base --hidden 256 --layers 2 --heads 4 --seq 64 --batch 8"
ZOO[rnnlm]="rnnlm --vocab 2000 --embed 256 --hidden 256 --seq 10 --batch 16"
ZOO[gpt2]="gpt2 --hidden 128 --layers 2 --heads 4 --seq 64 --max-pos 64 --vocab 2000 --batch 4"
ZOO[nmt]="nmt --vocab 2000 --embed 256 --hidden 256 --seq 10 --batch 16"
ZOO[alexnet]="alexnet --image 64 --width 32 --hidden 512 --classes 100 --batch 8"
ZOO[inception_v3]="inception_v3 --image 139 --width 8 --classes 100 --batch 4"
ZOO[vgg16]="vgg16 --image 32 --width 16 --hidden 256 --classes 100 --batch 8"
# Real exports: ZOO[case] holds the soap-opt options that prepare them for
# training, TORCH[case] their torchvision twin.
REAL_DIR=$ROOT/../shared/realmodels
for m in resnet18 squeezenet1_1 mobilenet_v3_small; do
  ZOO[$m.mlir]="--soap-lift-params --soap-set-batch=4"
  TORCH[$m.mlir]="torchvision-$m --batch 4"
  LABEL[$m.mlir]="realmodels/$m.mlir (torch-mlir), batch 4"
done
for c in $CASES; do
  [ -n "${ZOO[$c]:-}" ] || { echo "vs-pytorch: no case '$c' (one of ${!ZOO[*]})" >&2; exit 2; }
  LABEL[$c]=${LABEL[$c]:-${ZOO[$c]}}
done
is_real() { case $1 in *.mlir) return 0 ;; esac; return 1; }

# Debian's PyTorch is a module of Debian's Python, which may not be the
# python3 first on PATH.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
have_torch=1
# PyTorch, and torchvision where a real export's twin needs it.
packages=python3-torch; modules="import torch"
case " $CASES " in
  *.mlir\ *) packages="$packages python3-torchvision"
              modules="$modules, torchvision" ;;
esac
if ! $PY -c "$modules" 2>/dev/null; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  echo "vs-pytorch: installing $packages from Debian" >&2
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
    --no-install-recommends $packages >&2 || true
  if ! $PY -c 'import torch' 2>/dev/null; then
    have_torch=0
    echo "vs-pytorch: PyTorch is not available; measuring SOAP alone" >&2
  elif ! $PY -c "$modules" 2>/dev/null; then
    echo "vs-pytorch: torchvision is not available; the real exports' PyTorch columns stay empty" >&2
  fi
fi
have_mpi=0
if [ "$RANKS" -gt 1 ]; then
  if command -v mpirun > /dev/null; then
    have_mpi=1
  else
    echo "vs-pytorch: no mpirun; the $RANKS-rank table is left out" >&2
  fi
fi
MPIRUN=(mpirun --allow-run-as-root --oversubscribe -np "$RANKS")
export OPENBLAS_NUM_THREADS=1
TORCH_PY=("$PY" "$ROOT/bench/pytorch_baseline.py")

field() { sed -n "s/.*$1=\([0-9.eE+-]*\).*/\1/p" | tail -1; }
calc() { python3 -c "print($1)"; }
# The losses of the first and the last step a SOAP run printed.
losses() { sed -n 's/^step=[0-9]* loss=\([^ ]*\).*/\1/p' | sed -n '1p;$p' | paste -sd' '; }
# Relative difference of two numbers, or nothing unless both are numbers.
reldiff() {
  case "$1 $2" in
    *[0-9]\ *[0-9]) calc "f'{abs($1 - $2) / abs($2):.1e}'" ;;
  esac
}
# Runs a command with its output in file $1; prints its peak resident
# memory in KiB (GNU time's %M), or nothing without /usr/bin/time.
run_measured() {
  local out=$1; shift
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -f 'peak_rss_kib=%M' -o "$out.time" "$@" > "$out"
    sed -n 's/peak_rss_kib=\([0-9]*\)/\1/p' "$out.time" | tail -1
  else
    "$@" > "$out"
  fi
}
# The parameters an executable trains (its --print-model: the whole shape
# of each argument with role "param").
soap_params() {
  "$1" --print-model | python3 -c '
import json, math, sys
args = json.load(sys.stdin)["args"]
print(sum(math.prod(a.get("global_shape", a["shape"])) for a in args
          if a["role"] == "param"))'
}
# The module of case $1 on stdout: the zoo model, or the real export
# prepared for training.
model() {
  # shellcheck disable=SC2086
  if is_real "$1"; then
    soap-opt "$REAL_DIR/$1" ${ZOO[$1]}
  else
    soap-zoo ${ZOO[$1]}
  fi
}
# The names an executable gives its inputs and labels, comma-separated
# (its --print-model), for the twin's --data-names.
data_names() {
  "$1" --print-model | python3 -c '
import json, sys
args = json.load(sys.stdin)["args"]
print(",".join([a["name"] for a in args if a["role"] == "input"] +
               [a["name"] for a in args if a["role"] == "label"]))'
}
# Compiles case $1 (through the soap-opt passes $3...) into $2; on
# failure prints the error to stderr and returns 1.
compile() {
  local c=$1 exe=$2; shift 2
  if ! { model "$c" | soap-opt "$@" |
         soap-translate --soap-to-executable -o "$exe"; } 2> "$exe.err"; then
    echo "vs-pytorch: $c: SOAP failed to compile:" >&2
    tail -5 "$exe.err" >&2
    return 1
  fi
}
TRAIN="optimizer=sgd lr=0.01"
# A real export returns logits: the training step appends the loss the
# twin computes (the zoo's models end in theirs).
train_options() {
  if is_real "$1"; then echo "loss=softmax-xent $TRAIN"; else echo "$TRAIN"; fi
}
CHECK=3  # steps of the loss check

T1=$WORK/one.rows; T2=$WORK/ranks.rows; TL=$WORK/loss.rows
: > "$T1"; : > "$T2"; : > "$TL"
for c in $CASES; do
  torch_opts=${TORCH[$c]:-${ZOO[$c]}}
  if is_real "$c" && [ ! -f "$REAL_DIR/$c" ]; then
    echo "vs-pytorch: $c: no $REAL_DIR/$c; left out" >&2
    continue
  fi
  echo "vs-pytorch: $c (${LABEL[$c]})" >&2
  exe=$WORK/$c.exe
  soap_ms=""; soap_mib=""; params=""; soap_losses="failed failed"
  train=$(train_options "$c")
  if compile "$c" "$exe" --soap-training-step="$train" --soap-lower-cpu; then
    params=$(soap_params "$exe")
    if soap_kib=$(run_measured "$WORK/$c.soap" "$exe" --warmup 2 --steps "$STEPS"); then
      soap_ms=$(field median_ms < "$WORK/$c.soap")
      [ -z "$soap_kib" ] || soap_mib=$(calc "f'{$soap_kib / 1024:.1f}'")
    else
      soap_ms="failed to run"
      echo "vs-pytorch: $c: SOAP's executable failed" >&2
    fi
  else
    soap_ms="failed to compile"
  fi
  torch_ms=""; torch_mib=""; ratio=""; torch_losses=""
  twin=$have_torch
  if is_real "$c" && ! $PY -c 'import torchvision' 2>/dev/null; then twin=0; fi
  if [ "$twin" -eq 1 ]; then
    # shellcheck disable=SC2086
    torch_params=$("${TORCH_PY[@]}" $torch_opts --params | field params)
    if [ -n "$params" ] && [ "$params" != "$torch_params" ]; then
      echo "vs-pytorch: $c: SOAP trains $params parameters, the PyTorch twin $torch_params" >&2
      params="$params (PyTorch: $torch_params)"
    fi
    [ -n "$params" ] || params="PyTorch: $torch_params"
    # shellcheck disable=SC2086
    "${TORCH_PY[@]}" $torch_opts --device cpu --threads 1 --warmup 2 \
      --steps "$STEPS" --peak-rss > "$WORK/$c.torch"
    torch_ms=$(field median_ms < "$WORK/$c.torch")
    torch_mib=$(field peak_rss_mib < "$WORK/$c.torch")
    # Rounds 2..$ROUNDS, SOAP and PyTorch in turn: each side's fastest
    # median (the machine's speed drifts by tens of percent over minutes).
    for _ in $(seq 2 "$ROUNDS"); do
      case $soap_ms in
        *[0-9]) again=$("$exe" --warmup 2 --steps "$STEPS" | field median_ms)
                soap_ms=$(calc "min($soap_ms, ${again:-$soap_ms})") ;;
      esac
      # shellcheck disable=SC2086
      again=$("${TORCH_PY[@]}" $torch_opts --device cpu --threads 1 --warmup 2 \
                --steps "$STEPS" | field median_ms)
      torch_ms=$(calc "min($torch_ms, ${again:-$torch_ms})")
    done
    case $soap_ms in
      *[0-9]) ratio=$(calc "f'{$soap_ms / $torch_ms:.2f}'") ;;
    esac
    # $CHECK steps from the same weights on the same batch.
    if [ -n "$params" ] && [ -x "$exe" ] &&
       "$exe" --steps 0 --save "$WORK/$c.init" > /dev/null; then
      # shellcheck disable=SC2086
      if "${TORCH_PY[@]}" $torch_opts --threads 1 --soap-init "$WORK/$c.init" \
           --write-data "$WORK/$c.data" --data-names "$(data_names "$exe")" \
           --check-steps "$CHECK" > "$WORK/$c.check"; then
        torch_losses="$(field first_loss < "$WORK/$c.check") $(field last_loss < "$WORK/$c.check")"
        soap_losses=$("$exe" --load "$WORK/$c.init" --data "$WORK/$c.data" \
          --steps "$CHECK" | losses) || soap_losses="failed failed"
      else
        echo "vs-pytorch: $c: the twin cannot take SOAP's parameters; no loss check" >&2
      fi
    fi
  fi
  echo "| ${LABEL[$c]} | $params | $soap_ms | $torch_ms | $ratio | $soap_mib | $torch_mib |" >> "$T1"

  # N ranks: SOAP's searched strategy against DistributedDataParallel.
  ranks_losses="- -"
  if [ "$have_mpi" -eq 1 ]; then
    pexe=$WORK/$c.part.exe
    part_ms=""; part_mib=""; ddp_ms=""; ddp_mib=""; ratio=""
    if compile "$c" "$pexe" \
         --soap-search="machine=cpu-local devices=$RANKS budget=2000 seed=1" \
         --soap-training-step="$train" --soap-partition --soap-lower-cpu; then
      if "${MPIRUN[@]}" "$pexe" --warmup 2 --steps "$STEPS" > "$WORK/$c.part" 2> "$WORK/$c.part.err"; then
        part_ms=$(field median_ms < "$WORK/$c.part")
        part_mib=$(field peak_rss_mb < "$WORK/$c.part")
      else
        part_ms="failed to run"
        echo "vs-pytorch: $c: SOAP's $RANKS-rank executable failed:" >&2
        tail -5 "$WORK/$c.part.err" >&2
      fi
      if [ -f "$WORK/$c.data" ]; then
        ranks_losses=$("${MPIRUN[@]}" "$pexe" --load "$WORK/$c.init" \
          --data "$WORK/$c.data" --steps "$CHECK" 2> /dev/null | losses) ||
          ranks_losses="failed failed"
      fi
    else
      part_ms="failed to compile"
    fi
    if [ "$twin" -eq 1 ]; then
      # shellcheck disable=SC2086
      "${TORCH_PY[@]}" $torch_opts --ddp "$RANKS" --threads 1 --warmup 2 \
        --steps "$STEPS" --peak-rss > "$WORK/$c.ddp"
      ddp_ms=$(field median_ms < "$WORK/$c.ddp")
      ddp_mib=$(field peak_rss_mib < "$WORK/$c.ddp")
      case $part_ms in
        *[0-9]) ratio=$(calc "f'{$part_ms / $ddp_ms:.2f}'") ;;
      esac
    fi
    echo "| ${LABEL[$c]} | $part_ms | $ddp_ms | $ratio | $part_mib | $ddp_mib |" >> "$T2"
  fi

  if [ -n "$torch_losses" ]; then
    read -r s1 sN <<< "$soap_losses"
    read -r r1 rN <<< "$ranks_losses"
    read -r t1 tN <<< "$torch_losses"
    line="first-step loss: SOAP $s1, PyTorch $t1"
    [ "$r1" = "-" ] || line="$line, SOAP on $RANKS ranks $r1"
    echo "vs-pytorch: $c: $line" >&2
    echo "vs-pytorch: $c: step-$CHECK loss: SOAP $sN, PyTorch $tN$([ "$rN" = "-" ] || echo ", SOAP on $RANKS ranks $rN")" >&2
    echo "| ${LABEL[$c]} | $s1 | $r1 | $t1 | $(reldiff "$s1" "$t1") | $sN | $rN | $tN | $(reldiff "$sN" "$tN") |" >> "$TL"
  fi
done

OUT=$ROOT/bench/results/vs-pytorch.md
mkdir -p "$(dirname "$OUT")"
{
  echo "# SOAP against PyTorch eager on the CPU"
  echo
  echo "Measured by \`bench/vs-pytorch.sh\` on $(date -u +%Y-%m-%d): $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores."
  echo "SOAP: \`--soap-training-step\` (SGD, lr 0.01), \`--soap-lower-cpu\`, OPENBLAS_NUM_THREADS=1."
  if [ "$have_torch" -eq 1 ]; then
    echo "PyTorch $($PY -c 'import torch; print(torch.__version__)') eager (Debian python3-torch), torch.set_num_threads(1), SGD lr 0.01;"
    echo "the twins in \`bench/pytorch_baseline.py\` take the zoo's options."
  else
    echo "PyTorch: not available (python3-torch could not be installed); its columns are empty."
  fi
  echo "Median step over $STEPS steps after 2 warm-up steps (one thread: the fastest of $ROUNDS such medians, SOAP and PyTorch"
  echo "measured in turn); peak resident memory of the whole process."
  echo
  echo "## One thread"
  echo
  echo "| model (zoo options) | parameters | SOAP ms | PyTorch ms | SOAP / PyTorch | SOAP MiB | PyTorch MiB |"
  echo "| --- | --- | --- | --- | --- | --- | --- |"
  cat "$T1"
  echo
  echo "## $RANKS processes of one thread"
  echo
  if [ "$RANKS" -le 1 ]; then
    echo "Not measured (--ranks $RANKS)."
  elif [ "$have_mpi" -eq 0 ]; then
    echo "Not measured: mpirun is not installed."
  else
    echo "The same global batch on $RANKS processes. SOAP: the strategy \`--soap-search=\"machine=cpu-local devices=$RANKS budget=2000 seed=1\"\` finds,"
    echo "\`--soap-partition\`, \`mpirun -np $RANKS\`; a step is the slowest rank's, the memory the largest rank's peak."
    echo "PyTorch: DistributedDataParallel (gloo on 127.0.0.1), each process batch / $RANKS; a step is the slowest process's."
    echo "Batch norm differs: SOAP's partitioned model keeps the one-device"
    echo "semantics (statistics over the whole batch), DDP normalises each process's samples."
    echo
    echo "| model (zoo options) | SOAP ms | DDP ms | SOAP / DDP | SOAP MiB | DDP MiB |"
    echo "| --- | --- | --- | --- | --- | --- |"
    cat "$T2"
  fi
  echo
  echo "## Losses from the same weights and batch"
  echo
  if [ -s "$TL" ]; then
    echo "SOAP's initial parameters (\`--steps 0 --save\`) loaded into the PyTorch twin, and the twin's batch"
    echo "written as SOAP's \`--data\`; the loss each computes on step 1 and step $CHECK of SGD on that batch"
    echo "(SOAP: one device and, where measured, the searched strategy on $RANKS ranks; the difference: one device against PyTorch)."
    echo
    echo "| model (zoo options) | step 1 SOAP | SOAP, $RANKS ranks | PyTorch | difference | step $CHECK SOAP | SOAP, $RANKS ranks | PyTorch | difference |"
    echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    cat "$TL"
  else
    echo "Not checked (PyTorch is not available, or no SOAP executable was built)."
  fi
} > "$OUT"
cat "$OUT"

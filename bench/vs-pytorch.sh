#!/usr/bin/env bash
# SOAP's one-thread training step against PyTorch eager's, measured in one
# run on this machine: the same architecture and sizes (soap-zoo and
# bench/pytorch_baseline.py), SGD, the median step of --steps steps after
# warm-up, and the peak resident memory of each process. SOAP's executable
# runs with OPENBLAS_NUM_THREADS=1, PyTorch with torch.set_num_threads(1).
# Writes bench/results/vs-pytorch.md.
#
#   bench/vs-pytorch.sh [--build DIR] [--steps N] [--cases "bert rnnlm"]
#
# PyTorch comes from Debian's python3-torch, installed here when missing
# (benchmarks only; the build and the tests never need it). Where it cannot
# be installed, the PyTorch columns say so and SOAP's are still measured.
#
# Covered so far: ResNet-18 and a narrow ResNet-50 (convolutions), BERT
# and the LSTM language model (embeddings). GPT-2, NMT and the 2-rank
# comparison against DistributedDataParallel are still to be added (see
# the open issue "Per-device speed at library level").
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build
STEPS=10
CASES="resnet18 resnet50-narrow bert rnnlm"
while [ $# -gt 0 ]; do
  case $1 in
    --build) BUILD=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    --cases) CASES=$2; shift 2 ;;
    *) echo "usage: $0 [--build DIR] [--steps N] [--cases LIST]" >&2; exit 2 ;;
  esac
done
export PATH=$BUILD/bin:$PATH
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# Each case: the zoo model and its options, and the same model for PyTorch.
declare -A ZOO TORCH
ZOO[resnet18]="resnet50 --depth 18 --image 64 --batch 8"
TORCH[resnet18]="resnet50 --depth 18 --image 64 --batch 8"
ZOO[resnet50-narrow]="resnet50 --width 32 --image 64 --batch 4"
TORCH[resnet50-narrow]="resnet50 --width 32 --image 64 --batch 4"
ZOO[bert]="bert-base --hidden 256 --layers 2 --heads 4 --seq 64 --batch 8"
TORCH[bert]="bert-base --hidden 256 --layers 2 --heads 4 --seq 64 --batch 8"
ZOO[rnnlm]="rnnlm --vocab 2000 --embed 256 --hidden 256 --seq 10 --batch 16"
TORCH[rnnlm]="rnnlm --vocab 2000 --embed 256 --hidden 256 --seq 10 --batch 16"

# Debian's PyTorch is a module of Debian's Python, which may not be the
# python3 first on PATH.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
have_torch=1
if ! $PY -c 'import torch' 2>/dev/null; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  echo "vs-pytorch: installing python3-torch from Debian" >&2
  if ! (DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
          --no-install-recommends python3-torch >&2) ||
     ! $PY -c 'import torch' 2>/dev/null; then
    have_torch=0
  fi
fi

field() { sed -n "s/.*$1=\([0-9.eE+-]*\).*/\1/p" | tail -1; }
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

OUT=$ROOT/bench/results/vs-pytorch.md
mkdir -p "$(dirname "$OUT")"
{
  echo "# SOAP against PyTorch eager, one thread"
  echo
  echo "Measured by \`bench/vs-pytorch.sh\` on $(date -u +%Y-%m-%d): $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores."
  echo "SOAP: \`--soap-training-step\` (SGD, lr 0.01), \`--soap-lower-cpu\`, OPENBLAS_NUM_THREADS=1."
  if [ "$have_torch" -eq 1 ]; then
    echo "PyTorch $($PY -c 'import torch; print(torch.__version__)') eager (Debian python3-torch), torch.set_num_threads(1), SGD lr 0.01."
  else
    echo "PyTorch: not available (python3-torch could not be installed); its columns are empty."
  fi
  echo "Median step over $STEPS steps after warm-up; peak resident memory of the whole process."
  echo
  echo "| model (zoo options) | SOAP ms | PyTorch ms | SOAP / PyTorch | SOAP MiB | PyTorch MiB |"
  echo "| --- | --- | --- | --- | --- | --- |"
} > "$OUT"

for c in $CASES; do
  [ -n "${ZOO[$c]:-}" ] || { echo "vs-pytorch: no case '$c'" >&2; exit 2; }
  # shellcheck disable=SC2086
  soap-zoo ${ZOO[$c]} | soap-opt --soap-training-step="optimizer=sgd lr=0.01" \
    --soap-lower-cpu | soap-translate --soap-to-executable -o "$WORK/$c.exe"
  export OPENBLAS_NUM_THREADS=1
  soap_kib=$(run_measured "$WORK/$c.soap" "$WORK/$c.exe" --warmup 2 --steps "$STEPS")
  soap_ms=$(field median_ms < "$WORK/$c.soap")
  torch_ms=""; torch_mib=""; ratio=""
  if [ "$have_torch" -eq 1 ]; then
    # shellcheck disable=SC2086
    $PY "$ROOT/bench/pytorch_baseline.py" ${TORCH[$c]} --device cpu \
      --threads 1 --warmup 2 --steps "$STEPS" --peak-rss > "$WORK/$c.torch"
    torch_ms=$(field median_ms < "$WORK/$c.torch")
    torch_mib=$(field peak_rss_mib < "$WORK/$c.torch")
    ratio=$(python3 -c "print(f'{$soap_ms / $torch_ms:.2f}')")
  fi
  soap_mib=""
  [ -z "$soap_kib" ] || soap_mib=$(python3 -c "print(f'{$soap_kib / 1024:.1f}')")
  echo "| ${ZOO[$c]} | $soap_ms | $torch_ms | $ratio | $soap_mib | $torch_mib |" >> "$OUT"
done
cat "$OUT"

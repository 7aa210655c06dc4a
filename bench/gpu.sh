#!/usr/bin/env bash
# GPU benchmarks (issue 7), for a machine with an NVIDIA GPU (the device
# tool's H100/H200 machines; PyTorch installed there). For resnet50 and
# bert-base at batch 64 (the zoo's models), under each math mode of
# --maths (default "f32 tf32"):
#   1. SOAP: soap-zoo | soap-opt --soap-training-step --soap-lower-gpu=math=M
#      | soap-translate --soap-to-executable, run for --steps steps after
#      --warmup (the driver's median_ms);
#   2. PyTorch eager: the same model, batch and math mode
#      (bench/pytorch_baseline.py), median over the same number of steps;
#   3. the simulator: --soap-simulate on machines/$MACHINE with 1 device
#      (roofline, or --profile DB for a soap-profile database of the GPU);
# and first cuBLAS's matmul throughput in each math mode against the
# machine file's dense peak (soap-profile --device gpu --calibrate);
# and writes bench/results/gpu.md: SOAP / PyTorch as a ratio (lower is
# better for SOAP) and simulated vs measured, all from this one run.
#
#   bench/gpu.sh [--build DIR] [--steps N] [--warmup N] [--maths "f32 tf32"]
#                [--models "resnet50 bert-base"] [--batch N]
#                [--machine h100-8.json] [--profile DB] [--out FILE]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build
STEPS=20
WARMUP=5
MATHS="f32 tf32"
MODELS="resnet50 bert-base"
BATCH=64
MACHINE=h100-8.json
PROFILE=""
OUT=$ROOT/bench/results/gpu.md
while [ $# -gt 0 ]; do
  case $1 in
    --build) BUILD=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    --warmup) WARMUP=$2; shift 2 ;;
    --maths) MATHS=$2; shift 2 ;;
    --models) MODELS=$2; shift 2 ;;
    --batch) BATCH=$2; shift 2 ;;
    --machine) MACHINE=$2; shift 2 ;;
    --profile) PROFILE=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
BIN=$BUILD/bin
for tool in soap-zoo soap-opt soap-translate; do
  [ -x "$BIN/$tool" ] || { echo "error: $BIN/$tool is missing: build SOAP first" >&2; exit 1; }
done
if ! command -v nvidia-smi > /dev/null || ! nvidia-smi -L > /dev/null 2>&1; then
  echo "error: no NVIDIA GPU here (nvidia-smi -L fails): bench/gpu.sh measures on a GPU" >&2
  exit 1
fi
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
log() { echo "gpu.sh: $*" >&2; }

# cuBLAS against the dense peak: soap-profile's GPU calibration times an
# N^3 product through libsoaprt_gpu's cuBLAS call in each math mode.
log "cuBLAS matmul throughput (soap-profile --device gpu --calibrate)"
"$BIN/soap-profile" --device gpu --calibrate --base "${MACHINE%.json}" \
  -o "$WORK/calibrated.json" > "$WORK/calibration.txt" 2>&1
matmul_rows=$(python3 - "$WORK/calibration.txt" "$ROOT/machines/$MACHINE" <<'EOF'
import json, re, sys
text = open(sys.argv[1]).read()
peaks = next(iter(json.load(open(sys.argv[2]))["device_types"].values()))["peak_flops"]
for size, mode, tflops in re.findall(r"matmul (\d+)\^3, (\w+) math: ([0-9.]+) TFLOP/s", text):
    peak = peaks.get(mode)
    share = f"{float(tflops) * 1e12 / peak * 100:.0f} %" if peak else "—"
    print(f"| {size}^3 | {mode} | {float(tflops):.1f} | "
          f"{peak / 1e12 if peak else 0:.1f} | {share} |")
EOF
)

rows=()
for m in $MODELS; do
  "$BIN/soap-zoo" "$m" --batch "$BATCH" -o "$WORK/$m.mlir"
  prof=""
  [ -n "$PROFILE" ] && prof=" profile=$PROFILE"
  simulated=$("$BIN/soap-opt" "$WORK/$m.mlir" \
      --soap-simulate="machine=$ROOT/machines/$MACHINE devices=1$prof" 2>&1 > /dev/null |
    sed -n 's/.*training step: \([0-9.]*\) ms.*/\1/p')
  for math in $MATHS; do
    log "$m, math=$math: compiling"
    "$BIN/soap-opt" "$WORK/$m.mlir" --soap-training-step \
        --soap-lower-gpu="math=$math trace-ops=false" |
      "$BIN/soap-translate" --soap-to-executable -o "$WORK/$m.$math.exe"
    log "$m, math=$math: SOAP"
    "$WORK/$m.$math.exe" --steps "$STEPS" --warmup "$WARMUP" > "$WORK/$m.$math.soap.txt"
    soap=$(sed -n 's/.*median_ms=\([0-9.]*\).*/\1/p' "$WORK/$m.$math.soap.txt")
    log "$m, math=$math: PyTorch eager"
    extra=()
    [ "$m" = resnet50 ] || extra=(--seq 128)
    python3 "$ROOT/bench/pytorch_baseline.py" "$m" --batch "$BATCH" --math "$math" \
        --steps "$STEPS" --warmup "$WARMUP" "${extra[@]}" > "$WORK/$m.$math.torch.txt"
    torch=$(sed -n 's/.*median_ms=\([0-9.]*\).*/\1/p' "$WORK/$m.$math.torch.txt")
    rows+=("$(python3 - "$m" "$math" "$soap" "$torch" "$simulated" <<'EOF'
import sys
m, math, soap, torch, sim = sys.argv[1:]
soap, torch = float(soap), float(torch)
sim_cell, err = "—", "—"
if sim:
    sim_cell = f"{float(sim):.2f}"
    err = f"{(float(sim) - soap) / soap * 100:+.0f} %"
print(f"| {m} | {math} | {soap:.2f} | {torch:.2f} | {soap / torch:.2f}x | "
      f"{sim_cell} | {err} |")
EOF
)")
  done
done

{
  echo "# SOAP on a GPU against PyTorch eager, and against the simulator"
  echo
  echo "Written by \`bench/gpu.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'). GPU: $GPU."
  echo "Batch $BATCH, median step time over $STEPS steps after $WARMUP warm-up steps, plain SGD."
  echo "Simulated: \`--soap-simulate\` with machines/$MACHINE on 1 device${PROFILE:+ and the profile database $PROFILE} (f32 peak figures: the simulator has no math mode)."
  echo
  echo "## cuBLAS matmul against the dense peak (target: at least 70 %)"
  echo
  echo "| product | math | TFLOP/s | dense peak (machines/$MACHINE) | share of peak |"
  echo "| --- | --- | --- | --- | --- |"
  echo "$matmul_rows"
  echo
  echo "## Training steps"
  echo
  echo "| model | math | SOAP ms | PyTorch eager ms | SOAP / PyTorch | simulated ms | simulated vs SOAP |"
  echo "| --- | --- | --- | --- | --- | --- | --- |"
  printf '%s\n' "${rows[@]}"
} > "$OUT"
cat "$OUT"

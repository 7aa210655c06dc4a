#!/usr/bin/env bash
# GFLOP/s of the kernels --soap-lower-cpu compiles, through the whole path
# (soap-opt --soap-lower-cpu | soap-translate --soap-to-executable, then
# the executable's per-kernel --trace events), for each codegen option in
# the same run:
#   - a 1024^3 f32 matmul;
#   - ResNet-50 convolutions, batch 8: 3x3 64->64 on 56x56 (input padded
#     to 58x58) and 1x1 256->64 on 56x56.
# Kernel time is the median over the timed steps of the kernel's trace
# event. Peak FLOP/s: --peak-f32 GFLOPS (per core), else the value in
# machines/cpu-local.json (soap-profile --mpi measures it there).
#
#   bench/cpu-kernels.sh [--build DIR] [--steps N] [--peak-f32 G] [--codegens "blas vector"]
# Writes the table to stdout and bench/results/cpu-kernels.md.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build
STEPS=5
PEAK=""
CODEGENS="blas vector"
while [ $# -gt 0 ]; do
  case $1 in
    --build) BUILD=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    --peak-f32) PEAK=$2; shift 2 ;;
    --codegens) CODEGENS=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
BIN=$BUILD/bin
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
if [ -z "$PEAK" ]; then
  PEAK=$(python3 -c "import json; m=json.load(open('$ROOT/machines/cpu-local.json')); print(next(iter(m['device_types'].values()))['peak_flops']['f32'] / 1e9)")
fi
CORES=$(nproc)

# name, flops, module
write_module() { # name input-args body result-type
  cat > "$WORK/$1.mlir" <<MLIR
func.func @train_step($2) -> (tensor<f32> {soap.role = "loss", soap.name = "loss"}) {
  %zero = arith.constant 0.0 : f32
$3
  %e = tensor.empty() : tensor<f32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %loss = tensor.extract_slice %out[0, 0$4] [1, 1$5] [1, 1$5] : $6 to tensor<1x1$7xf32>
  %l = tensor.collapse_shape %loss [] : tensor<1x1$7xf32> into tensor<f32>
  return %l : tensor<f32>
}
MLIR
}
write_module matmul1024 \
  '%a: tensor<1024x1024xf32> {soap.role = "input", soap.name = "a"}, %b: tensor<1024x1024xf32> {soap.role = "input", soap.name = "b"}' \
  '  %ce = tensor.empty() : tensor<1024x1024xf32>
  %c = linalg.fill ins(%zero : f32) outs(%ce : tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %out = linalg.matmul ins(%a, %b : tensor<1024x1024xf32>, tensor<1024x1024xf32>) outs(%c : tensor<1024x1024xf32>) -> tensor<1024x1024xf32>' \
  "" "" "tensor<1024x1024xf32>" ""
write_module conv3x3 \
  '%x: tensor<8x64x58x58xf32> {soap.role = "input", soap.name = "x"}, %w: tensor<64x64x3x3xf32> {soap.role = "input", soap.name = "w"}' \
  '  %ce = tensor.empty() : tensor<8x64x56x56xf32>
  %c = linalg.fill ins(%zero : f32) outs(%ce : tensor<8x64x56x56xf32>) -> tensor<8x64x56x56xf32>
  %out = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<8x64x58x58xf32>, tensor<64x64x3x3xf32>) outs(%c : tensor<8x64x56x56xf32>) -> tensor<8x64x56x56xf32>' \
  ", 0, 0" ", 1, 1" "tensor<8x64x56x56xf32>" "x1x1"
write_module conv1x1 \
  '%x: tensor<8x256x56x56xf32> {soap.role = "input", soap.name = "x"}, %w: tensor<64x256x1x1xf32> {soap.role = "input", soap.name = "w"}' \
  '  %ce = tensor.empty() : tensor<8x64x56x56xf32>
  %c = linalg.fill ins(%zero : f32) outs(%ce : tensor<8x64x56x56xf32>) -> tensor<8x64x56x56xf32>
  %out = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<8x256x56x56xf32>, tensor<64x256x1x1xf32>) outs(%c : tensor<8x64x56x56xf32>) -> tensor<8x64x56x56xf32>' \
  ", 0, 0" ", 1, 1" "tensor<8x64x56x56xf32>" "x1x1"

declare -A FLOPS=(
  [matmul1024]=$((2 * 1024 * 1024 * 1024))
  [conv3x3]=$((2 * 8 * 64 * 56 * 56 * 64 * 9))
  [conv1x1]=$((2 * 8 * 64 * 56 * 56 * 256))
)
declare -A TITLE=(
  [matmul1024]="matmul 1024x1024x1024 f32"
  [conv3x3]="conv 3x3 64->64, 56x56, batch 8 (ResNet-50 conv2_x)"
  [conv1x1]="conv 1x1 256->64, 56x56, batch 8 (ResNet-50 conv2_x)"
)

ROWS=""
for model in matmul1024 conv3x3 conv1x1; do
  for codegen in $CODEGENS; do
    exe=$WORK/$model-$codegen.exe
    "$BIN/soap-opt" "$WORK/$model.mlir" --soap-lower-cpu="kernels=$codegen" |
      "$BIN/soap-translate" --soap-to-executable -o "$exe"
    "$exe" --steps "$STEPS" --warmup 1 --trace "$WORK/trace.json" > /dev/null
    ms=$(python3 - "$WORK/trace.json" <<'PY'
import json, statistics, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
ops = ("linalg.matmul", "linalg.conv_2d_nchw_fchw")
times = [e["dur"] for e in events
         if e.get("cat") == "op" and e["name"].split(" ")[0] in ops]
print("%.3f" % (statistics.median(times) / 1000))
PY
)
    row=$(python3 -c "
f=${FLOPS[$model]}; ms=$ms; peak=$PEAK; cores=$CORES
g=f/ms/1e6
print('| %s | %s | %.2f | %.1f | %.0f %% | %.0f %% |' % ('${TITLE[$model]}', '$codegen', ms, g, 100*g/peak, 100*g/(peak*cores)))")
    echo "$row" >&2
    ROWS+="$row"$'\n'
  done
done

CPU=$(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
TABLE="# CPU kernels through --soap-lower-cpu

Measured by \`bench/cpu-kernels.sh\` on $(date -u +%Y-%m-%d): $CPU, $CORES cores.
Each kernel runs inside a lowered, linked executable; its time is the
median of $STEPS traced steps (after one warm-up). Peak: $PEAK GFLOP/s f32
per core (soap-profile's FMA-chain measurement in machines/cpu-local.json,
or --peak-f32); OpenBLAS uses all $CORES cores, so the last column compares
with $CORES x the per-core peak. \`blas\`: libsoaprt's OpenBLAS calls
(convolutions by im2col + sgemm); \`vector\`: tiled + vectorized code
generation (as soap-profile compiles kernels), one core.

| kernel | codegen | ms | GFLOP/s | % of 1-core peak | % of $CORES-core peak |
| --- | --- | --- | --- | --- | --- |
$ROWS"
echo "$TABLE"
echo "$TABLE" > "$ROOT/bench/results/cpu-kernels.md"

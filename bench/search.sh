#!/usr/bin/env bash
# Search benchmarks (issue: the MCMC strategy search): for the six paper
# models on p100-4x4 and k80-16x4 and the transformers on h100-8 and
# h100-4x8, the found strategy's speedup over data parallelism and over the
# best expert strategy, search time, proposals per second, and a
# convergence plot (best cost over time).
# Writes bench/results/search.md and bench/results/search-convergence.png.
# Usage: bench/search.sh [SECONDS_PER_CASE [MODEL...]]   (default 20, all)
# With models named, only their cases run and the results go to
# bench/results/search-<SECONDS>s-<models>.md / .png.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_CASE=${1:-20}
shift || true
ONLY=("$@")
BUILD=${SOAP_BUILD_DIR:-build}
./scripts/build.sh soap-zoo soap-opt > /dev/null
if ! command -v gnuplot > /dev/null; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get install -y -qq --no-install-recommends gnuplot-nox > /dev/null
fi
ZOO=$BUILD/bin/soap-zoo
OPT=$BUILD/bin/soap-opt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cases=()
for m in alexnet inception_v3 resnet101 rnntc rnnlm nmt; do
  cases+=("$m p100-4x4 16" "$m k80-16x4 16" "$m k80-16x4 64")
done
cases+=("bert-base h100-8 8" "bert-base h100-4x8 32" "gpt2 h100-8 8" "gpt2 h100-4x8 32")

if [ ${#ONLY[@]} -gt 0 ]; then
  selected=()
  for c in "${cases[@]}"; do
    for m in "${ONLY[@]}"; do
      [ "${c%% *}" = "$m" ] && selected+=("$c")
    done
  done
  cases=("${selected[@]}")
  suffix="-${SECONDS_PER_CASE}s-$(IFS=-; echo "${ONLY[*]}")"
else
  suffix=""
fi
out=bench/results/search$suffix.md
plot=bench/results/search$suffix-convergence.png
{
  echo "# MCMC search: found strategy vs data parallelism and the best expert"
  echo
  echo "\`soap-opt --soap-search=\"machine=M devices=N time=$SECONDS_PER_CASE threads=2 chains=4\"\` on each"
  echo "model at its default size (bert-base at batch 64, gpt2 at batch 32), a"
  echo "training step with SGD, roofline cost model. Speedups are ratios of"
  echo "simulated step times in the same run. $(nproc) cores of"
  echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(date -u +%Y-%m-%d)."
  echo "Command: \`bench/search.sh $SECONDS_PER_CASE ${ONLY[*]:-}\`."
  echo
  echo "| model | machine | devices | data parallel (ms) | best expert (ms) | found (ms) | vs DP | vs expert | proposals | proposals/s | search (s) |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
} > "$out"
for c in "${cases[@]}"; do
  read -r model machine devices <<< "$c"
  case $model in
    bert-base) flags="--batch 64" ;;
    gpt2) flags="--batch 32" ;;
    *) flags="" ;;
  esac
  # shellcheck disable=SC2086
  "$ZOO" "$model" $flags > "$work/$model.mlir"
  summary="$work/$model-$machine-$devices.json"
  "$OPT" "$work/$model.mlir" > /dev/null \
    --soap-search="machine=$machine devices=$devices time=$SECONDS_PER_CASE threads=2 chains=4 summary=$summary" \
    2> "$work/log" || { echo "| $model | $machine | $devices | failed: $(tail -1 "$work/log") |" >> "$out"; continue; }
  python3 - "$summary" "$model" "$machine" "$devices" >> "$out" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print(f"| {sys.argv[2]} | {sys.argv[3]} | {sys.argv[4]} | {s['data_parallel_ms']:.2f} | "
      f"{s['best_expert_ms']:.2f} ({s['best_expert']}) | {s['best_step_time_ms']:.2f} | "
      f"{s['speedup_over_data_parallel']:.2f}x | {s['speedup_over_best_expert']:.2f}x | "
      f"{s['iterations']} | {s['iterations_per_second']:.0f} | {s['search_seconds']:.1f} |")
PY
  python3 - "$summary" > "$work/$model-$machine-$devices.dat" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
first = s['convergence'][0]['best_ms']
for p in s['convergence']:
    print(p['seconds'], p['best_ms'] / first)
PY
done

{
  echo "set terminal pngcairo size 1100,700 noenhanced"
  echo "set output '$plot'"
  echo "set title 'MCMC search: best simulated step time over time (relative to the best start)'"
  echo "set xlabel 'seconds'; set ylabel 'best cost / best starting cost'; set key outside right"
  printf "plot "
  i=0
  for f in "$work"/*.dat; do
    [ $i -eq 0 ] || printf ", "
    name=$(basename "$f" .dat)
    # gnuplot cycles through 8 colours: a new dash pattern after each 8.
    printf "'%s' using 1:2 with lines lw 2 lc %d dt %d title '%s'" \
      "$f" $((i % 8 + 1)) $((i / 8 + 1)) "$name"
    i=$((i + 1))
  done
  echo
} > "$work/plot.gp"
gnuplot "$work/plot.gp"
echo >> "$out"
echo "![convergence]($(basename "$plot"))" >> "$out"
echo "wrote $out and $plot"

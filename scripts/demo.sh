#!/usr/bin/env bash
# The main job, as far as it goes today: set up, build, and run the bundled
# model (docs/examples/mlp.mlir) through SOAP:
#   1. how each op can be partitioned (--soap-print-dims);
#   2. the simulated training step of the baseline strategies on 4 P100s;
#   3. the MCMC search for a faster strategy, simulated the same way;
#   4. a training step (autodiff + Adam), lowered for this CPU, built into a
#      native executable and run for a few steps on one device;
#   5. the same step partitioned by the strategy the search found
#      (--soap-partition), run on 4 MPI ranks, its losses next to the
#      single-device ones; then a strategy searched for this machine's cores
#      (machines/cpu-local.json), its measured step time next to the
#      simulated one.
# Another model can be given: ./scripts/demo.sh path/to/model.mlir
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${1:-docs/examples/mlp.mlir}
MACHINE=${SOAP_DEMO_MACHINE:-p100-4x4}
DEVICES=${SOAP_DEMO_DEVICES:-4}
BUILD_DIR=${SOAP_BUILD_DIR:-build}
export SOAP_BUILD_DIR=$BUILD_DIR
OPT=$BUILD_DIR/bin/soap-opt

./scripts/setup.sh
./scripts/build.sh soap-opt soap-translate soaprt soaprt_driver

echo
echo "== 1. $OPT $MODEL --soap-print-dims"
echo "   each op's iteration dimensions as name:size:kind"
echo "   (sample = batch, attribute = other output dims, parameter = indexes"
echo "    a parameter, reduction = contracted)"
echo
out=$("$OPT" "$MODEL" --soap-print-dims 2>&1 > /dev/null)
# One line per op: source line, op name, dimensions.
grep -E ': remark: ' <<< "$out" | while IFS= read -r line; do
  loc=${line%%: remark: *}
  text=${line#*: remark: }
  lineno=$(cut -d: -f2 <<< "$loc")
  op=$(sed -n "${lineno}p" "$MODEL" | grep -oE '(linalg|tensor|tosa|arith|math|func)\.[a-z_0-9]+' | head -1)
  printf '  line %-4s %-22s %s\n' "$lineno" "${op:-?}" "$text"
done
echo
for kind in sample attribute parameter reduction; do
  printf '  %-10s dimensions: %s\n' "$kind" "$(grep -oE ":$kind\b" <<< "$out" | wc -l)"
done
echo "  not partitionable ops: $(grep -c 'is not partitionable' <<< "$out" || true)"

echo
echo "== 2. simulated training step on $DEVICES devices of $MACHINE (machines/$MACHINE.json)"
for strategy in data-parallel model-parallel layer-pipeline owt megatron; do
  line=$("$OPT" "$MODEL" --soap-apply-strategy="strategy=$strategy devices=$DEVICES" \
         --soap-simulate="machine=$MACHINE" 2>&1 > /dev/null | grep 'soap-simulate:')
  printf '  %-15s %s\n' "$strategy" "${line#soap-simulate: }"
done

echo
echo "== 3. $OPT $MODEL --soap-search=\"machine=$MACHINE devices=$DEVICES budget=4000\""
"$OPT" "$MODEL" --soap-search="machine=$MACHINE devices=$DEVICES budget=4000 threads=2" \
  --soap-export-strategy="file=$BUILD_DIR/demo-strategy.json" -o "$BUILD_DIR/demo-partitioned.mlir"
echo "  the strategy: $BUILD_DIR/demo-strategy.json; the annotated program: $BUILD_DIR/demo-partitioned.mlir"

echo
echo "== 4. train on this CPU: --soap-training-step, --soap-lower-cpu, soap-translate --soap-to-executable"
EXE=$BUILD_DIR/demo-model.exe
"$OPT" "$MODEL" --soap-training-step="optimizer=adam lr=0.001" --soap-lower-cpu \
  | "$BUILD_DIR/bin/soap-translate" --soap-to-executable -o "$EXE"
echo "  $EXE --steps 10 --warmup 2"
"$EXE" --steps 10 --warmup 2 | tee "$BUILD_DIR/demo-single.out" | sed 's/^/  /'

echo
echo "== 5. the searched strategy on 4 MPI ranks: --soap-training-step, --soap-partition, mpirun -np 4"
EXE4=$BUILD_DIR/demo-model-4.exe
# The search annotated the model's ops with #soap.config; the training step
# copies them onto its forward ops, and --soap-partition follows them.
"$OPT" "$BUILD_DIR/demo-partitioned.mlir" --soap-training-step="optimizer=adam lr=0.001" --soap-partition \
  --soap-lower-cpu | "$BUILD_DIR/bin/soap-translate" --soap-to-executable -o "$EXE4"
# This machine may have fewer cores than ranks: allow oversubscription, one
# BLAS thread per rank.
OPENBLAS_NUM_THREADS=1 mpirun --oversubscribe --allow-run-as-root -np 4 "$EXE4" --steps 10 --warmup 2 \
  > "$BUILD_DIR/demo-4.out"
echo "  step  loss (1 device)    loss (4 ranks)"
paste <(grep -E '^step=' "$BUILD_DIR/demo-single.out") <(grep -E '^step=' "$BUILD_DIR/demo-4.out") \
  | awk '{split($1, s, "="); split($2, a, "="); split($5, b, "="); printf "  %4s  %-18s %s\n", s[2], a[2], b[2]}'

# Step time, measured and simulated, on as many ranks as cpu-local.json has
# devices (this machine's cores): oversubscribed ranks are not what the
# machine file describes.
cores=$(python3 -c "import json; m=json.load(open('machines/cpu-local.json')); print(m['nodes'] * m['devices_per_node'])" 2>/dev/null || echo 2)
EXEC=$BUILD_DIR/demo-model-$cores.exe
"$OPT" "$MODEL" --soap-search="machine=cpu-local devices=$cores budget=2000 threads=2" \
  -o "$BUILD_DIR/demo-cpu-strategy.mlir" 2> "$BUILD_DIR/demo-cpu-search.log"
"$OPT" "$BUILD_DIR/demo-cpu-strategy.mlir" --soap-training-step="optimizer=adam lr=0.001" --soap-partition \
  --soap-lower-cpu | "$BUILD_DIR/bin/soap-translate" --soap-to-executable -o "$EXEC"
OPENBLAS_NUM_THREADS=1 mpirun --oversubscribe --allow-run-as-root -np "$cores" "$EXEC" --steps 20 --warmup 3 \
  > "$BUILD_DIR/demo-$cores.out"
measured=$(grep -oE 'median_ms=[^ ]+' "$BUILD_DIR/demo-$cores.out" | cut -d= -f2)
simulated=$("$OPT" "$BUILD_DIR/demo-cpu-strategy.mlir" \
  --soap-simulate="machine=cpu-local" 2>&1 > /dev/null | grep -oE 'training step: [0-9.]+ ms' | grep -oE '[0-9.]+' || echo "?")
echo "  step time of the strategy searched for $cores ranks (one per core of machines/cpu-local.json):"
echo "    measured ${measured} ms (median of 20 steps), simulated ${simulated} ms"
echo "    (recalibrate the machine file with: mpirun -np $cores $BUILD_DIR/bin/soap-profile --mpi)"

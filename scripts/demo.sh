#!/usr/bin/env bash
# The main job, for now: set up, build, and show how each op of the bundled
# model (docs/examples/mlp.mlir) can be partitioned, through soap-opt.
# Another model can be given: ./scripts/demo.sh path/to/model.mlir
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${1:-docs/examples/mlp.mlir}
BUILD_DIR=${SOAP_BUILD_DIR:-build}
export SOAP_BUILD_DIR=$BUILD_DIR

./scripts/setup.sh
./scripts/build.sh soap-opt

echo
echo "== $BUILD_DIR/bin/soap-opt $MODEL --soap-print-dims"
echo "   each op's iteration dimensions as name:size:kind"
echo "   (sample = batch, attribute = other output dims, parameter = indexes"
echo "    a parameter, reduction = contracted)"
echo
out=$("$BUILD_DIR/bin/soap-opt" "$MODEL" --soap-print-dims -o /dev/null 2>&1)
status=$?
if [ $status -ne 0 ]; then
  echo "$out"
  exit $status
fi
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

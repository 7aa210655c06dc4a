#!/usr/bin/env bash
# Installs SOAP into a scratch prefix, builds the out-of-tree consumer
# against the installed package, and checks that it runs a SOAP pass; then
# the installed soap-opt and soap-translate build a training executable
# against the installed runtime (found beside the installed soap-translate)
# and it trains.
# Usage: run-consumer-test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/soap-consumer.XXXXXX")
trap 'rm -rf "$work"' EXIT

cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
launcher=()
if command -v ccache > /dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
cmake -S "$src/test/install/consumer" -B "$work/build" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DSOAP_DIR="$work/prefix/lib/cmake/soap" \
  "${launcher[@]}" > "$work/configure.log"
cmake --build "$work/build" > "$work/build.log" || { cat "$work/build.log"; exit 1; }

out=$("$work/build/soap-consumer" "$src/test/install/consumer/input.mlir")
echo "$out"
grep -q "dims m:16:sample n:8:parameter k:32:reduction" <<< "$out"
grep -q "remarks: 1" <<< "$out"
libdir=$(dirname "$(find "$work/prefix" -name libsoaprt.a | head -1)")
test -f "$libdir/libsoaprt_driver.a"
"$work/prefix/bin/soap-opt" "$src/docs/examples/mlp.mlir" --soap-training-step \
  --soap-lower-cpu | env -u SOAP_RUNTIME_DIR "$work/prefix/bin/soap-translate" \
  --soap-to-executable -o "$work/mlp.exe"
steps=$("$work/mlp.exe" --steps 2)
echo "$steps"
grep -q "^summary steps=2" <<< "$steps"
echo "install-consumer: OK"

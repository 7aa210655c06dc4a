#!/usr/bin/env bash
# Installs SOAP into a scratch prefix, builds the out-of-tree consumer
# against the installed package, and checks that it runs a SOAP pass.
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
echo "install-consumer: OK"

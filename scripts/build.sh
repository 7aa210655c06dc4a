#!/usr/bin/env bash
# Configures (once) and builds SOAP into build/ with Ninja (and ccache when
# present). Extra arguments go to the build tool: ./scripts/build.sh soap-opt
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${SOAP_BUILD_DIR:-build}
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir
fi
cmake --build "$BUILD_DIR" -- "$@"

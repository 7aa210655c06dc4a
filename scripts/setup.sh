#!/usr/bin/env bash
# Installs, from Debian's packages, everything SOAP's build and tests need.
# Idempotent: when every package is already present it only checks and exits.
set -euo pipefail

PACKAGES=(
  cmake ninja-build ccache g++ pkg-config python3
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  libopenmpi-dev openmpi-bin
  libgtest-dev googletest
  nlohmann-json3-dev
  libopenblas-dev libdnnl-dev
  # Debian's oneDNN is built with its OpenCL GPU runtime: its CMake package
  # (dnnl-config.cmake) requires OpenCL, which libdnnl-dev only recommends.
  ocl-icd-opencl-dev
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "setup: done"

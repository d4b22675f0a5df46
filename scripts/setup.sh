#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what txopt needs on Debian 12, idempotently and without prompts:
# LLVM/MLIR 22, ONNX 1.12 and protobuf from Debian, plus the build tools.
# Runs as root or through sudo. Safe to run again: present packages are kept.
set -euo pipefail

packages=(
  cmake ninja-build g++ ccache lld-22 python3
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  libprotobuf-dev protobuf-compiler libonnx-dev libgtest-dev
)

missing=()
for pkg in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo="sudo"
  else
    echo "setup: error: need root (or sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
fi

echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what txopt needs on Debian 12, idempotently and without prompts:
# LLVM/MLIR 22, ONNX 1.12 and protobuf from Debian, plus the build tools.
# Runs as root or through sudo. Safe to run again: present packages are kept.
set -euo pipefail

packages=(
  cmake ninja-build g++ ccache lld-22 python3 python3-venv python3-pip
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  libprotobuf-dev protobuf-compiler libonnx-dev libgtest-dev
  libflatbuffers-dev flatbuffers-compiler
)

missing=()
for pkg in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${TXOPT_VENV:-$root/.venv}"

# Test-only Python tools (numerics oracles), in a venv so the system Python
# stays untouched. The compiler and runtime never need Python.
setup_venv() {
  local want="numpy==2.4.6 onnx==1.23.2 onnxruntime==1.32.0 matplotlib==3.11.2"
  if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import numpy, onnx, onnxruntime, matplotlib" 2>/dev/null; then
    echo "setup: test venv ready ($venv)"
    return
  fi
  echo "setup: creating test venv $venv"
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check $want
}

# cuDNN's header-only C++ frontend (its graph API builds the fused
# attention the runtime runs), from NVIDIA's PyPI wheel, unpacked into
# .deps/. Build-time only: the runtime dlopens libcudnn.so.9 on the GPU
# machine. Pinned; without it the runtime builds without fused attention.
setup_cudnn_frontend() {
  local version=1.32.0
  local dir="$root/.deps/cudnn-frontend-$version"
  if [ -f "$dir/include/cudnn_frontend.h" ]; then
    echo "setup: cuDNN frontend $version ready ($dir)"
    return
  fi
  local tmp
  tmp="$(mktemp -d)"
  if "$venv/bin/python" -m pip download -q --disable-pip-version-check --no-deps \
       "nvidia-cudnn-frontend==$version" -d "$tmp"; then
    mkdir -p "$dir"
    "$venv/bin/python" - "$tmp"/nvidia_cudnn_frontend-*.whl "$dir" <<'PY'
import sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.startswith("include/"):
            z.extract(name, out)
PY
    echo "setup: cuDNN frontend $version unpacked into $dir"
  else
    echo "setup: warning: could not download nvidia-cudnn-frontend==$version;" \
         "the runtime builds without fused attention" >&2
  fi
  rm -rf "$tmp"
}

if [ "${#missing[@]}" -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  setup_venv
  setup_cudnn_frontend
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
setup_venv
setup_cudnn_frontend

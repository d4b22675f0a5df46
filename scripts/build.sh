#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Configures and builds txopt into ./build (or $TXOPT_BUILD_DIR).
# Usage: scripts/build.sh [ninja targets...]   (default: everything)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${TXOPT_BUILD_DIR:-$root/build}"

launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
linker=()
if command -v ld.lld-22 >/dev/null 2>&1 || [ -x /usr/lib/llvm-22/bin/ld.lld ]; then
  linker=(-DLLVM_USE_LINKER=lld)
fi

if [ ! -f "$build/build.ninja" ]; then
  cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    "${launcher[@]}" "${linker[@]}"
fi
# Two cores and 24 GB: MLIR translation units need ~1.5 GB each, so the
# default parallelism is safe.
ninja -C "$build" "$@"

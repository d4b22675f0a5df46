#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job for a newcomer: install, build, and compile the shipped
# example (a nanoGPT training graph with its loss) into fused.mlir.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${TXOPT_BUILD_DIR:-$root/build}"

"$root/scripts/setup.sh"
TXOPT_BUILD_DIR="$build" "$root/scripts/build.sh" txopt
"$build/bin/txopt" "$root/examples/nanogpt_op18_loss.onnx" -o fused.mlir --report=report.json
echo "example: wrote $(pwd)/fused.mlir and $(pwd)/report.json"

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job for a newcomer: install, build, and compile the shipped
# example (a nanoGPT training graph with its loss) into fused.mlir; then,
# when the CUDA toolkit is there, its training step for the GPU (step.txa,
# run by `build/runtime/bin/txrun step.txa --steps 100` on a GPU machine).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${TXOPT_BUILD_DIR:-$root/build}"

"$root/scripts/setup.sh"
TXOPT_BUILD_DIR="$build" "$root/scripts/build.sh" txopt txrun
"$build/bin/txopt" "$root/examples/nanogpt_op18_loss.onnx" -o fused.mlir --report=report.json
echo "example: wrote $(pwd)/fused.mlir and $(pwd)/report.json"
if [ -e "${CUDA_HOME:-/usr/local/cuda}/nvvm/libdevice/libdevice.10.bc" ]; then
  "$build/bin/txopt" "$root/examples/nanogpt_op18_loss.onnx" --train -o step.txa -q
  echo "example: wrote $(pwd)/step.txa (the training step for the GPU: $build/runtime/bin/txrun step.txa --steps 100)"
else
  echo "example: no CUDA toolkit (libdevice) found: skipped compiling the GPU step"
fi

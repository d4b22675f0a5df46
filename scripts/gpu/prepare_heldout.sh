#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every held-out loss export (scripts/export_heldout_models.py) as a GPU
# check case, compared by loss with the CPU executor: compiles each model
# to step.txa and runs it on txopt-run. The cases are dealt into PARTS
# folders so each fits the 64 MiB that travels to the GPU machine; run
# each there with: scripts/gpu/run_cases.sh PART_DIR
# Usage: scripts/gpu/prepare_heldout.sh HELDOUT_DIR OUT_DIR [PARTS=2] [STEPS=5]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
heldout="${1:?usage: prepare_heldout.sh HELDOUT_DIR OUT_DIR [PARTS] [STEPS]}"
out="${2:?usage: prepare_heldout.sh HELDOUT_DIR OUT_DIR [PARTS] [STEPS]}"
parts="${3:-2}" steps="${4:-5}"
bin="$root/build/bin"
rm -rf "$out"
i=0
for f in "$heldout"/*_loss.onnx; do
  m=$(basename "$f" .onnx)
  name="heldout_$m"
  # bf16 weights or autocast: compared with the reduced-precision bound.
  case "$m" in *bf16*|*autocast*) name="${name}_bf16" ;; esac
  part="$out/part$((i % parts))"
  i=$((i + 1))
  mkdir -p "$part"
  "$bin/txopt" "$f" --train -o "$part/$name.txa" -q
  # An f32 GPU step keeps attention unfused: so does its CPU reference.
  "$bin/txopt" "$f" --train --no-fuse=attention -o "$part/$name.mlir" -q
  "$bin/txopt-run" "$part/$name.mlir" --steps "$steps" > "$part/$name.cpu.log"
  rm -f "$part/$name.mlir"
  echo "$name $steps" >> "$part/cases.txt"
done
du -sh "$out"/part*

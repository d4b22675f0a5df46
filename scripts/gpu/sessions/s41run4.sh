#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Session 41, run 4 (carry gpu-pack/s41d.tar.xz): check.sh on main's
# compiler at 473e536 (the halving, the Gaussian, the cross-entropy exp,
# the empty GEMMs) with the curve rule of 8 data orders and 3 standard
# errors: the landing gate for what runs 1-3 measured piece by piece.
# Results go into $OUT/s41run4.tgz and $OUT/summary.txt.
set -uo pipefail
root="$(pwd)"
res=/tmp/res; mkdir -p "$res"
save() {
  tar -C /tmp -czf "$OUT/s41run4.tgz.tmp" res && mv "$OUT/s41run4.tgz.tmp" "$OUT/s41run4.tgz"
  cp "$res/timeline.txt" "$OUT/summary.txt" 2>/dev/null || true
}
start=$(date +%s)
stamp() { echo "[$(( $(date +%s) - start )) s] $*" | tee -a "$res/timeline.txt"; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee "$res/gpu.txt" | tee -a "$res/timeline.txt"
tar -xJf gpu-pack/s41d.tar.xz
pack="$root/s41d"
mkdir -p build/runtime && cp -r "$pack/bin" build/runtime/bin

stamp "check.sh (main at 473e536)"
python3 scripts/export_gpt_external.py "$pack/check/gpt_bench.onnx" --layers 1 --d-model 256 --vocab 512 --seq 512 --batch 4 > /dev/null
python3 scripts/export_gpt_external.py "$pack/check/gpt_bench_tanh.onnx" --layers 1 --d-model 256 --vocab 512 --seq 512 --batch 4 --gelu tanh > /dev/null
python3 scripts/export_gpt_external.py "$pack/check/gpt_deep.onnx" --layers 80 --d-model 64 --vocab 128 --seq 32 --batch 2 > /dev/null
(cd "$pack/check" && sha256sum -c ../check.sha256) 2>&1 | tee -a "$res/timeline.txt"
CURVE_STEPS=6000 timeout 420 bash scripts/gpu/check.sh "$pack/check" /tmp/check-res > "$res/check.txt" 2>&1
echo "check.sh rc=$?" >> "$res/check.txt"
grep -E "cases passed|rc=|FAIL|failed|precision curves|vs f32|learned" "$res/check.txt" | tee -a "$res/timeline.txt"
save

stamp "done"
save

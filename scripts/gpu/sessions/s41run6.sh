#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Session 41, run 6 (carry gpu-pack/s41f.tar.xz): the warp-row norm
# gradient at three blocks an SM (bf16-ctas3: nvvm.minctasm 3 under a known
# block of 256, built by a local, uncommitted hook: 80 registers and
# 160-204 bytes of spills a thread, against main's 114 registers and 24%
# occupancy) beside main's bf16 step (2a4d56e), both profiled, no PyTorch
# (the losses are checked against run 5's eager AMP by hand); Nsight
# Compute on the variant's k43. Results: $OUT/s41run6.tgz, summary.txt.
set -uo pipefail
root="$(pwd)"
res=/tmp/res; mkdir -p "$res"
save() {
  tar -C /tmp -czf "$OUT/s41run6.tgz.tmp" res && mv "$OUT/s41run6.tgz.tmp" "$OUT/s41run6.tgz"
  cp "$res/timeline.txt" "$OUT/summary.txt" 2>/dev/null || true
}
start=$(date +%s)
stamp() { echo "[$(( $(date +%s) - start )) s] $*" | tee -a "$res/timeline.txt"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$res/timeline.txt"
tar -xJf gpu-pack/s41f.tar.xz
pack="$root/s41f"
mkdir -p build/runtime && cp -r "$pack/bin" build/runtime/bin
stamp "GPT-2 bf16 beside bf16-ctas3"
v="bf16 bf16-ctas3"
PRECISIONS="$v" TORCH_MODES="" PROFILES="$v" timeout 150 bash bench/step/run.sh "$pack/step" /tmp/gpt2 gpt2 20 > "$res/gpt2.txt" 2>&1
echo "run.sh rc=$? (1 expected: no PyTorch run to compare losses with)" >> "$res/gpt2.txt"
mkdir -p "$res/gpt2" && cp /tmp/gpt2/*.json /tmp/gpt2/*.md /tmp/gpt2/*.txt "$res/gpt2/" 2>/dev/null
grep -E "^\| txopt|mean over|layer_norm_grad " "$res/gpt2.txt" | tee -a "$res/timeline.txt"
save
w=/tmp/txopt-bench-gpt2
timeout 45 ncu --clock-control none --set full -k "regex:^k43_layer_norm_grad\$" --launch-skip 1 --launch-count 1 \
  build/runtime/bin/txrun "$pack/step/gpt2_bf16-ctas3.txa" --weights-dir "$w" --data "$w/tokens.npy" \
  --steps 2 --no-graph > "$res/ncu_bf16-ctas3_k43.txt" 2>&1
stamp "ncu rc=$?"
grep -E "Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Issue Slots Busy|Eligible Warps" \
  "$res/ncu_bf16-ctas3_k43.txt" | head -8 | tee -a "$res/timeline.txt"
stamp done
save

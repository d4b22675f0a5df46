#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Session 41, run 5 (carry gpu-pack/s41e.tar.xz): with the budget left,
# figures for the closing note: GPT-2 main (2a4d56e) bf16 and fp8 beside
# fp8-lmhead (the LM head's three GEMMs in FP8 too: --fp8-exclude of the
# first QKV GEMM alone) and torch.compile, all profiled; Nsight Compute on
# the bf16 LayerNorm gradient (k43), the largest gap to copy left (84%).
# Results go into $OUT/s41run5.tgz and $OUT/summary.txt.
set -uo pipefail
root="$(pwd)"
res=/tmp/res; mkdir -p "$res"
save() {
  tar -C /tmp -czf "$OUT/s41run5.tgz.tmp" res && mv "$OUT/s41run5.tgz.tmp" "$OUT/s41run5.tgz"
  cp "$res/timeline.txt" "$OUT/summary.txt" 2>/dev/null || true
}
start=$(date +%s)
stamp() { echo "[$(( $(date +%s) - start )) s] $*" | tee -a "$res/timeline.txt"; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee "$res/gpu.txt" | tee -a "$res/timeline.txt"
tar -xJf gpu-pack/s41e.tar.xz
pack="$root/s41e"
mkdir -p build/runtime && cp -r "$pack/bin" build/runtime/bin

stamp "2. GPT-2 A/B"
v="bf16 fp8 fp8-lmhead"
PRECISIONS="$v" TORCH_MODES="eager-bf16 compile-bf16" PROFILES="$v" \
  timeout 240 bash bench/step/run.sh "$pack/step" /tmp/gpt2 gpt2 20 > "$res/gpt2.txt" 2>&1
echo "run.sh rc=$?" >> "$res/gpt2.txt"
mkdir -p "$res/gpt2" && cp /tmp/gpt2/*.json /tmp/gpt2/*.md /tmp/gpt2/*.txt "$res/gpt2/" 2>/dev/null
grep -E "^\| txopt|^\| pytorch|PASS|FAIL|rc=" "$res/gpt2.txt" | tee -a "$res/timeline.txt"
save

stamp "3. Nsight Compute"
w=/tmp/txopt-bench-gpt2
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
while read -r variant kernel; do
  if [ $(( $(date +%s) - start )) -gt 520 ]; then
    stamp "ncu $variant $kernel skipped: out of time"; continue
  fi
  timeout 45 "$ncu" --clock-control none --set full -k "regex:^${kernel}\$" --launch-skip 1 --launch-count 1 \
    "build/runtime/bin/txrun" "$pack/step/gpt2_$variant.txa" --weights-dir "$w" --data "$w/tokens.npy" \
    --steps 2 --no-graph > "$res/ncu_${variant}_$kernel.txt" 2>&1
  stamp "ncu $variant $kernel rc=$?"
  grep -E "Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Issue Slots Busy|Eligible Warps" \
    "$res/ncu_${variant}_$kernel.txt" | head -8 | tee -a "$res/timeline.txt"
  save
done < "$pack/kernels.txt"
stamp "done"
save

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Session 41, run 2 (carry gpu-pack/s41b.tar.xz). The pack holds the
# runtime's binaries and:
#   check/   prepare_check.sh's cases from branch s41-colsum-halving at
#            68eec0b: main + the cross-entropy kernels' exp(x - max) by
#            ex2.approx.ftz (gpt_bench, gpt_bench_tanh and gpt_deep weights
#            are regenerated here and checked against check.sha256);
#   step/    GPT-2 B16 T1024: main's bf16 and fp8 (009a3de), the branch's
#            as variants bf16-ce and fp8-ce;
#   kernels.txt  the kernels Nsight Compute reads.
# Parts: 1. check.sh on the branch's compiler; 2. GPT-2 main beside the
# branch with eager AMP and torch.compile, 20 steps, every txopt step
# profiled; 3. Nsight Compute. Results stay small: everything goes into
# $OUT/s41run2.tgz (saved after each part) and $OUT/summary.txt; the
# check's per-case state stays in /tmp.
set -uo pipefail
root="$(pwd)"
res=/tmp/res; mkdir -p "$res"
save() {
  tar -C /tmp -czf "$OUT/s41run2.tgz.tmp" res && mv "$OUT/s41run2.tgz.tmp" "$OUT/s41run2.tgz"
  cp "$res/timeline.txt" "$OUT/summary.txt" 2>/dev/null || true
}
start=$(date +%s)
stamp() { echo "[$(( $(date +%s) - start )) s] $*" | tee -a "$res/timeline.txt"; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee "$res/gpu.txt" | tee -a "$res/timeline.txt"
tar -xJf gpu-pack/s41b.tar.xz
pack="$root/s41b"
mkdir -p build/runtime && cp -r "$pack/bin" build/runtime/bin

stamp "1. check.sh (branch compiler)"
python3 scripts/export_gpt_external.py "$pack/check/gpt_bench.onnx" --layers 1 --d-model 256 --vocab 512 --seq 512 --batch 4 > /dev/null
python3 scripts/export_gpt_external.py "$pack/check/gpt_bench_tanh.onnx" --layers 1 --d-model 256 --vocab 512 --seq 512 --batch 4 --gelu tanh > /dev/null
python3 scripts/export_gpt_external.py "$pack/check/gpt_deep.onnx" --layers 80 --d-model 64 --vocab 128 --seq 32 --batch 2 > /dev/null
(cd "$pack/check" && sha256sum -c ../check.sha256) 2>&1 | tee -a "$res/timeline.txt"
CURVE_STEPS=6000 timeout 240 bash scripts/gpu/check.sh "$pack/check" /tmp/check-res > "$res/check.txt" 2>&1
echo "check.sh rc=$?" >> "$res/check.txt"
grep -E "cases passed|rc=|FAIL|failed" "$res/check.txt" | tee -a "$res/timeline.txt"
save

stamp "2. GPT-2 A/B"
v="bf16 fp8 bf16-ce fp8-ce"
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

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Session 41, run 1 (the device tool's command; carry gpu-pack/s41a.tar.xz
# and this script). The pack (gpu-pack/, gitignored) holds the runtime's
# binaries and what the compiler prepared on the build machine:
#   check/   scripts/gpu/prepare_check.sh's cases, from branch
#            s41-colsum-halving's compiler (main + the amax kernels' column
#            sums by halving exchanges + exp(-a^2) by ex2.approx); the
#            external weights of gpt_bench,
#            gpt_bench_tanh and gpt_deep are regenerated here and checked
#            against check.sha256;
#   step/    GPT-2 B16 T1024: main's bf16 and fp8 artifacts; fp8-half (the
#            halving alone) and bf16-gauss, fp8-gauss (the branch: both
#            changes) as variants (bench/step/run.sh's A/B form);
#   kernels.txt  the kernel names Nsight Compute looks at.
# Parts, each saving its results under $OUT/res as it ends:
#   1. check.sh on the branch's compiler;
#   2. GPT-2 main bf16/fp8 beside the variants, with eager AMP and
#      torch.compile, 20 steps, every txopt step profiled per command (JSON
#      kept);
#   3. Nsight Compute (--set full, the second launch) on kernels.txt's.
set -uo pipefail
root="$(pwd)"
res="$OUT/res"; mkdir -p "$res"
save() { tar -C "$OUT" -czf "$OUT/s41run1.tgz.tmp" res && mv "$OUT/s41run1.tgz.tmp" "$OUT/s41run1.tgz"; }
start=$(date +%s)
stamp() { echo "[$(( $(date +%s) - start )) s] $*" | tee -a "$res/timeline.txt"; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee "$res/gpu.txt"
tar -xJf gpu-pack/s41a.tar.xz
pack="$root/s41a"
mkdir -p build/runtime && cp -r "$pack/bin" build/runtime/bin

stamp "1. check.sh (branch compiler)"
py=python3
$py scripts/export_gpt_external.py "$pack/check/gpt_bench.onnx" --layers 1 --d-model 256 --vocab 512 --seq 512 --batch 4 > /dev/null
$py scripts/export_gpt_external.py "$pack/check/gpt_bench_tanh.onnx" --layers 1 --d-model 256 --vocab 512 --seq 512 --batch 4 --gelu tanh > /dev/null
$py scripts/export_gpt_external.py "$pack/check/gpt_deep.onnx" --layers 80 --d-model 64 --vocab 128 --seq 32 --batch 2 > /dev/null
(cd "$pack/check" && sha256sum -c ../check.sha256) > "$res/check_weights.txt" 2>&1
cat "$res/check_weights.txt"
CURVE_STEPS=6000 timeout 240 bash scripts/gpu/check.sh "$pack/check" "$res/check" > "$res/check.txt" 2>&1
echo "check.sh rc=$?" >> "$res/check.txt"
grep -E "PASS|FAIL|rc=|clean|failed" "$res/check.txt" | tail -25
save

stamp "2. GPT-2 A/B"
v="bf16 fp8 fp8-half bf16-gauss fp8-gauss"
PRECISIONS="$v" TORCH_MODES="eager-bf16 compile-bf16" PROFILES="$v" \
  timeout 240 bash bench/step/run.sh "$pack/step" "$res/gpt2" gpt2 20 > "$res/gpt2.txt" 2>&1
echo "run.sh rc=$?" >> "$res/gpt2.txt"
tail -30 "$res/gpt2.txt"
rm -f "$res"/gpt2/*.npy
save

stamp "3. Nsight Compute"
w=/tmp/txopt-bench-gpt2
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
while read -r variant kernel; do
  if [ $(( $(date +%s) - start )) -gt 500 ]; then
    stamp "ncu $variant $kernel skipped: out of time"; continue
  fi
  timeout 45 "$ncu" --clock-control none --set full -k "regex:^${kernel}\$" --launch-skip 1 --launch-count 1 \
    "build/runtime/bin/txrun" "$pack/step/gpt2_$variant.txa" --weights-dir "$w" --data "$w/tokens.npy" \
    --steps 2 --no-graph > "$res/ncu_${variant}_$kernel.txt" 2>&1
  echo "ncu $variant $kernel rc=$?" | tee -a "$res/timeline.txt"
  grep -E "Duration|DRAM Throughput|Memory Throughput|Registers Per|Achieved Occupancy|Issue Slots Busy|Eligible Warps" \
    "$res/ncu_${variant}_$kernel.txt" | head -12
  save
done < "$pack/kernels.txt"
stamp "done"
save

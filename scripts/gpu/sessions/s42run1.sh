#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Session 42, run 1 (carry gpu-pack/s42a.tar.xz). Three compilers from one
# build, told apart by environment hooks (not committed as such):
#   main    TXOPT_NO_FWD_OCC=1: main's kernels;
#   fwd     the forward norms' block bound (commit on s42-norm-occupancy);
#   reload  fwd plus the norm gradients reading their row again after the
#           row sums instead of holding it (TXOPT_RELOAD=1 block rows,
#           TXOPT_RELOAD_WARP=1 warp rows) and the warp-row gradients
#           bounded to three blocks an SM (TXOPT_WARP_CTAS=3: 77-80
#           registers, no spills, where main's took 110-127).
# 1. GPT-2 B16 T1024: bf16 / bf16-reload / fp8 / fp8-reload beside eager
#    AMP and torch.compile, 20 steps, profiled.
# 2. The norm micro-benchmark (768, 4096, 8192; eager peers), main and
#    reload (fwd's forward kernels are reload's, its gradients main's).
# 3. Nsight Compute on GPT-2 bf16's k43 norm gradient, main and reload.
# Results: $OUT/s42run1.tgz, $OUT/summary.txt.
set -uo pipefail
source scripts/gpu/sessions/lib.sh
run_begin s42run1 s42a

gpt2_ab "$pack/step" "bf16 bf16-reload fp8 fp8-reload" "eager-bf16 compile-bf16" 20 260

for variant in main reload; do
  if [ "$(elapsed)" -gt 470 ]; then stamp "norm $variant skipped: out of time"; continue; fi
  norm_bench "$pack/norm-$variant" "$variant" 3 100
done

w=/tmp/txopt-bench-gpt2
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for variant in bf16 bf16-reload; do
  if [ "$(elapsed)" -gt 540 ]; then stamp "ncu $variant skipped: out of time"; continue; fi
  timeout 40 "$ncu" --clock-control none --set full -k "regex:^k43_layer_norm_grad\$" --launch-skip 1 --launch-count 1 \
    build/runtime/bin/txrun "$pack/step/gpt2_$variant.txa" --weights-dir "$w" --data "$w/tokens.npy" \
    --steps 2 --no-graph > "$res/ncu_$variant.txt" 2>&1
  stamp "ncu $variant k43 rc=$?"
  grep -E "Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Issue Slots Busy|Eligible Warps" \
    "$res/ncu_$variant.txt" | head -8 | tee -a "$res/timeline.txt"
  save
done
stamp "done"
save

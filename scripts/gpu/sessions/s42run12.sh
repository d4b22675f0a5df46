#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Session 42, runs 1 and 2 in one call (carry gpu-pack/s42a-lite.tar.xz, s42a
# without its binaries, and gpu-pack/s42b.tar.xz), for when the device budget left allows one start:
# check.sh on the branch's compiler (s42b), then GPT-2 bf16/fp8 against
# the reload variants with eager AMP for the losses (15 steps, no
# torch.compile: its warm-up does not fit), then the norm micro-benchmark,
# main and reload, each part only if the time left allows it.
# Results: $OUT/s42run12.tgz, $OUT/summary.txt.
set -uo pipefail
source scripts/gpu/sessions/lib.sh
run_begin s42run12 s42b
tar -xJf gpu-pack/s42a-lite.tar.xz
packa="$root/s42a"

run_check "$pack/check" 300
if [ "$(elapsed)" -lt 400 ]; then
  gpt2_ab "$packa/step" "bf16 bf16-reload fp8 fp8-reload" "eager-bf16" 15 150
fi
for variant in main reload; do
  if [ "$(elapsed)" -gt 500 ]; then stamp "norm $variant skipped: out of time"; continue; fi
  norm_bench "$packa/norm-$variant" "$variant" 1 80
done
stamp "done"
save

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

stamp "check.sh (branch s42-norm-occupancy)"
export_check_models "$pack/check"
CURVE_STEPS=6000 timeout 300 bash scripts/gpu/check.sh "$pack/check" /tmp/check-res > "$res/check.txt" 2>&1
echo "check.sh rc=$?" >> "$res/check.txt"
grep -E "cases passed|rc=|FAIL|failed|precision curves|vs f32|learned" "$res/check.txt" | tee -a "$res/timeline.txt"
save

if [ $(( $(date +%s) - run_start )) -lt 400 ]; then
  stamp "GPT-2 A/B"
  v="bf16 bf16-reload fp8 fp8-reload"
  PRECISIONS="$v" TORCH_MODES="eager-bf16" PROFILES="$v" \
    timeout 150 bash bench/step/run.sh "$packa/step" /tmp/gpt2 gpt2 15 > "$res/gpt2.txt" 2>&1
  echo "run.sh rc=$?" >> "$res/gpt2.txt"
  mkdir -p "$res/gpt2" && cp /tmp/gpt2/*.json /tmp/gpt2/*.md /tmp/gpt2/*.txt "$res/gpt2/" 2>/dev/null
  grep -E "^\| txopt|^\| pytorch|PASS|FAIL|rc=|layer_norm_grad " "$res/gpt2.txt" | tee -a "$res/timeline.txt"
  save
fi

for variant in main reload; do
  if [ $(( $(date +%s) - run_start )) -gt 500 ]; then stamp "norm $variant skipped: out of time"; continue; fi
  stamp "norm micro-benchmark: $variant"
  REPEATS=1 TORCH_MODES=eager timeout 80 bash bench/norm/run.sh "$packa/norm-$variant" "$res/norm-$variant" \
    > "$res/norm-$variant.txt" 2>&1
  echo "run.sh rc=$?" >> "$res/norm-$variant.txt"
  grep -E "^\| (layer|rms)" "$res/norm-$variant/norm.md" | awk -F'|' '{print $2,$3,$4,$5,$6,$10}' \
    | tee -a "$res/timeline.txt"
  save
done
stamp "done"
save

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Session 43, run 2 (carry gpu-pack/s43a.tar.xz; run 1 was s42run12.sh):
# main with row kernels taking up to 113 KiB of shared memory on sm_90.
#   1. the norm cases against the CPU executor (run_cases.sh: graph replay
#      and direct), with the new op_norm_bias_epilogue_8192 (LayerNorm's
#      three running sums in 96 KiB + 128 bytes of shared memory);
#   2. compute-sanitizer memcheck and racecheck on that case;
#   3. the benchmark harness (bench/run_all.sh): norm first (the change's
#      measure: LayerNorm f32 8192x8192 backward, 28% of copy on an H100 in
#      run 1), then step, loss and fp8cast, then attention and gemm while
#      time is left (their code is unchanged since session 38), each part
#      only if its session-38 time (with margin) fits in TOTAL seconds.
# Results: $OUT/s43run1.tgz, $OUT/summary.txt.
set -uo pipefail
source scripts/gpu/sessions/lib.sh
run_begin s43run1 s43a

stamp "the norm cases against the executor (run_cases.sh)"
timeout 120 bash scripts/gpu/run_cases.sh "$pack/check" /tmp/cases-res > "$res/cases.txt" 2>&1
echo "run_cases.sh rc=$?" >> "$res/cases.txt"
grep -E "cases passed|rc=|FAIL|failed" "$res/cases.txt" | tee -a "$res/timeline.txt"
save

case=op_norm_bias_epilogue_8192
for tool in memcheck racecheck; do
  if timeout 40 compute-sanitizer --tool "$tool" --error-exitcode 9 build/runtime/bin/txrun \
      "$pack/check/$case.txa" --steps 2 --no-graph > "$res/$tool-$case.log" 2>&1; then
    stamp "$case $tool: clean"
  else
    stamp "$case $tool: FAILED or cut off"; grep -m3 -E "ERROR|Invalid|Race" "$res/$tool-$case.log" | tee -a "$res/timeline.txt"
  fi
done
save

# One part a call, each saved as it ends (the device may cut the call at
# the budget left); TOTAL: the seconds this script may take (default 560).
# Each part's estimate is its time on the H200 in session 38, with margin.
total="${TOTAL:-560}"
for part in norm:90 step:120 loss:30 fp8cast:30 attention:75 gemm:180; do
  name="${part%%:*}" need="${part##*:}"
  if [ $(( $(elapsed) + need )) -gt "$total" ]; then stamp "harness $name skipped: out of time"; continue; fi
  stamp "harness: $name"
  PARTS="$name" timeout $(( total - $(elapsed) )) bash bench/run_all.sh "$pack/harness" /tmp/res/harness \
    >> "$res/harness.txt" 2>&1
  echo "run_all.sh $name rc=$?" | tee -a "$res/harness.txt" "$res/timeline.txt"
  cp /tmp/res/harness/summary.md "/tmp/res/harness/summary-$name.md" 2>/dev/null
  case "$name" in
    norm) norm_rows /tmp/res/harness/norm/norm.md ;;
    step) grep -E "^\| txopt|^\| pytorch|PASS|FAIL" /tmp/res/harness/step/bench.md | tee -a "$res/timeline.txt" ;;
  esac
  save
done
stamp "done"
save

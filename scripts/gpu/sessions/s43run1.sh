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

run_cases_check "$pack/check"
sanitize_case "$pack/check" op_norm_bias_epilogue_8192 memcheck racecheck
# Each part's estimate is its time on the H200 in session 38, with margin.
total="${TOTAL:-560}"
harness_parts norm:90 step:120 loss:30 fp8cast:30 attention:75 gemm:180
stamp "done"
save

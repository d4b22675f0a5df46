#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Prepared in session 44 for the first run of the next (carry
# gpu-pack/s44c.tar.xz, built on branch s44-pad-classes; recipe in
# docs/DeviceLog.md session 44): tx-pad-loss-classes on the GPU.
#   1. the vocabulary-1030 cases against the executor (run_cases.sh: graph
#      replay and direct): BERT f32 (final state), BERT bf16 and Llama fp8
#      (losses), the GPU steps padded, the executor's not;
#   2. compute-sanitizer memcheck on the bf16 case (the padded GEMMs, the
#      loss kernels over 1032-wide rows, the sliced gradients);
#   3. BERT-base's whole step, padded (bf16, fp8) against unaligned
#      (bf16-nopad, fp8-nopad), beside eager AMP and torch.compile, every
#      configuration profiled. Predicted (H200): the three LM-head GEMMs
#      9.2 -> ~3.0 ms, the step 35.3 -> ~29.5 ms (~1.17x torch.compile's
#      34.4), fp8 31.5 -> ~25.5; bf16's peak memory unchanged (its arena
#      -30 MB), fp8's +0.9 GiB (its arena 9.30 -> 10.30 GB by the plan:
#      the planner's packing, the peak of live temporaries the same).
# Results: $OUT/s44run4.tgz, $OUT/summary.txt.
set -uo pipefail
source scripts/gpu/sessions/lib.sh
run_begin s44run4 s44c

run_cases_check "$pack/check"
sanitize_case "$pack/check" bert_vocab1030_bf16 memcheck

stamp "bert: padded against unaligned, beside eager AMP and torch.compile"
PRECISIONS="bf16 bf16-nopad fp8 fp8-nopad" TORCH_MODES="eager-bf16 compile-bf16" \
  PROFILES="bf16 bf16-nopad fp8" timeout 300 bash bench/step/run.sh "$pack/step" /tmp/res/bert bert 15 \
  > "$res/bert.txt" 2>&1
echo "run.sh bert rc=$?" | tee -a "$res/bert.txt" "$res/timeline.txt"
grep -E "^\| txopt|^\| pytorch|PASS|FAIL" "$res/bert.txt" | tee -a "$res/timeline.txt"
grep -E "n384_MatMul" /tmp/res/bert/profile_bf16.txt /tmp/res/bert/profile_bf16-nopad.txt | head -6 \
  | tee -a "$res/timeline.txt"
stamp "done"
save

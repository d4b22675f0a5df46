#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Prepared in session 45 for the first run of the next, on branch
# s45-rotary-vectors (s45-lm-head-rotary plus the rotary kernels' vector
# loads), carry gpu-pack/s45b.tar.xz (built from the branch's code; recipe
# in docs/DeviceLog.md session 45). It measures both branches at once;
# should a case fail, s45run3.sh on s45-lm-head-rotary with pack s45a
# tells which branch. Merge only if every case PASSes and the steps gain:
#   1. the cuBLASLt bias-gradient probe (scripts/gpu/probes/bgrad_probe.cu);
#   2. every check.sh case against the executor (run_cases.sh, graph and
#      direct; no precision curves);
#   3. BERT-base new (bf16, fp8) against session 44's artifacts (-s44),
#      beside eager AMP and torch.compile. Predicted (relative, whichever
#      card): bf16 -2.0 to -2.5 ms (the LM-head bias in the epilogue, its
#      gradient summed from the bf16 loss gradient, the loss in place in
#      bf16), fp8 the same; peak memory -2 GB (arena bf16 8.93 -> 6.94 GB,
#      fp8 10.30 -> 7.35 GB);
#   4. the Llama-style model new against s45-lm-head-rotary's artifacts
#      (-lmhr: the recomputed head-split transposes) and session 44's
#      (-s44). Predicted: -lmhr -0.5 to -1.0 ms against -s44 (24 f32
#      transposes gone); new -1.0 to -1.5 ms against -lmhr (the rotary
#      kernels and their gradients, 2-byte scalar loads before, 16-byte
#      vectors now: ~2.1 ms at 31-39% of copy on the H200 toward ~0.7).
# Results: $OUT/s45run4.tgz, $OUT/summary.txt.
set -uo pipefail
source scripts/gpu/sessions/lib.sh
run_begin s45run4 s45b

bias_grad_probe

run_cases_check "$pack/check"

step_ab bert "$pack/step" "bf16 bf16-s44 fp8 fp8-s44" "bf16 bf16-s44" "eager-bf16 compile-bf16" 15 200
step_ab llama "$pack/step" "bf16 bf16-lmhr bf16-s44 fp8 fp8-s44" "bf16 bf16-lmhr bf16-s44" \
  "eager-bf16 compile-bf16" 15 200
stamp "done"
save

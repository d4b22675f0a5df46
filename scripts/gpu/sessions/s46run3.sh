#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Session 46, run 3, on branch s46-rotary-spans (s46-norm-grad-dy plus the
# loop kernels' group pieces: Llama's rotary kernels and their gradients in
# 16-byte loads), carry gpu-pack/s46b.tar.xz (recipe in docs/DeviceLog.md
# session 46). It measures both branches at once; should a case fail,
# s46run2.sh with pack s46a tells which one.
#   1. every check.sh case against the executor (all kernels compiled by
#      this branch; 68 cases), graph and direct; memcheck on the block-row
#      norm-gradient case;
#   2. Llama: new (bf16, fp8) against s46-norm-grad-dy's artifact (-ngd)
#      and main's kernels (-nonormgrad: s46-norm-grad-dy's compiler with
#      --no-norm-grad-input-fusion), beside eager AMP and torch.compile.
#      Predicted (H100): -ngd -1.0 to -1.5 ms against -nonormgrad (the
#      adds); new -0.8 to -1.2 ms against -ngd (the rotary kernels, 1.20 +
#      0.74 ms at 33% and 54% of copy in run 1, toward ~80%);
#   3. BERT (no rotary): new against -nonormgrad; predicted -0.3 to -0.6
#      ms (two adds a layer).
# Merge both branches if every case PASSes and the steps gain.
# Results: $OUT/s46run3.tgz, $OUT/summary.txt.
set -uo pipefail
source scripts/gpu/sessions/lib.sh
run_begin s46run3 s46b

# Most important first: the device budget left (608 s) may cut the call
# (each part is saved as it ends).
run_cases_check "$pack/check"
step_ab llama "$pack/step" "bf16 bf16-ngd bf16-nonormgrad fp8 fp8-nonormgrad" \
  "bf16 bf16-ngd bf16-nonormgrad" "eager-bf16 compile-bf16" 15 240
step_ab bert "$pack/step" "bf16 bf16-nonormgrad fp8 fp8-nonormgrad" "bf16 bf16-nonormgrad" \
  "eager-bf16 compile-bf16" 15 200
sanitize_case "$pack/check" op_norm_grad_inputs_2048_bf16 memcheck
stamp "done"
save

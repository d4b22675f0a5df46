#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Session 46, run 2, on branch s46-norm-grad-dy (main plus the norm
# gradients computing their dy and an unstored residual r), carry
# gpu-pack/s46a.tar.xz (recipe in docs/DeviceLog.md session 46):
#   1. every check.sh case against the executor, with the four new
#      op_norm_grad_inputs_* cases (graph and direct), and memcheck on the
#      block-row case (its next row's dy computed ahead);
#   2. Llama and BERT new against the same compiler with
#      --no-norm-grad-input-fusion (-nonormgrad: main's kernels), beside
#      eager AMP and torch.compile. Predicted (H100 figures of run 1):
#      Llama bf16 -1.0 to -1.5 ms (k69/k74/k76 adds, 1.74 ms, go; the norm
#      gradients read 2-3 bf16 products and two f32 residual terms
#      instead of one f32 dy; launches 502 -> 455); BERT bf16 -0.3 to
#      -0.6 ms (launches 337 -> 313: two adds a layer go). GPT-2's steps
#      are not run: the fusion finds nothing in the benchmark's export
#      (276 launches either way, the same kernels).
# Merge only if every case PASSes and no step loses.
# Results: $OUT/s46run2.tgz, $OUT/summary.txt.
set -uo pipefail
source scripts/gpu/sessions/lib.sh
run_begin s46run2 s46a

run_cases_check "$pack/check"
sanitize_case "$pack/check" op_norm_grad_inputs_2048_bf16 memcheck

step_ab llama "$pack/step" "bf16 bf16-nonormgrad fp8 fp8-nonormgrad" "bf16 bf16-nonormgrad" "eager-bf16 compile-bf16" 15 200
step_ab bert "$pack/step" "bf16 bf16-nonormgrad fp8 fp8-nonormgrad" "bf16 bf16-nonormgrad" "eager-bf16 compile-bf16" 15 200
stamp "done"
save

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Prepared in session 45 for the first run of the next, on branch
# s45-lm-head-rotary (carry gpu-pack/s45a.tar.xz, built from the branch's
# code; recipe in docs/DeviceLog.md session 45). Merge only if every case
# PASSes and the steps gain:
#   1. the cuBLASLt bias-gradient probe (scripts/gpu/probes/bgrad_probe.cu):
#      do BGRADA / BGRADB take the weight-gradient GEMMs as txopt writes
#      them (bf16, f32 or bf16 bias gradient), and at what cost;
#   2. every check.sh case against the executor (run_cases.sh, graph and
#      direct; no precision curves): the LM-head bias in the epilogue, its
#      gradient summed from the rounded loss gradient, and the recomputed
#      head splits change plans (bert_vocab1030*, llama_*);
#   3. BERT-base and the Llama-style model, new (bf16, fp8) against session
#      44's artifacts (bf16-s44, fp8-s44: same exports, the compiler before
#      4308f64), beside eager AMP and torch.compile. Predicted (relative,
#      whichever card): BERT bf16 -2.0 to -2.5 ms (the bias add's kernel,
#      1.0 ms on the H100, gone; the loss reads and writes bf16 logits in
#      place; the bias gradient's column sum reads 1 GB of bf16 where it
#      read 2 GB of f32 and wrote 1 GB), fp8 the same; peak memory -2 GB
#      (arena bf16 8.93 -> 6.94 GB, fp8 10.30 -> 7.35 GB by the plans);
#      Llama bf16 -0.5 to -1.0 ms (the 24 f32 transposes gone, the rotary
#      kernels read bf16), fp8 likewise.
# Results: $OUT/s45run3.tgz, $OUT/summary.txt.
set -uo pipefail
source scripts/gpu/sessions/lib.sh
run_begin s45run3 s45a

bias_grad_probe

run_cases_check "$pack/check"

for model in bert llama; do
  step_ab "$model" "$pack/step" "bf16 bf16-s44 fp8 fp8-s44" "bf16 bf16-s44 fp8" \
    "eager-bf16 compile-bf16" 15 240
done
stamp "done"
save

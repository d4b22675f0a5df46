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

export_check_models "$pack/check"
run_cases_check "$pack/check"

for model in bert llama; do
  stamp "$model: new against session 44's artifacts, beside eager AMP and torch.compile"
  PRECISIONS="bf16 bf16-s44 fp8 fp8-s44" TORCH_MODES="eager-bf16 compile-bf16" \
    PROFILES="bf16 bf16-s44 fp8" timeout 240 bash bench/step/run.sh "$pack/step" "/tmp/res/$model" "$model" 15 \
    > "$res/$model.txt" 2>&1
  echo "run.sh $model rc=$?" | tee -a "$res/$model.txt" "$res/timeline.txt"
  grep -E "^\| txopt|^\| pytorch|PASS|FAIL" "$res/$model.txt" | tee -a "$res/timeline.txt"
  grep -E "^  kernel|^  gemm|^  attention" "/tmp/res/$model/profile_bf16.txt" "/tmp/res/$model/profile_bf16-s44.txt" \
    2>/dev/null | head -30 | tee -a "$res/timeline.txt"
  save
done
stamp "done"
save

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Session 44, run 2 (carry gpu-pack/s43a.tar.xz for the runtime binaries and
# gpu-pack/s44b.tar.xz): the held-out architectures issue 11 is checked on,
# as whole training steps beside PyTorch in the same run (bench/step/run.sh,
# new models llama and bert: a Llama-style decoder, RMSNorm/RoPE/SwiGLU,
# 12 x 768, B16 T1024, vocabulary 32000; a BERT-base encoder, B32 T512,
# vocabulary 30522). txopt bf16 and fp8 (both profiled) against eager AMP
# bf16 (the losses' reference) and torch.compile AMP bf16, 15 steps.
# Results: $OUT/s44run2.tgz, $OUT/summary.txt.
set -uo pipefail
source scripts/gpu/sessions/lib.sh
run_begin s44run2 s43a
tar -xJf gpu-pack/s44b.tar.xz
total="${TOTAL:-540}"

for model in llama bert; do
  if [ $(( $(elapsed) + 150 )) -gt "$total" ]; then stamp "$model skipped: out of time"; continue; fi
  stamp "$model: txopt bf16, fp8 beside eager AMP and torch.compile"
  PRECISIONS="bf16 fp8" TORCH_MODES="eager-bf16 compile-bf16" PROFILES="bf16 fp8" \
    timeout $(( total - $(elapsed) )) bash bench/step/run.sh "$root/s44b/step" "/tmp/res/$model" "$model" 15 \
    > "$res/$model.txt" 2>&1
  echo "run.sh $model rc=$?" | tee -a "$res/$model.txt" "$res/timeline.txt"
  grep -E "^\| txopt|^\| pytorch|PASS|FAIL|error" "$res/$model.txt" | head -20 | tee -a "$res/timeline.txt"
  save
done
stamp "done"
save

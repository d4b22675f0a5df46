#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Session 42, run 3 (carry gpu-pack/s42a-lite.tar.xz and gpu-pack/s42b.tar.xz):
# what ~250 s of device time allow after the failed starts. On the branch's
# compiler, the cases whose kernels changed against the CPU executor
# (run_cases.sh: graph replay and direct; every norm case, the bf16
# transformers, op_empty_inner), compute-sanitizer memcheck on two of them
# (block rows of 8192 reloading; warp rows with the residual epilogue under
# the three-block bound), then GPT-2 bf16 against bf16-reload with eager
# AMP's losses. The curves, initcheck/racecheck and the PyTorch comparison are
# left to the next full check.sh.
# Results: $OUT/s42run3.tgz, $OUT/summary.txt.
set -uo pipefail
source scripts/gpu/sessions/lib.sh
run_begin s42run3 s42b
tar -xJf gpu-pack/s42a-lite.tar.xz
packa="$root/s42a"

stamp "the norm cases and the bf16 models against the executor (run_cases.sh)"
# A case list of its own beside the pack's files: the cases whose kernels
# changed (every norm case) and the bf16 transformers (warp-row gradients
# with the residual and column-sum epilogues).
sub=/tmp/sub; mkdir -p "$sub"; ln -sf "$pack/check"/* "$sub/"; rm -f "$sub/cases.txt"
grep -E "^(op_norm|gpt2_op18_loss_bf16|llama_op18_loss_bf16|nanogpt_op18_loss_bf16|op_empty_inner)" \
  "$pack/check/cases.txt" > "$sub/cases.txt"
timeout 120 bash scripts/gpu/run_cases.sh "$sub" /tmp/cases-res > "$res/cases.txt" 2>&1
echo "run_cases.sh rc=$?" >> "$res/cases.txt"
grep -E "cases passed|rc=|FAIL|failed" "$res/cases.txt" | tee -a "$res/timeline.txt"
save

stamp "memcheck on the changed norm kernels"
for case in op_norms_8192 op_norm_bias_epilogue_residual_bf16; do
  if [ "$(elapsed)" -gt 140 ]; then stamp "memcheck $case skipped: out of time"; continue; fi
  if timeout 30 compute-sanitizer --tool memcheck --error-exitcode 9 build/runtime/bin/txrun \
      "$pack/check/$case.txa" --weights-dir "$pack/check" --steps 2 --no-graph > "$res/memcheck-$case.log" 2>&1; then
    stamp "$case memcheck: clean"
  else
    stamp "$case memcheck: FAILED or cut off"; grep -m3 -E "ERROR|Invalid" "$res/memcheck-$case.log" | tee -a "$res/timeline.txt"
  fi
done
save

if [ "$(elapsed)" -lt 160 ]; then
  gpt2_ab "$packa/step" "bf16 bf16-reload" "eager-bf16" 10 80
fi
stamp "done"
save

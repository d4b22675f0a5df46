#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Session 42, run 3 (carry gpu-pack/s42a-lite.tar.xz and gpu-pack/s42b.tar.xz):
# what ~300 s of device time allow after the failed starts. check.sh's
# first part on the branch's compiler (every case against the CPU executor,
# run_cases.sh: graph replay and direct), compute-sanitizer memcheck on the
# norm cases whose kernels changed (block rows of 8192 and 4096-6000 reload;
# warp rows, with the column-sum and residual epilogues, reload under the
# three-block bound), then GPT-2 bf16 against bf16-reload with eager AMP's
# losses. The curves, initcheck/racecheck and the PyTorch comparison are
# left to the next full check.sh.
# Results: $OUT/s42run3.tgz, $OUT/summary.txt.
set -uo pipefail
source scripts/gpu/sessions/lib.sh
run_begin s42run3 s42b
tar -xJf gpu-pack/s42a-lite.tar.xz
packa="$root/s42a"

stamp "every case against the executor (run_cases.sh)"
export_check_models "$pack/check"
timeout 200 bash scripts/gpu/run_cases.sh "$pack/check" /tmp/cases-res --weights-dir "$pack/check" > "$res/cases.txt" 2>&1
echo "run_cases.sh rc=$?" >> "$res/cases.txt"
grep -E "cases passed|rc=|FAIL|failed" "$res/cases.txt" | tee -a "$res/timeline.txt"
save

stamp "memcheck on the changed norm kernels"
for case in op_norms_8192 op_norms_wide_rows_bf16 op_norms_warp_rows_bf16 op_norm_bias_epilogue_residual_bf16; do
  if [ $(( $(date +%s) - run_start )) -gt 230 ]; then stamp "memcheck $case skipped: out of time"; continue; fi
  if timeout 30 compute-sanitizer --tool memcheck --error-exitcode 9 build/runtime/bin/txrun \
      "$pack/check/$case.txa" --weights-dir "$pack/check" --steps 2 --no-graph > "$res/memcheck-$case.log" 2>&1; then
    stamp "$case memcheck: clean"
  else
    stamp "$case memcheck: FAILED or cut off"; grep -m3 -E "ERROR|Invalid" "$res/memcheck-$case.log" | tee -a "$res/timeline.txt"
  fi
done
save

if [ $(( $(date +%s) - run_start )) -lt 250 ]; then
  stamp "GPT-2 bf16 vs bf16-reload"
  v="bf16 bf16-reload"
  PRECISIONS="$v" TORCH_MODES="eager-bf16" PROFILES="$v" \
    timeout 100 bash bench/step/run.sh "$packa/step" /tmp/gpt2 gpt2 10 > "$res/gpt2.txt" 2>&1
  echo "run.sh rc=$?" >> "$res/gpt2.txt"
  mkdir -p "$res/gpt2" && cp /tmp/gpt2/*.json /tmp/gpt2/*.md /tmp/gpt2/*.txt "$res/gpt2/" 2>/dev/null
  grep -E "^\| txopt|^\| pytorch|PASS|FAIL|rc=|layer_norm_grad " "$res/gpt2.txt" | tee -a "$res/timeline.txt"
fi
stamp "done"
save

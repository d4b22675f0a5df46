#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# On the GPU machine (issue 10, FP8 attention; not run yet): cuDNN's FP8
# attention as the runtime builds it (txrt-fp8-attention-probe) against the
# formulas of tx.fp8_attention / tx.fp8_attention_grad
# (check_fp8_attention.py, numpy), at head dim 128 (the only one cuDNN's
# FP8 backward takes on Hopper), with E5M2 and E4M3 gradients; then its
# time beside the runtime's bf16 attention at the GPT-1.3B and Llama-8B-like
# shapes of ANCHORS.md (GPT-2's d = 64 has no FP8 backward on Hopper).
# Usage: bench/attention/fp8_probe.sh [OUT_DIR=$OUT or bench-out]
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${1:-${OUT:-$root/bench-out}}"
probe="$root/build/runtime/bin/txrt-fp8-attention-probe"
bf16="$root/build/runtime/bin/txrt-attention-bench"
here="$root/bench/attention"
mkdir -p "$out"
status=0
# The last case puts every scale and amax 4 bytes past a 16-byte boundary,
# as a step's scales sit in its packed FP8 state (the runtime declares each
# scalar's alignment to cuDNN).
for case in "1 2 1 384 128 --causal" "1 2 2 256 128" "1 2 2 256 128 --causal --grad-type e4m3" \
            "1 2 2 256 128 --causal --scalar-offset 4"; do
  name="$(echo "$case" | tr -d ' -')"
  echo "== check $case"
  mkdir -p "$out/fp8dump_$name"
  "$probe" $case --iters 3 --dump "$out/fp8dump_$name" || { status=1; continue; }
  python3 "$here/check_fp8_attention.py" "$out/fp8dump_$name" || status=1
  rm -rf "$out/fp8dump_$name"
done
: > "$out/fp8_attention.jsonl"
for shape in "8 16 16 1024 128" "2 32 32 4096 128"; do
  echo "== time $shape"
  "$probe" $shape --causal --iters 20 | tee -a "$out/fp8_attention.jsonl" || status=1
  "$bf16" $shape --causal --iters 20 | tee -a "$out/fp8_attention.jsonl" || status=1
done
exit $status

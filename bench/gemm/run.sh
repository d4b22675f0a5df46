#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# GPU side of the GEMM benchmark (issue 11: FP8 GEMM through cuBLASLt >=
# 0.98x torch._scaled_mm at the same shape): for each shape, txopt's GEMM
# (txrt-gemm-bench: the runtime's cuBLASLt call with a step's descriptors;
# FP8 split and fast accumulation, heuristic's first choice and tuned; bf16)
# and PyTorch's (torch._scaled_mm, split and fast; torch.matmul bf16) in
# the same run. Writes OUT/gemm.jsonl and OUT/gemm.md (summarize.py).
# Usage: bench/gemm/run.sh OUT   (SHAPES="MxNxK ..." to change the set:
#   the default is 8192^3 and the forward GEMMs of GPT-2-124M (16384
#   tokens) and GPT-1.3B (8192 tokens))
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${1:?usage: run.sh OUT}"
bench="$root/build/runtime/bin/txrt-gemm-bench"
mkdir -p "$out"
shapes="${SHAPES:-8192x8192x8192 16384x2304x768 16384x768x768 16384x3072x768 16384x768x3072 8192x6144x2048 8192x2048x2048 8192x8192x2048 8192x2048x8192}"
: > "$out/gemm.jsonl"
status=0
for shape in $shapes; do
  IFS=x read -r m n k <<< "$shape"
  for flags in "--type fp8" "--type fp8 --fast-accum" "--type fp8 --tune" \
               "--type fp8 --fast-accum --tune" "--type bf16"; do
    # shellcheck disable=SC2086
    "$bench" "$m" "$n" "$k" $flags >> "$out/gemm.jsonl" || { echo "txrt-gemm-bench $shape $flags failed"; status=1; }
  done
done
# shellcheck disable=SC2086
python3 "$root/bench/gemm/torch_gemm.py" $shapes >> "$out/gemm.jsonl" || { echo "torch_gemm.py failed"; status=1; }
python3 "$root/bench/gemm/summarize.py" "$out/gemm.jsonl" > "$out/gemm.md" || status=1
cat "$out/gemm.md"
exit $status

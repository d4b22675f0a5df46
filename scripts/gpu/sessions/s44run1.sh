#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Session 44, run 1 (carry gpu-pack/s43a.tar.xz and gpu-pack/s44a.tar.xz):
# main as it stands (its compiler unchanged since d4935dd), on whichever
# card comes.
#   On an H200 (owed since session 43): the norm cases against the
#   executor and the sanitizers on op_norm_bias_epilogue_8192 (pack s43a),
#   the LM head's GEMM at chunked row counts (below), then the whole
#   harness, norm first, each part only if its time fits in TOTAL seconds.
#   On any other card (the harness ran on an H100 in session 43): check.sh
#   over every case on main's compiler (pack s44a: owed since the 113 KiB
#   change), the chunked GEMMs, then the harness's norm and step parts.
# The chunked GEMMs: the data bench/NOTES.md session 41 asked for before a
# fused LM head and loss in row chunks is built. cuBLASLt (txrt-gemm-bench,
# the step's descriptors) at GPT-2's LM head, logits[M, 50304] = x[M, 768]
# W^T, for M from 256 rows (a chunk whose 26 MB of logits stay in L2) to
# the whole 16384; and the chunk's input gradient (M x 768, K = 50304) and
# weight gradient (50304 x 768, K = M), bf16, in the tool's TN layout (the
# step's backward GEMMs take other layouts at the same shapes).
# Results: $OUT/s44run1.tgz, $OUT/summary.txt.
set -uo pipefail
source scripts/gpu/sessions/lib.sh
run_begin s44run1 s43a
tar -xJf gpu-pack/s44a.tar.xz
total="${TOTAL:-560}"

chunked_gemms() {
  stamp "the LM head's GEMMs by row chunk (bf16, cuBLASLt's first choice)"
  local m
  for m in 256 512 1024 2048 4096 16384; do
    for shape in "$m 50304 768 forward" "$m 768 50304 input-grad" "50304 768 $m weight-grad"; do
      set -- $shape
      echo "$4 M=$1 N=$2 K=$3 $(timeout 20 build/runtime/bin/txrt-gemm-bench "$1" "$2" "$3" --type bf16 --iters 20 2>&1)"
    done
  done | tee "$res/chunked-gemms.txt" | tee -a "$res/timeline.txt"
  save
}

if grep -q "H200" "$res/gpu.txt"; then
  stamp "H200: the norm cases, then the whole harness"
  run_cases_check "$pack/check"
  sanitize_case "$pack/check" op_norm_bias_epilogue_8192 memcheck racecheck
  chunked_gemms
  harness_parts norm:90 step:120 loss:30 fp8cast:30 attention:75 gemm:180
else
  stamp "not an H200: check.sh over every case, then the norm and step parts"
  run_check "$root/s44a/check" 300
  chunked_gemms
  harness_parts norm:90 step:120
fi
stamp "done"
save

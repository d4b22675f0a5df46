#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# On the GPU machine: checks the runtime's fused attention against PyTorch
# (GQA, causal, sliding window) and times it beside PyTorch's SDPA backends
# at the GPT-2, GPT-1.3B and Llama-8B-like shapes of ANCHORS.md.
# Usage: bench/attention/run.sh [OUT_DIR=$OUT or bench-out]   (needs
# build/runtime/bin/txrt-attention-bench, python3 with torch and numpy)
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${1:-${OUT:-$root/bench-out}}"
bin="$root/build/runtime/bin/txrt-attention-bench"
here="$root/bench/attention"
mkdir -p "$out"
status=0
check() { # name, bench args..., then check args after --
  local name="$1"; shift
  local args=() extra=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do args+=("$1"); shift; done
  [ $# -gt 0 ] && shift && extra=("$@")
  mkdir -p "$out/dump_$name"
  echo "== check $name: ${args[*]}"
  "$bin" "${args[@]}" --iters 3 --dump "$out/dump_$name" || { status=1; return; }
  python3 "$here/check_attention.py" "$out/dump_$name" "${extra[@]}" || status=1
  rm -rf "$out/dump_$name"
}
check gqa 2 8 2 512 64 --causal
check d128 2 4 4 256 128 --causal
check window 2 4 4 512 64 --window 128 -- --window 128

: > "$out/attention.jsonl"
for shape in "16 12 12 1024 64" "8 16 16 1024 128" "2 32 32 4096 128"; do
  echo "== time $shape"
  "$bin" $shape --causal --iters 20 | tee -a "$out/attention.jsonl" || status=1
  python3 "$here/peers.py" $shape --iters 20 | tee -a "$out/attention.jsonl" || status=1
done
python3 "$here/report.py" "$out/attention.jsonl" | tee "$out/attention.md"
exit $status

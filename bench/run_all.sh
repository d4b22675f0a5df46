#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The benchmark harness (issue 11) in one command on the GPU machine: each
# part runs txopt and its PyTorch peers in the same run and prints ratios.
#   1. whole steps: GPT-2-124M (B16, T1024) in fp32, bf16, fp8 and fp8 with
#      cached weight codes beside eager fp32, eager AMP bf16 and
#      torch.compile AMP bf16 (bench/step; with the packed AdamW beside
#      torch.optim.AdamW, and the plots);
#   2. softmax cross-entropy over GPT-2's logits, and the FP8 casts
#      (+ transposed codes + amax): txopt's kernels as they ran in the bf16
#      and fp8 steps beside F.cross_entropy and PyTorch's cast (bench/loss,
#      bench/fp8cast; after step, which profiles both steps);
#   3. LayerNorm/RMSNorm forward and backward (bench/norm);
#   4. GEMMs: FP8 beside torch._scaled_mm, bf16 beside torch.matmul
#      (bench/gemm);
#   5. fused attention beside PyTorch's SDPA backends (bench/attention).
# Writes each part's tables under OUT/<part>/ and OUT/summary.md (every
# table, and how long each part took). Exits 1 if a part failed.
# Usage: bench/run_all.sh DIR OUT   (DIR from bench/prepare_all.sh;
#   PARTS="step loss fp8cast norm gemm attention" to run fewer; STEPS=15 for the
#   steps)
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${1:?usage: run_all.sh DIR OUT}" out="${2:?usage: run_all.sh DIR OUT}"
parts="${PARTS:-step loss fp8cast norm gemm attention}"
for p in $parts; do
  case "$p" in
    step | loss | fp8cast | norm | gemm | attention) ;;
    *) echo "run_all.sh: unknown part '$p' (step, loss, fp8cast, norm, gemm, attention)" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
status=0
summary="$out/summary.md"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
echo "# txopt benchmark harness — ${gpu:-no GPU found by nvidia-smi}" > "$summary"
{ echo "- tree: $(git -C "$root" log --oneline -1 2>/dev/null || echo 'no git history here')"
  echo "- artifacts compiled at: $(cat "$dir/compiled_at.txt" 2>/dev/null || echo 'not recorded')"
} >> "$summary"
part() { # name, tables..., -- command...
  local name="$1"; shift
  local tables=()
  while [ "$1" != "--" ]; do tables+=("$1"); shift; done
  shift
  local begin
  begin=$(date +%s)
  echo "== $name"
  "$@" > "$out/$name.log" 2>&1
  local rc=$?
  [ $rc -eq 0 ] || status=1
  printf '\n## %s (%s s, exit %s)\n\n' "$name" "$(( $(date +%s) - begin ))" "$rc" >> "$summary"
  for t in "${tables[@]}"; do
    if [ -f "$t" ]; then cat "$t" >> "$summary"; echo >> "$summary"
    else echo "(no $(basename "$t"): see $name.log)" >> "$summary"; fi
  done
  tail -3 "$out/$name.log"
}
for p in $parts; do
  case "$p" in
    step) part step "$out/step/bench.md" "$out/step/adamw.md" -- \
            env PROFILES="bf16 fp8" "$root/bench/step/run.sh" "$dir/step" "$out/step" gpt2 "${STEPS:-15}" ;;
    loss) part loss "$out/loss/loss.md" -- "$root/bench/loss/run.sh" "$out/step" "$out/loss" ;;
    fp8cast) part fp8cast "$out/fp8cast/fp8cast.md" -- \
               "$root/bench/fp8cast/run.sh" "$out/step" "$out/fp8cast" ;;
    norm) part norm "$out/norm/norm.md" -- "$root/bench/norm/run.sh" "$dir/norm" "$out/norm" ;;
    gemm) part gemm "$out/gemm/gemm.md" -- "$root/bench/gemm/run.sh" "$out/gemm" ;;
    attention) part attention "$out/attention/attention.md" -- \
                 "$root/bench/attention/run.sh" "$out/attention" ;;
  esac
done
# The plots (bench/step/plot.py) where matplotlib is installed; elsewhere
# they are made from the fetched OUT/step on a machine that has it.
if [ -f "$out/step/bench.json" ]; then
  if python3 -c "import matplotlib" 2>/dev/null; then
    python3 "$root/bench/step/plot.py" "$out/step" || status=1
  else
    echo "run_all.sh: no matplotlib here: no plots; run bench/step/plot.py on the fetched $out/step"
  fi
fi
echo "run_all.sh: $summary"
exit $status

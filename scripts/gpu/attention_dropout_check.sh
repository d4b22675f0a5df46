#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Attention dropout through a whole GPU step (issue 10; docs/GPU.md), in two
# phases like data_parallel_check.sh:
#   scripts/gpu/attention_dropout_check.sh prepare [DIR]   needs build/bin/txopt
#   scripts/gpu/attention_dropout_check.sh run [DIR]       the GPU machine (txrun)
# cuDNN draws the GPU's dropout mask, the executor another, so the steps are
# compared in distribution: with --lr 0 every step evaluates the same
# parameters on the step's batch (the same batches on both: same seed) with
# a fresh mask, so the per-step loss differences GPU - CPU have mean 0 when
# both drop at the same rate and scale. Checks:
#  1. |mean difference| within 4 standard errors over 400 steps;
#  2. must be able to fail: the same against the CPU without dropout
#     (--no-dropout) is beyond 4 standard errors;
#  3. the CUDA graph run gives the --no-graph run's losses (1e-3): the
#     replayed graph reads each step's key from device memory (a key baked
#     in at capture would repeat step 1's mask, and the losses would part);
#  4. training with dropout on the GPU (--lr 0.05, 200 steps) lowers the
#     mean loss of the last 20 steps below the first 20's.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
mode="${1:-}"
dir="${2:-${OUT:-/tmp/txopt-attention-dropout}}"
py="${PYTHON:-python3}"
[ -x "$root/.venv/bin/python" ] && py="$root/.venv/bin/python"
mkdir -p "$dir"
flags=(--steps 400 --lr 0)
case "$mode" in
prepare)
  set -e
  "$py" "$root/test/Pipelines/make_attention_dropout_model.py" "$dir/drop.onnx" --causal
  "$root/build/bin/txopt" "$dir/drop.onnx" --train --precision=bf16 -q -o "$dir/drop.txa" \
    --gpu-plan="$dir/plan.txt"
  grep -q "^attention_grad .* dropout=" "$dir/plan.txt"
  "$root/build/bin/txopt" "$dir/drop.onnx" --train --precision=bf16 -q -o "$dir/drop.mlir"
  "$root/build/bin/txopt-run" "$dir/drop.mlir" "${flags[@]}" --log "$dir/cpu.jsonl" > /dev/null
  "$root/build/bin/txopt-run" "$dir/drop.mlir" "${flags[@]}" --no-dropout \
    --log "$dir/cpu-off.jsonl" > /dev/null
  rm -f "$dir/drop.mlir"
  echo "prepared $dir; on the GPU machine: $0 run $dir"
  ;;
run)
  txrun="$root/build/runtime/bin/txrun"
  status=0
  for r in 1 2; do
    extra=(); [ $r = 2 ] && extra=(--no-graph)
    "$txrun" "$dir/drop.txa" "${flags[@]}" "${extra[@]}" --log "$dir/gpu$r.jsonl" \
      > "$dir/gpu$r.txt" 2>&1 ||
      { echo "FAIL txrun ${extra[*]}: $(tail -2 "$dir/gpu$r.txt" | tr '\n' ' ')"; exit 1; }
  done
  "$py" - "$dir" <<'PY' || status=1
import json, sys
import numpy as np
d = sys.argv[1]
loss = lambda f: np.array([json.loads(l)["loss"] for l in open(f"{d}/{f}")])
gpu, gpu2, cpu, off = loss("gpu1.jsonl"), loss("gpu2.jsonl"), loss("cpu.jsonl"), loss("cpu-off.jsonl")
ok = True
def judge(name, other, same):
    global ok
    diff = gpu - other
    mean, se = diff.mean(), diff.std(ddof=1) / len(diff) ** 0.5
    good = (abs(mean) <= 4 * se) == same
    ok &= good
    print(f"{'PASS' if good else 'FAIL'} GPU vs {name}: mean loss difference {mean:+.4f}, "
          f"standard error {se:.4f} over {len(diff)} steps "
          f"({'within' if same else 'must be beyond'} 4 standard errors)")
judge("CPU executor with dropout (its own masks)", cpu, True)
judge("CPU executor without dropout", off, False)
# GEMM algorithms may be tuned differently run to run, so not to the bit:
# another mask moves a step's loss by ~10%.
rel = float(np.max(np.abs(gpu - gpu2) / np.abs(gpu2)))
same = rel <= 1e-3
ok &= same
print(f"{'PASS' if same else 'FAIL'} the graph run gives the --no-graph run's losses: "
      f"{rel:.2e} at most (tolerance 1e-3)")
sys.exit(0 if ok else 1)
PY
  "$txrun" "$dir/drop.txa" --steps 200 --lr 0.05 --log "$dir/train.jsonl" > "$dir/train.txt" 2>&1 ||
    { echo "FAIL txrun training: $(tail -2 "$dir/train.txt" | tr '\n' ' ')"; exit 1; }
  "$py" - "$dir/train.jsonl" <<'PY' || status=1
import json, sys
import numpy as np
loss = np.array([json.loads(l)["loss"] for l in open(sys.argv[1])])
first, last = loss[:20].mean(), loss[-20:].mean()
good = np.isfinite(loss).all() and last < 0.8 * first
print(f"{'PASS' if good else 'FAIL'} training with attention dropout on the GPU: mean loss "
      f"{first:.4f} (steps 1-20) -> {last:.4f} (steps 181-200), needs below 0.8x")
sys.exit(0 if good else 1)
PY
  exit $status
  ;;
*)
  echo "usage: $0 prepare|run [DIR]"; exit 2 ;;
esac

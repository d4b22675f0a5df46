#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Gradient accumulation in txrun (issue 12), in two phases:
#   scripts/gpu/grad_accum_check.sh prepare [DIR]   any machine with build/bin/txopt
#   scripts/gpu/grad_accum_check.sh run [DIR]       the GPU machine (txrun)
# prepare compiles the shipped nanoGPT export (batch 2x32) with
# --grad-accum=2 and, as the reference, the same export rebatched to 4x32
# without accumulation (f32, same lr schedule), plus a bf16 --grad-accum=4
# step; writes a token stream; and runs the accumulating step on the CPU
# executor (txopt-run) for the CPU-vs-GPU comparison.
# run trains each artifact with txrun for 20 steps on the same tokens and
# compares (test/Training/compare_accum.py), printing one verdict per check:
#  1. txrun grad-accum 2 x 2x32 vs txrun 4x32: loss and grad_norm within
#     1e-5 relative (the CPU executor: ~1e-7; the GPU adds f32-atomic and
#     GEMM-shape rounding differences);
#  2. txrun grad-accum vs txopt-run grad-accum: within 1e-5 (the tolerance
#     the f32 cases of scripts/gpu/check.sh pass at ~1e-7);
#  3. graph replay equals direct execution (--no-graph) within 1e-5;
#  4. bf16: grad-accum 2 x 2x32 vs 4x32, and vs the CPU executor, within
#     1e-2 (bf16 accuracy), and a negative control (vs 2x32 alone) that fails;
#  5. bf16 grad-accum 4 trains 200 steps with finite, falling loss.
# Exits non-zero if any failed.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
mode="${1:-}"
dir="${2:-${OUT:-/tmp/txopt-grad-accum}}"
py="${PYTHON:-python3}"
[ -x "$root/.venv/bin/python" ] && py="$root/.venv/bin/python"
mkdir -p "$dir"
flags=(--steps 20 --data "$dir/tokens.bin" --warmup 2 --decay-steps 20 --lr 2e-3)
case "$mode" in
prepare)
  txopt="$root/build/bin/txopt"
  model="$root/test/Inputs/models/nanogpt_op18_loss.onnx"
  set -e
  "$py" "$root/test/Training/rebatch_model.py" "$model" "$dir/batch4.onnx" 4
  "$py" "$root/test/Training/make_tokens.py" "$dir/tokens.bin" "$dir/tokens.npy" 20000 512
  "$txopt" "$model" --train --grad-accum=2 -q -o "$dir/accum.txa"
  # The f32 GPU step keeps attention unfused: so does its CPU reference
  # (the bf16 ones fuse it, as their GPU steps do).
  "$txopt" "$model" --train --grad-accum=2 --no-fuse=attention -q -o "$dir/accum.mlir"
  "$txopt" "$dir/batch4.onnx" --train -q -o "$dir/plain4.txa"
  "$txopt" "$model" --train --precision=bf16 --grad-accum=4 -q -o "$dir/accum4-bf16.txa"
  "$txopt" "$model" --train --precision=bf16 --grad-accum=2 -q -o "$dir/accum-bf16.txa"
  "$txopt" "$model" --train --precision=bf16 --grad-accum=2 -q -o "$dir/accum-bf16.mlir"
  "$txopt" "$dir/batch4.onnx" --train --precision=bf16 -q -o "$dir/plain4-bf16.txa"
  "$txopt" "$model" --train --precision=bf16 -q -o "$dir/half-bf16.txa"
  "$root/build/bin/txopt-run" "$dir/accum.mlir" "${flags[@]}" --log "$dir/cpu-accum.jsonl" > /dev/null
  "$root/build/bin/txopt-run" "$dir/accum-bf16.mlir" "${flags[@]}" --log "$dir/cpu-accum-bf16.jsonl" > /dev/null
  echo "prepared $dir; copy it to the GPU machine and run: $0 run $dir"
  ;;
run)
  txrun="$root/build/runtime/bin/txrun"
  status=0
  verdict() { # name, command...
    local name="$1"; shift
    if out="$("$@" 2>&1)"; then echo "PASS $name: $out" | tr '\n' ' '; echo
    else echo "FAIL $name: $out" | tr '\n' ' '; echo; status=1; fi
  }
  "$txrun" "$dir/accum.txa" "${flags[@]}" --log "$dir/gpu-accum.jsonl" > "$dir/gpu-accum.txt" 2>&1 || { echo "FAIL txrun accum.txa:"; tail -3 "$dir/gpu-accum.txt"; exit 1; }
  "$txrun" "$dir/plain4.txa" "${flags[@]}" --log "$dir/gpu-plain4.jsonl" > "$dir/gpu-plain4.txt" 2>&1 || { echo "FAIL txrun plain4.txa:"; tail -3 "$dir/gpu-plain4.txt"; exit 1; }
  "$txrun" "$dir/half-bf16.txa" "${flags[@]}" --log "$dir/gpu-half-bf16.jsonl" > /dev/null 2>&1 || { echo "FAIL txrun half-bf16.txa"; status=1; }
  "$txrun" "$dir/accum.txa" "${flags[@]}" --no-graph --log "$dir/gpu-accum-direct.jsonl" > /dev/null 2>&1 || { echo "FAIL txrun --no-graph"; status=1; }
  compare="$root/test/Training/compare_accum.py"
  verdict "grad-accum 2x(2x32) vs 4x32 on the GPU" "$py" "$compare" "$dir/gpu-accum.jsonl" "$dir/gpu-plain4.jsonl" 1e-5
  verdict "GPU vs CPU executor, grad-accum" "$py" "$compare" "$dir/gpu-accum.jsonl" "$dir/cpu-accum.jsonl" 1e-5
  verdict "graph replay vs direct" "$py" "$compare" "$dir/gpu-accum.jsonl" "$dir/gpu-accum-direct.jsonl" 1e-5
  # bf16: the weight-gradient GEMMs add into the f32 accumulators with bf16
  # operands and an f32 product (no bf16 rounding of the micro-batch
  # gradient, unlike the IR's cast and the CPU executor), so these agree to
  # bf16 accuracy, not f32's.
  "$txrun" "$dir/accum-bf16.txa" "${flags[@]}" --log "$dir/gpu-accum-bf16.jsonl" > "$dir/gpu-accum-bf16.txt" 2>&1 || { echo "FAIL txrun accum-bf16.txa:"; tail -3 "$dir/gpu-accum-bf16.txt"; status=1; }
  "$txrun" "$dir/plain4-bf16.txa" "${flags[@]}" --log "$dir/gpu-plain4-bf16.jsonl" > "$dir/gpu-plain4-bf16.txt" 2>&1 || { echo "FAIL txrun plain4-bf16.txa:"; tail -3 "$dir/gpu-plain4-bf16.txt"; status=1; }
  verdict "bf16 grad-accum 2x(2x32) vs 4x32 on the GPU" "$py" "$compare" "$dir/gpu-accum-bf16.jsonl" "$dir/gpu-plain4-bf16.jsonl" 1e-2
  verdict "bf16 GPU vs CPU executor, grad-accum" "$py" "$compare" "$dir/gpu-accum-bf16.jsonl" "$dir/cpu-accum-bf16.jsonl" 1e-2
  # Must be able to fail: the accumulated run against the plain one on half
  # the batch (2x32) differs by far more than the tolerance.
  if "$py" "$compare" "$dir/gpu-accum-bf16.jsonl" "$dir/gpu-half-bf16.jsonl" 1e-2 > /dev/null 2>&1; then
    echo "FAIL negative control: accumulation indistinguishable from half the batch"; status=1
  else
    echo "PASS negative control: accumulation differs from half the batch"
  fi
  if "$txrun" "$dir/accum4-bf16.txa" --steps 200 --data "$dir/tokens.bin" --log-every 50 \
       --log "$dir/gpu-accum4-bf16.jsonl" > "$dir/gpu-accum4-bf16.txt" 2>&1; then
    verdict "bf16 grad-accum 4, 200 steps" "$py" -c "
import json, math, sys
r = [json.loads(l) for l in open('$dir/gpu-accum4-bf16.jsonl')]
first, last = r[0]['loss'], sum(x['loss'] for x in r[-20:]) / 20
ok = all(x['loss'] is not None and math.isfinite(x['loss']) for x in r) and last < first
print(f'loss {first:.4f} -> {last:.4f} (last-20 mean), {r[-1][\"tok_per_s\"]:.0f} tok/s')
sys.exit(0 if ok else 1)"
  else
    echo "FAIL bf16 grad-accum 4: $(tail -1 "$dir/gpu-accum4-bf16.txt")"; status=1
  fi
  grep -m1 accumulating "$dir/gpu-accum.txt"
  exit $status
  ;;
*)
  echo "usage: $0 prepare|run [DIR]"; exit 2 ;;
esac

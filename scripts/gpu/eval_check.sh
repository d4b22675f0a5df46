#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Validation in txrun (issue 12: @eval in the GPU artifact), in two phases:
#   scripts/gpu/eval_check.sh prepare [DIR]   any machine with build/bin/txopt
#   scripts/gpu/eval_check.sh run [DIR]       the GPU machine (txrun)
# prepare compiles the shipped nanoGPT export with --eval (f32, and bf16
# where attention is cuDNN's), writes a Markov token stream for training
# and a different one for validation, and runs the f32 step with
# txopt-run --val-data on the CPU executor, the reference.
# run trains each artifact with txrun and prints one verdict per check:
#  1. the GPU's validation losses (before step 1, every 5 steps, after the
#     last; 4 windows each) equal the CPU executor's within 1e-5 relative,
#     and so do the training losses;
#  2. on a one-window stream (every step trains on the window and every
#     evaluation reads it) the validation loss after step s equals step
#     s + 1's loss within 1e-6 relative (the same forward; the evaluation
#     may fuse differently, so not bit for bit);
#  3. validating changes nothing the training reads: the step lines equal
#     a run without --val-data bit for bit;
#  4. bf16 (cuDNN attention in the evaluation too) trains 200 steps with
#     finite validation losses that fall;
#  5. bf16 on the one-window stream: the validation loss after step s is
#     step s + 1's loss within 2e-3 relative. nanoGPT's tanh GELU runs in
#     cuBLASLt's GELU_BIAS epilogue in the evaluation (nothing reads its
#     pre-activation there) and in GELU_AUX_BIAS in the step: the two
#     epilogues must compute one forward.
# Exits non-zero if any failed.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
mode="${1:-}"
dir="${2:-${OUT:-/tmp/txopt-eval}}"
py="${PYTHON:-python3}"
[ -x "$root/.venv/bin/python" ] && py="$root/.venv/bin/python"
mkdir -p "$dir"
flags=(--steps 20 --data "$dir/train.npy" --val-data "$dir/val.npy" --eval-every 5 --eval-steps 4 --lr 3e-3)
case "$mode" in
prepare)
  txopt="$root/build/bin/txopt"
  model="$root/test/Inputs/models/nanogpt_op18_loss.onnx"
  set -e
  "$py" "$root/test/Training/make_markov_tokens.py" "$dir/train.npy" 40000 512 > /dev/null
  "$py" - "$dir/train.npy" "$dir/val.npy" "$dir/one.npy" <<'PY'
import sys
import numpy as np
chain = np.load(sys.argv[1])
np.save(sys.argv[1], chain[:36000])   # training: the chain's first 36000 tokens
np.save(sys.argv[2], chain[36000:])   # validation: the 4000 after them, never trained on
np.save(sys.argv[3], chain[:65])      # exactly one 2x32 window (+1 label)
PY
  "$txopt" "$model" --train --eval -q -o "$dir/eval.txa"
  # The f32 GPU step keeps attention unfused: so does its CPU reference.
  "$txopt" "$model" --train --eval --no-fuse=attention -q -o "$dir/eval.mlir"
  "$txopt" "$model" --train --eval --precision=bf16 -q -o "$dir/eval-bf16.txa"
  "$root/build/bin/txopt-run" "$dir/eval.mlir" "${flags[@]}" --log "$dir/cpu.jsonl" > /dev/null
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
  "$txrun" "$dir/eval.txa" "${flags[@]}" --log "$dir/gpu.jsonl" > "$dir/gpu.txt" 2>&1 \
    || { echo "FAIL txrun eval.txa:"; tail -3 "$dir/gpu.txt"; exit 1; }
  verdict "GPU vs CPU executor: validation and training losses within 1e-5" "$py" - "$dir/gpu.jsonl" "$dir/cpu.jsonl" <<'PY'
import json, sys
def load(p):
    r = [json.loads(l) for l in open(p)]
    return ({x["step"]: x["val_loss"] for x in r if "val_loss" in x},
            {x["step"]: x["loss"] for x in r if "loss" in x})
(gv, gt), (cv, ct) = load(sys.argv[1]), load(sys.argv[2])
assert sorted(gv) == sorted(cv) == [0, 5, 10, 15, 20], (sorted(gv), sorted(cv))
assert len(gt) == len(ct) == 20
rel = lambda a, b: abs(a - b) / abs(b)
worst_v = max(rel(gv[s], cv[s]) for s in cv)
worst_t = max(rel(gt[s], ct[s]) for s in ct)
assert cv[20] < cv[0] - 0.1, f"the model did not learn: val {cv[0]:.4f} -> {cv[20]:.4f}"
print(f"val {cv[0]:.4f} -> {cv[20]:.4f}; worst relative difference val {worst_v:.2e}, train {worst_t:.2e}")
sys.exit(0 if worst_v <= 1e-5 and worst_t <= 1e-5 else 1)
PY
  # On the one-window stream, the validation loss after step s against
  # step s + 1's loss within TOL relative: NAME ARTIFACT TOL LABEL.
  one_window() {
    local name="$1" artifact="$2" tol="$3" label="$4"
    if ! "$txrun" "$artifact" --steps 4 --data "$dir/one.npy" --val-data "$dir/one.npy" \
         --eval-every 1 --eval-steps 1 --log "$dir/$name.jsonl" > "$dir/$name.txt" 2>&1; then
      echo "FAIL txrun $name:"; tail -3 "$dir/$name.txt"; status=1; return
    fi
    verdict "$label" "$py" - "$dir/$name.jsonl" "$tol" <<'PY'
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
train = {x["step"]: x["loss"] for x in r if "loss" in x}
val = {x["step"]: x["val_loss"] for x in r if "val_loss" in x}
pairs = [(val[s], train[s + 1]) for s in val if s + 1 in train]
worst = max(abs(v - t) / abs(t) for v, t in pairs)
print(f"{len(pairs)} pairs, worst relative difference {worst:.2e}")
sys.exit(0 if len(pairs) == 4 and worst <= float(sys.argv[2]) else 1)
PY
  }
  one_window one "$dir/eval.txa" 1e-6 "validation after step s equals step s+1's loss (1e-6)"
  "$txrun" "$dir/eval.txa" --steps 20 --data "$dir/train.npy" --lr 3e-3 > "$dir/noval.txt" 2>&1
  verdict "validating changes no step line" diff <(grep -v val_loss "$dir/gpu.txt" | grep '^step ' | sed 's/  ms .*//') \
    <(grep '^step ' "$dir/noval.txt" | sed 's/  ms .*//')
  if "$txrun" "$dir/eval-bf16.txa" --steps 200 --data "$dir/train.npy" --val-data "$dir/val.npy" \
       --eval-every 50 --log-every 50 --lr 3e-3 --log "$dir/bf16.jsonl" > "$dir/bf16.txt" 2>&1; then
    verdict "bf16, 200 steps: validation losses finite and falling" "$py" - "$dir/bf16.jsonl" <<'PY'
import json, math, sys
v = [(x["step"], x["val_loss"]) for x in map(json.loads, open(sys.argv[1])) if "val_loss" in x]
ok = len(v) == 5 and all(math.isfinite(l) for _, l in v) and v[-1][1] < v[0][1] - 0.5
print(" ".join(f"{s}:{l:.4f}" for s, l in v))
sys.exit(0 if ok else 1)
PY
  else
    echo "FAIL bf16 eval run: $(tail -1 "$dir/bf16.txt")"; status=1
  fi
  one_window one-bf16 "$dir/eval-bf16.txa" 2e-3 \
    "bf16: validation after step s equals step s+1's loss (2e-3; GELU_BIAS vs GELU_AUX_BIAS)"
  exit $status
  ;;
*)
  echo "usage: $0 prepare|run [DIR]"; exit 2 ;;
esac

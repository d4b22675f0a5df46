#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Compares txopt-run (the CPU reference executor) with torch_reference.py on
# the real exports, N steps of a Markov token stream each:
#
#   scripts/gpu/torch_reference_check.sh [STEPS] [WORKDIR]
#
# Env: PYTHON (with torch, onnx, numpy; default python3), BIN (txopt's
# bin folder; default build/bin), MODELS (default test/Inputs/models, the
# repo's fixtures), MODEL_NAMES (default: the five fixtures below), DEVICE
# (torch device; default cpu), SCHEDULE (learning-rate flags both drivers
# take, e.g. "--schedule cosine --warmup 3 --decay-steps 20 --min-lr 1e-4")
# and ACCUM (micro-batches per step: txopt --grad-accum, torch_reference.py
# --grad-accum).
# For each model: txopt --train, txopt-run --steps N --data, torch_reference.py
# in f32 and f64, then compare_torch.py three ways: txopt vs torch f32 (the
# verdict), txopt vs torch f64 and torch f32 vs torch f64 (how much f32
# rounding alone moves the parameters). Exit 1 if a txopt-vs-torch-f32 loss
# comparison fails; parameter exceedances are printed for a person to judge
# (Adam amplifies f32 rounding in a few elements: see compare_torch.py).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
STEPS=${1:-20}
WORK=${2:-/tmp/torch_reference_check}
PYTHON=${PYTHON:-python3}
BIN=${BIN:-$root/build/bin}
DEVICE=${DEVICE:-cpu}
if [ -z "${MODELS:-}" ]; then
  MODELS=$root/test/Inputs/models
fi
mkdir -p "$WORK"
[ -f "$WORK/tokens.npy" ] ||
  "$PYTHON" "$root/test/Training/make_markov_tokens.py" "$WORK/tokens.npy" 20000 512
status=0
SCHEDULE=${SCHEDULE:-}
ACCUM=${ACCUM:-1}
accum_flag=()
[ "$ACCUM" -gt 1 ] && accum_flag=(--grad-accum="$ACCUM")
for m in ${MODEL_NAMES:-nanogpt_op18_loss nanogpt_op17_loss nanogpt_op14_loss gpt2_op18_loss llama_op18_loss}; do
  echo "=== $m"
  d=$WORK/$m
  rm -rf "$d" && mkdir -p "$d"
  "$BIN/txopt" "$MODELS/$m.onnx" --train "${accum_flag[@]}" -o "$d/step.mlir" > "$d/txopt.log" 2>&1 ||
    { echo "txopt failed: $d/txopt.log"; status=1; continue; }
  # shellcheck disable=SC2086
  "$BIN/txopt-run" "$d/step.mlir" --steps "$STEPS" --data "$WORK/tokens.npy" $SCHEDULE \
    --output-dir "$d/cpu" > "$d/cpu.log" 2>&1 ||
    { echo "txopt-run failed: $d/cpu.log"; status=1; continue; }
  for dt in float32 float64; do
    "$PYTHON" "$here/torch_reference.py" "$MODELS/$m.onnx" --steps "$STEPS" \
      --data "$WORK/tokens.npy" --device "$DEVICE" --dtype $dt $SCHEDULE --grad-accum "$ACCUM" \
      --out "$d/torch_$dt" > "$d/torch_$dt.log" 2>&1 ||
      { echo "torch_reference failed: $d/torch_$dt.log"; status=1; continue 2; }
  done
  grep '^# NOTE' "$d/torch_float32.log"
  echo "--- txopt-run vs torch f32"
  "$PYTHON" "$here/compare_torch.py" "$d/cpu.log" "$d/torch_float32.log" \
    --params "$d/cpu" "$d/torch_float32" > "$d/cmp_f32.txt"
  grep -E '^(PASS|FAIL):' "$d/cmp_f32.txt"
  grep -q '^FAIL: losses' "$d/cmp_f32.txt" && status=1
  echo "--- txopt-run vs torch f64"
  "$PYTHON" "$here/compare_torch.py" "$d/cpu.log" "$d/torch_float64.log" \
    --params "$d/cpu" "$d/torch_float64" | grep -E '^(PASS|FAIL):'
  echo "--- torch f32 vs torch f64"
  "$PYTHON" "$here/compare_torch.py" "$d/torch_float32.log" "$d/torch_float64.log" \
    --params "$d/torch_float32" "$d/torch_float64" | grep -E '^(PASS|FAIL):'
done
exit $status

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Data parallelism on one GPU (issue 15; docs/DataParallel.md), in two phases:
#   scripts/gpu/data_parallel_check.sh prepare [DIR]   any machine with build/bin/txopt
#   scripts/gpu/data_parallel_check.sh run [DIR]       the GPU machine (txrun)
# prepare compiles the shipped nanoGPT export (batch 2x32) as a ZeRO-1 step
# for 2 ranks and for 1 rank, and, as references, the plain step on the
# same export (2x32) and rebatched to 4x32 (f32, clipping that fires; bf16
# and fp8 for 2 ranks too); writes a token stream; and runs the 2-rank step
# on the CPU executor's simulated ranks (txopt-run --ranks 2).
# run trains each artifact with txrun on the same tokens and compares
# (test/Training/compare_accum.py), one verdict per check:
#  1. 2 ranks as threads on the GPU (txrun --ranks 2) vs the plain step on
#     4x32: loss and grad_norm within 1e-5 relative (f32);
#  2. the same against the CPU executor's 2 simulated ranks, within 1e-5;
#  3. one rank under the launcher environment, through NCCL (its
#     collectives are NCCL calls over one rank, captured in the CUDA graph);
#     with the reduce-scatters in small buckets beside the backward (on
#     NCCL's own stream) against the same step with them after it, to the bit
#     vs the plain 2x32 step, within 1e-5; and vs --ranks 1 (threads);
#  4. bf16 and fp8 2 ranks vs their plain 4x32 steps (bf16 within 1e-2,
#     fp8 step 1 within 1e-5 and every step within 3e-2), each with a
#     negative control (2 ranks vs the plain 2x32 step) that must fail;
#  5. gradient accumulation: 2 ranks x 2 micro-batches of 2x32 (threads)
#     vs the plain 4x32 step accumulating 2 micro-batches, and vs the CPU
#     executor's 2 simulated ranks, f32 within 1e-5;
#  6. checkpoints: 2 ranks saved after step 6 (the moment shards gathered
#     whole) and resumed on 2 ranks print the uninterrupted run's steps
#     7-12 (within 1e-5), and resumed on the plain 4x32 step continue it
#     within 1e-5;
#  7. validation and fp16: 2 ranks (threads) with --val-data on a step
#     compiled with --eval, and the fp16 step with dynamic loss scaling, vs
#     the CPU executor's 2 simulated ranks (f32 within 1e-5, val_loss too;
#     fp16 within 1e-2) and the fp16 one vs the plain 4x32 fp16 step;
#  8. errors end with one line and no hang: two NCCL ranks on one GPU
#     (NCCL refuses a duplicate device), a rank whose peer never starts
#     (the rendezvous times out after --rank-timeout).
#  9. one artifact for 1, 2 and 4 ranks (--data-parallel=1,2,4): each run
#     picks the step for its count: 2 threads equal the 2-rank artifact to
#     the bit, 4 threads the CPU executor's 4 simulated ranks within 1e-5
#     (and must differ from 2 ranks), one NCCL rank the 1-rank artifact to
#     the bit.
# Exits non-zero if any failed.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
mode="${1:-}"
dir="${2:-${OUT:-/tmp/txopt-data-parallel}}"
py="${PYTHON:-python3}"
[ -x "$root/.venv/bin/python" ] && py="$root/.venv/bin/python"
mkdir -p "$dir"
flags=(--steps 12 --data "$dir/tokens.npy" --lr 3e-3)
val=(--val-data "$dir/val.npy" --eval-every 4 --eval-steps 10)
case "$mode" in
prepare)
  txopt="$root/build/bin/txopt"
  model="$root/test/Inputs/models/nanogpt_op18_loss.onnx"
  set -e
  "$py" "$root/test/Training/rebatch_model.py" "$model" "$dir/batch4.onnx" 4
  "$py" "$root/test/Training/make_markov_tokens.py" "$dir/tokens.npy" 20000 512
  clip=(--grad-clip=0.5)
  "$txopt" "$model" --train "${clip[@]}" --data-parallel=2 -q -o "$dir/dp2.txa"
  "$txopt" "$model" --train "${clip[@]}" --data-parallel=1 -q -o "$dir/dp1.txa"
  # The reduce-scatters in 10 KiB buckets beside the backward (asynchronous
  # groups on NCCL's stream, joined before their shards are read), and the
  # same step with them after the backward, in order.
  "$txopt" "$model" --train "${clip[@]}" --data-parallel=1 --bucket-mb=0.01 -q -o "$dir/dp1-buckets.txa"
  "$txopt" "$model" --train "${clip[@]}" --data-parallel=1 --bucket-mb=0 -q -o "$dir/dp1-sync.txa"
  "$txopt" "$model" --train "${clip[@]}" --precision=bf16 --data-parallel=1 --bucket-mb=0.01 \
    -q -o "$dir/dp1-buckets-bf16.txa"
  "$txopt" "$model" --train "${clip[@]}" --precision=bf16 --data-parallel=1 --bucket-mb=0 \
    -q -o "$dir/dp1-sync-bf16.txa"
  "$txopt" "$model" --train "${clip[@]}" -q -o "$dir/plain2.txa"
  "$txopt" "$dir/batch4.onnx" --train "${clip[@]}" -q -o "$dir/plain4.txa"
  for p in bf16 fp8; do
    "$txopt" "$model" --train "${clip[@]}" --precision=$p --data-parallel=2 -q -o "$dir/dp2-$p.txa"
    "$txopt" "$dir/batch4.onnx" --train "${clip[@]}" --precision=$p -q -o "$dir/plain4-$p.txa"
  done
  for p in bf16 fp8; do
    "$txopt" "$model" --train "${clip[@]}" --precision=$p -q -o "$dir/plain2-$p.txa"
  done
  "$txopt" "$model" --train "${clip[@]}" --grad-accum=2 --data-parallel=2 -q -o "$dir/dp2-accum.txa"
  "$txopt" "$dir/batch4.onnx" --train "${clip[@]}" --grad-accum=2 -q -o "$dir/plain4-accum.txa"
  # The f32 GPU step keeps attention unfused: so does its CPU reference.
  "$txopt" "$model" --train "${clip[@]}" --data-parallel=2 --no-fuse=attention -q -o "$dir/dp2.mlir"
  "$root/build/bin/txopt-run" "$dir/dp2.mlir" --ranks 2 "${flags[@]}" --log "$dir/cpu-dp2.jsonl" > /dev/null
  # One artifact for any of 1, 2 and 4 ranks, and the 4-rank reference.
  "$txopt" "$model" --train "${clip[@]}" --data-parallel=1,2,4 -q -o "$dir/dp-any.txa"
  "$txopt" "$model" --train "${clip[@]}" --data-parallel=4 --no-fuse=attention -q -o "$dir/dp4.mlir"
  "$root/build/bin/txopt-run" "$dir/dp4.mlir" --ranks 4 "${flags[@]}" --log "$dir/cpu-dp4.jsonl" > /dev/null
  "$txopt" "$model" --train "${clip[@]}" --grad-accum=2 --data-parallel=2 --no-fuse=attention \
    -q -o "$dir/dp2-accum.mlir"
  "$root/build/bin/txopt-run" "$dir/dp2-accum.mlir" --ranks 2 "${flags[@]}" \
    --log "$dir/cpu-dp2-accum.jsonl" > /dev/null
  "$py" "$root/test/Training/make_markov_tokens.py" "$dir/val.npy" 3000 512
  "$txopt" "$model" --train "${clip[@]}" --eval --data-parallel=2 -q -o "$dir/dp2-eval.txa"
  "$txopt" "$model" --train "${clip[@]}" --eval --data-parallel=2 --no-fuse=attention \
    -q -o "$dir/dp2-eval.mlir"
  "$root/build/bin/txopt-run" "$dir/dp2-eval.mlir" --ranks 2 "${flags[@]}" "${val[@]}" \
    --log "$dir/cpu-dp2-eval.jsonl" > /dev/null
  "$txopt" "$model" --train "${clip[@]}" --precision=fp16 --data-parallel=2 -q -o "$dir/dp2-fp16.txa"
  "$txopt" "$dir/batch4.onnx" --train "${clip[@]}" --precision=fp16 -q -o "$dir/plain4-fp16.txa"
  "$txopt" "$model" --train "${clip[@]}" --precision=fp16 --data-parallel=2 -q -o "$dir/dp2-fp16.mlir"
  "$root/build/bin/txopt-run" "$dir/dp2-fp16.mlir" --ranks 2 "${flags[@]}" \
    --log "$dir/cpu-dp2-fp16.jsonl" > /dev/null
  rm -f "$dir/dp2.mlir" "$dir/dp2-accum.mlir" "$dir/dp2-eval.mlir" "$dir/dp2-fp16.mlir" "$dir/batch4.onnx"
  echo "prepared $dir; copy it to the GPU machine and run: $0 run $dir"
  ;;
run)
  txrun="$root/build/runtime/bin/txrun"
  compare="$root/test/Training/compare_accum.py"
  status=0
  verdict() { # name, command...
    local name="$1"; shift
    if out="$("$@" 2>&1)"; then echo "PASS $name: $out" | tr '\n' ' '; echo
    else echo "FAIL $name: $out" | tr '\n' ' '; echo; status=1; fi
  }
  train() { # name, txrun arguments... (the log goes to DIR/gpu-NAME.jsonl)
    local name="$1"; shift
    if ! "$@" "${flags[@]}" --log "$dir/gpu-$name.jsonl" > "$dir/gpu-$name.txt" 2>&1; then
      echo "FAIL txrun $name: $(tail -2 "$dir/gpu-$name.txt" | tr '\n' ' ')"; status=1
    fi
  }
  launched() { # one rank of a launcher's job: RANK WORLD_SIZE PORT, command...
    local rank="$1" size="$2" port="$3"; shift 3
    env RANK="$rank" WORLD_SIZE="$size" LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 \
      MASTER_PORT="$port" "$@"
  }
  train plain4 "$txrun" "$dir/plain4.txa"
  train plain2 "$txrun" "$dir/plain2.txa"
  train dp2-threads "$txrun" "$dir/dp2.txa" --ranks 2
  train dp1-nccl launched 0 1 29517 "$txrun" "$dir/dp1.txa"
  train dp1-threads "$txrun" "$dir/dp1.txa" --ranks 1
  verdict "2 ranks (threads, GPU) vs plain 4x32 (GPU), f32" \
    "$py" "$compare" "$dir/gpu-dp2-threads.jsonl" "$dir/gpu-plain4.jsonl" 1e-5
  verdict "2 ranks (threads, GPU) vs 2 simulated ranks (CPU executor), f32" \
    "$py" "$compare" "$dir/gpu-dp2-threads.jsonl" "$dir/cpu-dp2.jsonl" 1e-5
  verdict "1 rank through NCCL vs plain 2x32, f32" \
    "$py" "$compare" "$dir/gpu-dp1-nccl.jsonl" "$dir/gpu-plain2.jsonl" 1e-5
  verdict "1 rank through NCCL vs 1 rank (threads), f32" \
    "$py" "$compare" "$dir/gpu-dp1-nccl.jsonl" "$dir/gpu-dp1-threads.jsonl" 1e-5
  grep -m1 "data-parallel:" "$dir/gpu-dp1-nccl.txt"
  # One artifact, three rank counts: the run picks its count's step.
  train dp2-threads-det "$txrun" "$dir/dp2.txa" --ranks 2 --deterministic
  train any-2 "$txrun" "$dir/dp-any.txa" --ranks 2 --deterministic
  train any-4 "$txrun" "$dir/dp-any.txa" --ranks 4
  train dp1-nccl-det launched 0 1 29525 "$txrun" "$dir/dp1.txa" --deterministic
  train any-1-nccl launched 0 1 29526 "$txrun" "$dir/dp-any.txa" --deterministic
  verdict "one artifact for 1,2,4 ranks: 2 threads vs the 2-rank artifact, f32 (to the bit)" \
    "$py" "$compare" "$dir/gpu-any-2.jsonl" "$dir/gpu-dp2-threads-det.jsonl" 0
  verdict "one artifact for 1,2,4 ranks: 4 threads vs 4 simulated ranks (CPU executor), f32" \
    "$py" "$compare" "$dir/gpu-any-4.jsonl" "$dir/cpu-dp4.jsonl" 1e-5
  verdict "one artifact for 1,2,4 ranks: 1 NCCL rank vs the 1-rank artifact, f32 (to the bit)" \
    "$py" "$compare" "$dir/gpu-any-1-nccl.jsonl" "$dir/gpu-dp1-nccl-det.jsonl" 0
  if "$py" "$compare" "$dir/gpu-any-4.jsonl" "$dir/cpu-dp2.jsonl" 1e-3 > /dev/null 2>&1; then
    echo "FAIL negative control: 4 ranks indistinguishable from 2"; status=1
  else
    echo "PASS negative control: 4 ranks differ from 2 beyond 1e-3"
  fi
  grep -m1 "data-parallel:" "$dir/gpu-any-4.txt"
  # Buckets beside the backward change where the collectives run, not what
  # they compute: the same bits as the step without, replayed as a CUDA
  # graph (two streams captured) and run directly.
  train dp1-buckets launched 0 1 29520 "$txrun" "$dir/dp1-buckets.txa" --deterministic
  train dp1-buckets-nograph launched 0 1 29521 "$txrun" "$dir/dp1-buckets.txa" --no-graph --deterministic
  train dp1-sync launched 0 1 29522 "$txrun" "$dir/dp1-sync.txa" --deterministic
  train dp1-buckets-bf16 launched 0 1 29523 "$txrun" "$dir/dp1-buckets-bf16.txa" --deterministic
  train dp1-sync-bf16 launched 0 1 29524 "$txrun" "$dir/dp1-sync-bf16.txa" --deterministic
  verdict "1 NCCL rank, reduce-scatters in 10 KiB buckets beside the backward vs after it, f32 (to the bit)" \
    "$py" "$compare" "$dir/gpu-dp1-buckets.jsonl" "$dir/gpu-dp1-sync.jsonl" 0
  verdict "1 NCCL rank, buckets beside the backward, graph vs direct, f32 (to the bit)" \
    "$py" "$compare" "$dir/gpu-dp1-buckets.jsonl" "$dir/gpu-dp1-buckets-nograph.jsonl" 0
  verdict "1 NCCL rank, buckets beside the backward vs after it, bf16 (to the bit)" \
    "$py" "$compare" "$dir/gpu-dp1-buckets-bf16.jsonl" "$dir/gpu-dp1-sync-bf16.jsonl" 0
  # bf16 within 1e-2. FP8 (delayed scaling): the ranks' all-reduced amaxes
  # are the global batch's, so step 1 quantizes the same values with the
  # same scales (loss within f32 noise); later steps diverge faster than
  # bf16, as an f32-rounding difference that moves a value across an E5M2
  # rounding boundary moves it by up to 1/8, so the steps after it are
  # compared within 3e-2.
  for p in bf16 fp8; do
    train "dp2-$p" "$txrun" "$dir/dp2-$p.txa" --ranks 2
    train "plain4-$p" "$txrun" "$dir/plain4-$p.txa"
    train "plain2-$p" "$txrun" "$dir/plain2-$p.txa"
    tol=1e-2; [ $p = fp8 ] && tol=3e-2
    verdict "$p: 2 ranks (threads) vs plain 4x32" \
      "$py" "$compare" "$dir/gpu-dp2-$p.jsonl" "$dir/gpu-plain4-$p.jsonl" $tol
    verdict "$p: step 1 loss, 2 ranks vs plain 4x32, within 1e-5" "$py" -c "
import json, sys
a, b = (json.loads(open(f).readline())['loss'] for f in sys.argv[1:])
rel = abs(a - b) / abs(b)
print(f'{a:.9g} vs {b:.9g}: {rel:.2e}')
sys.exit(0 if rel <= 1e-5 else 1)" "$dir/gpu-dp2-$p.jsonl" "$dir/gpu-plain4-$p.jsonl"
    # Must be able to fail: 2 ranks of 2x32 against one plain 2x32 step
    # (half the global batch) differ by far more than the tolerance.
    if "$py" "$compare" "$dir/gpu-dp2-$p.jsonl" "$dir/gpu-plain2-$p.jsonl" $tol > /dev/null 2>&1; then
      echo "FAIL $p negative control: 2 ranks indistinguishable from half the batch"; status=1
    else
      echo "PASS $p negative control: 2 ranks differ from half the global batch beyond $tol"
    fi
  done
  train dp2-accum "$txrun" "$dir/dp2-accum.txa" --ranks 2
  train plain4-accum "$txrun" "$dir/plain4-accum.txa"
  verdict "accumulation: 2 ranks x 2 micro-batches (threads) vs plain 4x32 x 2, f32" \
    "$py" "$compare" "$dir/gpu-dp2-accum.jsonl" "$dir/gpu-plain4-accum.jsonl" 1e-5
  verdict "accumulation: 2 ranks (GPU) vs 2 simulated ranks (CPU executor), f32" \
    "$py" "$compare" "$dir/gpu-dp2-accum.jsonl" "$dir/cpu-dp2-accum.jsonl" 1e-5
  # Checkpoints of a data-parallel run hold the shards whole: resumed on
  # the same ranks or on the plain step of the same global batch.
  tail7() { "$py" -c "import json, sys; [print(l, end='') for l in open(sys.argv[1]) if json.loads(l)['step'] > 6]" "$1"; }
  if "$txrun" "$dir/dp2.txa" --ranks 2 --steps 6 --data "$dir/tokens.npy" --lr 3e-3 \
       --save "$dir/ck-dp2" > "$dir/gpu-ck-save.txt" 2>&1 &&
     "$txrun" "$dir/dp2.txa" --ranks 2 --steps 12 --data "$dir/tokens.npy" --lr 3e-3 \
       --resume "$dir/ck-dp2" --log "$dir/gpu-dp2-resumed.jsonl" > "$dir/gpu-ck-resume.txt" 2>&1 &&
     "$txrun" "$dir/plain4.txa" --steps 12 --data "$dir/tokens.npy" --lr 3e-3 \
       --resume "$dir/ck-dp2" --log "$dir/gpu-plain4-resumed.jsonl" > "$dir/gpu-ck-plain.txt" 2>&1; then
    tail7 "$dir/gpu-dp2-threads.jsonl" > "$dir/gpu-dp2-tail.jsonl"
    verdict "checkpoint: 2 ranks saved at 6, resumed on 2 ranks vs uninterrupted" \
      "$py" "$compare" "$dir/gpu-dp2-resumed.jsonl" "$dir/gpu-dp2-tail.jsonl" 1e-5
    verdict "checkpoint: 2 ranks saved at 6, resumed on the plain 4x32 step" \
      "$py" "$compare" "$dir/gpu-plain4-resumed.jsonl" "$dir/gpu-dp2-tail.jsonl" 1e-5
  else
    echo "FAIL checkpoint save/resume: $(tail -2 "$dir"/gpu-ck-*.txt | tr '\n' ' ')"; status=1
  fi
  # Validation on 2 ranks: each rank evaluates its own windows and the
  # losses are all-reduced, as on the CPU executor's simulated ranks.
  train dp2-eval "$txrun" "$dir/dp2-eval.txa" --ranks 2 "${val[@]}"
  verdict "validation: 2 ranks (threads, GPU) vs 2 simulated ranks (CPU), f32 with val_loss" \
    "$py" "$compare" "$dir/gpu-dp2-eval.jsonl" "$dir/cpu-dp2-eval.jsonl" 1e-5
  # fp16 with dynamic loss scaling: the skip decision is the ranks' together.
  train dp2-fp16 "$txrun" "$dir/dp2-fp16.txa" --ranks 2
  train plain4-fp16 "$txrun" "$dir/plain4-fp16.txa"
  verdict "fp16: 2 ranks (threads) vs plain 4x32" \
    "$py" "$compare" "$dir/gpu-dp2-fp16.jsonl" "$dir/gpu-plain4-fp16.jsonl" 1e-2
  verdict "fp16: 2 ranks (GPU) vs 2 simulated ranks (CPU executor)" \
    "$py" "$compare" "$dir/gpu-dp2-fp16.jsonl" "$dir/cpu-dp2-fp16.jsonl" 1e-2
  # Errors: one line each, and no hang (the outer timeout would say so).
  launched 0 2 29531 timeout 120 "$txrun" "$dir/dp2.txa" --steps 2 --rank-timeout 60 > "$dir/dup0.txt" 2>&1 &
  dup0=$!
  launched 1 2 29531 timeout 120 "$txrun" "$dir/dp2.txa" --steps 2 --rank-timeout 60 > "$dir/dup1.txt" 2>&1
  dup1=$?
  wait $dup0; dup0=$?
  if [ $dup0 -ne 0 ] && [ $dup0 -ne 124 ] && [ $dup1 -ne 0 ] && [ $dup1 -ne 124 ]; then
    echo "PASS two NCCL ranks on one GPU end with an error: $(grep -h 'error' "$dir/dup0.txt" "$dir/dup1.txt" | head -2 | tr '\n' ' ')"
  else
    echo "FAIL two NCCL ranks on one GPU: exit $dup0/$dup1: $(tail -2 "$dir/dup0.txt" "$dir/dup1.txt" | tr '\n' ' ')"; status=1
  fi
  started=$(date +%s)
  launched 0 2 29547 timeout 120 "$txrun" "$dir/dp2.txa" --steps 2 --rank-timeout 5 > "$dir/alone.txt" 2>&1
  alone=$?
  waited=$(( $(date +%s) - started ))
  if [ $alone -eq 1 ] && [ "$(grep -c 'txrun: error' "$dir/alone.txt")" = 1 ]; then
    echo "PASS a rank whose peer never starts stops after ${waited} s: $(grep 'txrun: error' "$dir/alone.txt")"
  else
    echo "FAIL a rank alone: exit $alone after ${waited} s: $(tail -2 "$dir/alone.txt" | tr '\n' ' ')"; status=1
  fi
  exit $status
  ;;
*)
  echo "usage: $0 prepare|run [DIR]"; exit 2 ;;
esac

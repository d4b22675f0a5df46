#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs on the GPU machine: the runtime's self-test, then every case that
# prepare_check.sh compiled, on the GPU with txrun, compared with the CPU
# executor's losses and final state (scripts/gpu/compare.py). Prints one
# table; exits non-zero if anything failed.
# Usage: scripts/gpu/check.sh [CASES_DIR=gpu-run] [RESULTS_DIR=${OUT:-/tmp/txopt-gpu}]
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cases="${1:-$root/gpu-run}"
results="${2:-${OUT:-/tmp/txopt-gpu}}"
bin="$root/build/runtime/bin"
mkdir -p "$results"
status=0
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
"$bin/txrt-info" || status=1
echo "== runtime self-test"
"$bin/txrt-gpu-selftest" || status=1
echo "== the hardware FP8 encode vs the integer one, every f32"
if [ -f "$cases/fp8_convert_check.ptx" ]; then
  python3 "$root/scripts/gpu/fp8_convert_check.py" "$cases/fp8_convert_check.ptx" || status=1
else
  echo "fp8_convert_check.ptx not prepared: FAILED"; status=1
fi
echo "== steps on the GPU vs the CPU executor"
# External weights (gpt_bench_fp8) lie beside the artifacts: the artifact
# names the folder it was compiled in, which is another machine's.
weights=(--weights-dir "$cases")
while read -r name steps checkpoint _; do
  # A case may start from the executor's checkpoint (prepare_check.sh).
  resume=()
  [ -n "${checkpoint:-}" ] && resume=(--resume "$cases/$checkpoint")
  rm -rf "$results/$name.gpu"
  if ! "$bin/txrun" "$cases/$name.txa" "${weights[@]}" --steps "$steps" "${resume[@]}" --output-dir "$results/$name.gpu" \
      > "$results/$name.gpu.log" 2>&1; then
    echo "$name: txrun failed:"; tail -5 "$results/$name.gpu.log"; status=1; continue
  fi
  if ! "$bin/txrun" "$cases/$name.txa" "${weights[@]}" --steps "$steps" "${resume[@]}" --no-graph \
      > "$results/$name.nograph.log" 2>&1; then
    echo "$name: txrun --no-graph failed:"; tail -5 "$results/$name.nograph.log"; status=1
  fi
done < "$cases/cases.txt"
python3 "$root/scripts/gpu/compare.py" "$cases" "$results" || status=1

# 8 data orders a precision, the two precisions side by side on the GPU
# (a small model: each run leaves most of it idle). The bound is 2% or 3
# standard errors of the difference, whichever is larger: one run's tail
# sits ~3% from another's by rounding alone, and 3 runs a precision once
# failed a fixed 2% bound by that noise (DeviceLog session 41, run 3).
echo "== precision curves on the GPU: llama, ${CURVE_STEPS:=6000} steps on a learnable token stream, 8 data orders"
python3 "$root/test/Training/make_markov_tokens.py" "$results/tokens.npy" 40000 512
for p in "" _bf16; do
  (for seed in 1 2 3 4 5 6 7 8; do
     "$bin/txrun" "$cases/curve$p.txa" --steps "$CURVE_STEPS" --data "$results/tokens.npy" \
       --shuffle --seed "$seed" > "$results/curve$p.$seed.log" 2>&1 ||
       { echo "curve$p seed $seed: txrun failed"; tail -3 "$results/curve$p.$seed.log"; exit 1; }
   done) &
done
for lane in 1 2; do wait -n || status=1; done
python3 "$root/scripts/gpu/compare_curves.py" --vocab 512 --tolerance 0.02 --sigmas 3 --tail 1000 \
  --runs 8 "$results"/curve.[1-8].log "$results"/curve_bf16.[1-8].log || status=1

if command -v compute-sanitizer >/dev/null 2>&1; then
  # nanoGPT, and the block-row norm gradients (their pipelined loads, with
  # and without the residual gradient they add), and an FP8 GPT whose amax
  # kernels cover many tiles, with and without its weights' codes kept as
  # state (the state-init function, the Adam kernel writing the codes), and
  # a cached GPT whose weights end in partial blocks of the Adam kernel;
  # the LayerNorm gradient over rows of 8192, whose column sums are in
  # dynamic shared memory; bf16 warp rows stored a group at a time (the
  # forward's half-full last block, the gradients' warps walking two rows);
  # the norm gradients summing a bias gradient and writing a bf16 copy
  # (warp rows: three running sums in dynamic shared memory; block rows of
  # 34; dx and its copy both stored; f32 rows of 8192, three sums in 96 KiB
  # + 128 bytes of dynamic shared memory).
  echo "== compute-sanitizer (memcheck, initcheck, racecheck) on 2 steps"
  for case in nanogpt_op18_loss op_norms_block_rows op_norms_block_rows_residual gpt_bench_fp8 \
      gpt_bench_cached_fp8 gpt_small_cached_fp8 op_norms_8192 op_norms_warp_rows_bf16 \
      op_norm_bias_epilogue_768_bf16 op_norm_bias_epilogue_34 op_norm_bias_epilogue_residual_bf16 \
      op_norm_bias_epilogue_8192; do
    if [ ! -f "$cases/$case.txa" ]; then
      # A pack prepared before the case existed: said, and counted failed.
      echo "$case: not in this pack ($cases/$case.txa missing)"
      status=1
      continue
    fi
    for tool in memcheck initcheck racecheck; do
      log="$results/sanitizer-$case-$tool.log"
      if compute-sanitizer --tool "$tool" --error-exitcode 9 "$bin/txrun" \
          "$cases/$case.txa" "${weights[@]}" --steps 2 --no-graph > "$log" 2>&1; then
        echo "$case $tool: clean ($(grep -c . "$log") lines of output)"
      elif [ "$tool" = racecheck ] && grep -q "^step 2 " "$log" &&
           ! grep -E "Error:" "$log" | grep -vqE "Race reported between .* access at " &&
           ! grep -E "Race reported between" "$log" | grep -qE " at k[0-9]+_"; then
        # Every hazard racecheck reported lies in a library kernel (cuDNN's
        # SDPA, cuBLASLt's GEMMs: Hopper kernels that fill shared memory by
        # TMA and read it by wgmma), none in a kernel txopt generated
        # (k<N>_...): printed with the kernels' names, not failed, since
        # txopt neither writes nor can change them (DeviceLog session 17).
        echo "$case $tool: clean in txopt's kernels; $(grep -c "Race reported" "$log") hazards" \
          "reported inside library kernels: $(grep -oE "access at [A-Za-z0-9_]+" "$log" |
          sed 's/access at //; s/_kernel0.*//; s/_[0-9]*x[0-9].*//' | sort -u | tr '\n' ' ')"
      else
        echo "$case $tool: FAILED"; grep -m5 -E "ERROR|Invalid|Race|Uninitialized" "$log"; status=1
      fi
    done
  done
else
  echo "== compute-sanitizer not found: sanitizer checks skipped"
fi

echo "== vs PyTorch on this GPU: the same ONNX graphs, autograd + torch.optim.AdamW, 20 f32 steps"
for m in nanogpt_op18_loss nanogpt_op14_loss gpt2_op18_loss llama_op18_loss; do
  "$bin/txrun" "$cases/$m.txa" --steps 20 --data "$results/tokens.npy" > "$results/$m.data.log" 2>&1 ||
    { echo "$m: txrun failed"; status=1; continue; }
  python3 "$root/scripts/gpu/torch_reference.py" "$root/test/Inputs/models/$m.onnx" --steps 20 \
    --data "$results/tokens.npy" --device cuda > "$results/$m.torch.log" 2>&1 ||
    { echo "$m: torch_reference failed"; tail -3 "$results/$m.torch.log"; status=1; continue; }
  echo -n "$m: "
  python3 "$root/scripts/gpu/compare_torch.py" "$results/$m.data.log" "$results/$m.torch.log" --rtol 1e-4 | tail -2 | tr "\n" " " || status=1; echo
done
exit $status

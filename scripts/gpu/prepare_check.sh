#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Prepares the GPU correctness check on a machine without a GPU: compiles
# each model's training step to step.txa (what the GPU runs) and to .mlir,
# and runs the same steps on the CPU reference executor (txopt-run), whose
# losses and final state the GPU results are compared with.
# Usage: scripts/gpu/prepare_check.sh MODELS_DIR [OUT_DIR=gpu-run] [STEPS=5]
#   HELDOUT_DIR=DIR also adds held-out exports (scripts/export_heldout_models.py
#   writes them), compared by loss only. ONLY=REGEX prepares only the cases
#   whose names match (bash =~; a short device run of what a change touched).
# Then, on the GPU machine: scripts/gpu/check.sh OUT_DIR
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
models="${1:?usage: prepare_check.sh MODELS_DIR [OUT_DIR] [STEPS]}"
out="${2:-$root/gpu-run}"
steps="${3:-5}"
bin="$root/build/bin"
mkdir -p "$out"
: > "$out/cases.txt"

# case NAME MODEL STEPS [txopt flags...]; writes the line "NAME LAST" to
# cases.txt, or "NAME LAST CHECKPOINT FROM" for a case that starts from a
# checkpoint of step FROM (CALIBRATE below): LAST is the last step's number.
add_case() {
  local name="$1" model="$2" n="$3"; shift 3
  if [ -n "${ONLY:-}" ] && ! [[ "$name" =~ $ONLY ]]; then return 0; fi
  "$bin/txopt" "$model" --train "$@" -o "$out/$name.txa" -q
  # The CPU reference fuses attention where the GPU step does: a bf16/fp16/
  # fp8 step runs it as cuDNN's SDPA (the reference as the executor's
  # tx.attention, txopt's default), an f32 step keeps it unfused.
  local cpu_flags=(--no-fuse=attention)
  case "$*" in *--precision=bf16*|*--precision=fp16*|*--precision=fp8*) cpu_flags=() ;; esac
  "$bin/txopt" "$model" --train "$@" "${cpu_flags[@]}" -o "$out/$name.mlir" -q
  rm -rf "$out/$name.cpu" "$out/$name.ck"
  # CALIBRATE=K: both machines start from the state after K executor steps
  # (a checkpoint beside the artifact; txrun --resume reads txopt-run's
  # checkpoints), so steps K+1..K+N are compared. For FP8 sites whose first
  # amaxes come from scales of 1 (case gpt_head128_attention_fp8 says why).
  local from=0 resume=()
  if [ -n "${CALIBRATE:-}" ]; then
    from="$CALIBRATE"
    "$bin/txopt-run" "$out/$name.mlir" --steps "$from" --save "$out/$name.ck" > /dev/null
    resume=(--resume "$out/$name.ck")
  fi
  "$bin/txopt-run" "$out/$name.mlir" --steps $((from + n)) "${resume[@]}" \
    --output-dir "$out/$name.cpu" > "$out/$name.cpu.log"
  rm -f "$out/$name.mlir"
  # Parameters and first moments are compared (compare.py says why);
  # the second moments would only add to what travels to the GPU machine.
  rm -f "$out/$name.cpu/"*.exp_avg_sq.npy
  # Reduced precision, and cases marked LOSS_ONLY, are compared by their
  # losses only (what travels to the GPU machine is limited to 64 MiB with
  # the tree).
  # FP8_STATE_ONLY cases keep the FP8 scaling state alone (amax histories,
  # scales): what the scale update wrote.
  if [ -n "${FP8_STATE_ONLY:-}" ]; then
    find "$out/$name.cpu" -type f ! -name 'fp8.*' -delete
  else
    case "$name" in *_bf16|*_fp16|*_fp8) rm -rf "$out/$name.cpu" ;; esac
  fi
  [ -n "${LOSS_ONLY:-}" ] && rm -rf "$out/$name.cpu"
  if [ "$from" = 0 ]; then
    echo "$name $n" >> "$out/cases.txt"
    echo "prepared $name ($n steps)"
  else
    echo "$name $((from + n)) $name.ck $from" >> "$out/cases.txt"
    echo "prepared $name (steps $((from + 1))-$((from + n)) from the executor's step $from)"
  fi
}

# (nanogpt_op17 is left out: it lowers like op18, and what travels is limited.)
for m in nanogpt_op18_loss gpt2_op18_loss llama_op18_loss; do
  add_case "$m" "$models/$m.onnx" "$steps"
done
# One step of the most sensitive of them (GPT-2: dropout, untied norms),
# compared at full sensitivity (compare.py: from the same state the first
# moments are 0.1 g, so this checks the gradient kernels alone).
add_case gpt2_op18_loss_step1 "$models/gpt2_op18_loss.onnx" 1
# Clipping to the global norm (0.5 is below nanoGPT's norm, so every step
# clips): the packed sum of squares decides every update.
add_case nanogpt_op18_loss_clip "$models/nanogpt_op18_loss.onnx" "$steps" --grad-clip=0.5
LOSS_ONLY=1 add_case nanogpt_op14_loss "$models/nanogpt_op14_loss.onnx" "$steps"
# Reduced precision: the executor emulates bf16 rounding per op, so the
# curves are compared with a looser tolerance.
add_case nanogpt_op18_loss_bf16 "$models/nanogpt_op18_loss.onnx" "$steps" --precision=bf16
add_case llama_op18_loss_bf16 "$models/llama_op18_loss.onnx" "$steps" --precision=bf16
# GPT-2's tanh GELU (gelu_new) in bf16: the c_fc GEMMs compute it in
# cuBLASLt's GELU_AUX epilogue (tx-gemm-gelu; nanoGPT's above has a bias:
# GELU_AUX_BIAS), whose tanh is the hardware's approximate one.
add_case gpt2_op18_loss_bf16 "$models/gpt2_op18_loss.onnx" "$steps" --precision=bf16
# fp16 with dynamic loss scaling (the finite check, the skipped update and
# the scale's growth on the GPU), compared like bf16 (fp16's finer mantissa
# only narrows the differences).
add_case nanogpt_op18_loss_fp16 "$models/nanogpt_op18_loss.onnx" "$steps" --precision=fp16
# FP8 (delayed scaling, hybrid formats): the executor's casts and scale
# updates are bit-exact, its GEMMs sum in f64; compared by loss (compare.py).
add_case nanogpt_op18_loss_fp8 "$models/nanogpt_op18_loss.onnx" "$steps" --precision=fp8
add_case llama_op18_loss_fp8 "$models/llama_op18_loss.onnx" "$steps" --precision=fp8
# The same with the weights' codes kept as state (tx-cache-fp8-weights):
# the state-init function at load, the casts into the state slots.
add_case nanogpt_op18_loss_cached_fp8 "$models/nanogpt_op18_loss.onnx" "$steps" --precision=fp8 --fp8-weight-cache=on
# Current scaling (Transformer Engine's Float8CurrentScaling): each cast
# site's scale from its tensor's own amax in the same step (an amax kernel,
# the scale, then the quantize), nanoGPT's tanh GELU gradient included.
add_case nanogpt_op18_loss_current_fp8 "$models/nanogpt_op18_loss.onnx" "$steps" --precision=fp8 --fp8-recipe=current
# The benchmark's GPT (erf GELU, fused QKV, external weights, which stay
# beside the artifact), small, in FP8: its amax kernels quantize tensors of
# 128 tiles and more, as the benchmark's do.
"$root/.venv/bin/python" "$root/scripts/export_gpt_external.py" "$out/gpt_bench.onnx" \
  --layers 1 --d-model 256 --vocab 512 --seq 512 --batch 4 > /dev/null
add_case gpt_bench_fp8 "$out/gpt_bench.onnx" "$steps" --precision=fp8
add_case gpt_bench_cached_fp8 "$out/gpt_bench.onnx" "$steps" --precision=fp8 --fp8-weight-cache=on
add_case gpt_bench_current_fp8 "$out/gpt_bench.onnx" "$steps" --precision=fp8 --fp8-recipe=current
# Clipping to the global norm with the benchmark GPT's tied embedding: the
# Adam kernels scale the gradients as they load them, and the embedding's
# gradient (two contributions its readers add) keeps a sum of its own.
# f32, compared by loss per step (its final state would not fit beside).
LOSS_ONLY=1 add_case gpt_bench_clip "$out/gpt_bench.onnx" "$steps" --grad-clip=0.5
rm -f "$out/gpt_bench.onnx"
# Vocabularies of 1030 classes (not a multiple of 8): the GPU steps pad
# them to 1032 before the loss (tx-pad-loss-classes), the executor's steps
# (compiled for the CPU) do not, so the comparison checks the padding too:
# in f32 by the final parameters and moments (the weight's and the bias's
# gradients sliced back from the padded ones), in bf16 and FP8 by loss.
# BERT's tied decoder with a bias, Llama's untied head without one (its
# rotary tables frozen, as PyTorch's buffers are); their weights (~1 MB)
# travel with the pack.
"$root/.venv/bin/python" "$root/scripts/export_gpt_external.py" "$out/bert_vocab1030.onnx" \
  --arch bert --layers 1 --d-model 128 --vocab 1030 --seq 64 --batch 4 > /dev/null
add_case bert_vocab1030 "$out/bert_vocab1030.onnx" "$steps"
add_case bert_vocab1030_bf16 "$out/bert_vocab1030.onnx" "$steps" --precision=bf16
"$root/.venv/bin/python" "$root/scripts/export_gpt_external.py" "$out/llama_vocab1030.onnx" \
  --arch llama --layers 1 --d-model 128 --vocab 1030 --seq 64 --batch 4 > /dev/null
add_case llama_vocab1030_fp8 "$out/llama_vocab1030.onnx" "$steps" --precision=fp8 '--freeze=^rope\.'
# The same GPT with the tanh GELU in bf16: the GELU_AUX_BIAS epilogue at a
# width (1024 columns) where cuBLASLt tiles the epilogue as in the
# benchmark's step.
"$root/.venv/bin/python" "$root/scripts/export_gpt_external.py" "$out/gpt_bench_tanh.onnx" \
  --layers 1 --d-model 256 --vocab 512 --seq 512 --batch 4 --gelu tanh > /dev/null
add_case gpt_bench_tanh_bf16 "$out/gpt_bench_tanh.onnx" "$steps" --precision=bf16
rm -f "$out/gpt_bench_tanh.onnx"
# A deep GPT in FP8 (80 tiny blocks, 638 E4M3 sites): the scale update reads
# the sites' amaxes through an offset table (one pointer each would not fit
# a kernel's parameters). One step, compared by its loss and by the FP8
# state the update wrote (every site's amax and scale): its losses after
# step 1 are chaotic (80 blocks at this learning rate: the CPU executor in
# f64 and in f32 differ by 40% in step 2's gradient norm; DeviceLog session
# 25), so later steps compare nothing. Its weights (16 MB) stay here: the
# GPU machine regenerates them with the same seeded export (check.sh's
# caller, docs/DeviceLog.md).
"$root/.venv/bin/python" "$root/scripts/export_gpt_external.py" "$out/gpt_deep.onnx" \
  --layers 80 --d-model 64 --vocab 128 --seq 32 --batch 2 > /dev/null
FP8_STATE_ONLY=1 add_case gpt_deep_fp8 "$out/gpt_deep.onnx" 1 --precision=fp8
rm -f "$out/gpt_deep.onnx"
# A GPT whose weights end in partial blocks of the packed Adam kernel
# (d_model 96): the kernel writes the cached weights' codes and amax on its
# way, so its tail path must write them too. Its weights are small enough to
# travel beside the artifact.
"$root/.venv/bin/python" "$root/scripts/export_gpt_external.py" "$out/gpt_small.onnx" \
  --layers 1 --d-model 96 --heads 3 --vocab 512 --seq 256 --batch 4 > /dev/null
add_case gpt_small_cached_fp8 "$out/gpt_small.onnx" "$steps" --precision=fp8 --fp8-weight-cache=on
rm -f "$out/gpt_small.onnx"
# FP8 attention (--fp8-attention) in a head-dim-128 GPT (cuDNN's FP8
# backward on Hopper takes no other): each attention runs as cuDNN's
# sdpa_fp8 / sdpa_fp8_backward with ten delayed-scaling sites, 256 keys.
# Compared by loss and gradient norm, with the FP8 tolerance (compare.py):
# the executor quantizes the normalized probabilities where the kernel
# quantizes exp(S - running max) per tile of keys (256 by the codes it
# wrote, DeviceLog session 31; NVIDIA's reference model says 128). From
# the executor's state after 2 steps: with every scale at its initial 1, step 1's dS (|dS| ~ 1e-5) sits at E5M2's
# smallest subnormal, so its dQ and dK are rounding noise on both machines,
# and step 2 quantizes the dQ/dK that step 1 left at amax 0 with a scale
# of 1 again; Adam turns that noise into full-size updates, and the two
# machines' weights part (DeviceLog session 31, run F). From step 3 every
# site's scale comes from a real amax.
"$root/.venv/bin/python" "$root/scripts/export_gpt_external.py" "$out/gpt_head128.onnx" \
  --layers 2 --d-model 128 --heads 1 --vocab 512 --seq 256 --batch 4 > /dev/null
CALIBRATE=2 add_case gpt_head128_attention_fp8 "$out/gpt_head128.onnx" "$steps" --precision=fp8 --fp8-attention
rm -f "$out/gpt_head128.onnx"
# One small model per kernel family (elementwise math, data movement,
# reductions, softmax over two axes, gathers and cum-sum, matmul/gemm forms,
# ONNX-level norms, cross-entropy): each family's forward and backward
# kernels against the executor on a random batch.
python3 "$root/scripts/gpu/make_op_cases.py" "$out/ops" | while read -r name flags; do
  add_case "$name" "$out/ops/$name.onnxtxt" "$steps" $flags
done
rm -rf "$out/ops"
# Held-out exports (BERT, Mistral, eager-attention Llama at opset 14, a
# torch.nn.TransformerEncoder, a bf16 Llama; at opset 24, where PyTorch
# writes ONNX Attention and Gelu, the same families in bf16 with attention
# fused), by loss. Each is taken when HELDOUT_DIR has it.
if [ -n "${HELDOUT_DIR:-}" ]; then
  for m in bert_mlm_op18_loss mistral_op17_loss llama_eager_op14_loss \
           encoder_prenorm_gelu_op18_loss llama_tied_op18_loss gpt2_op24_loss; do
    [ -f "$HELDOUT_DIR/$m.onnx" ] || continue
    LOSS_ONLY=1 add_case "heldout_$m" "$HELDOUT_DIR/$m.onnx" "$steps"
  done
  for m in llama_bf16_op18_loss gpt2_op24_loss mistral_op24_loss bert_mlm_op24_loss \
           encoder_prenorm_gelu_op24_loss; do
    [ -f "$HELDOUT_DIR/$m.onnx" ] || continue
    add_case "heldout_${m}_bf16" "$HELDOUT_DIR/$m.onnx" "$steps" --precision=bf16
  done
fi
# The hardware FP8 encode against the integer one (check.sh runs it over
# every f32; test/Target/CUDA/FP8ConvertKernel.cpp).
"$bin/txopt-fp8-convert-kernel" "$out/fp8_convert_check.ptx" > /dev/null
# Learning curves (check.sh trains these on a token stream, f32 vs bf16).
"$bin/txopt" "$models/llama_op18_loss.onnx" --train --lr=3e-3 -o "$out/curve.txa" -q
"$bin/txopt" "$models/llama_op18_loss.onnx" --train --lr=3e-3 --precision=bf16 -o "$out/curve_bf16.txa" -q
du -sh "$out"

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Compile side of the whole-step benchmark (this machine, no GPU): exports
# the GPT (scripts/export_gpt_external.py, seeded), compiles it with txopt in
# fp32, bf16, fp8 and fp8 with cached weight codes, and writes into DIR what
# the GPU machine needs: the artifacts (weights stay by reference; the GPU machine regenerates them with
# the same seed and checks this checksum), the --report files (kernel
# launches, planned memory) and the compile times.
# Usage: [PRECISIONS="bf16 fp8 ..."] bench/step/prepare.sh DIR [gpt2|gpt2-tanh|gpt1.3b|gpt1.3b-tanh|gpt1.3b-d128|llama|bert]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dir="$1" model="${2:-gpt2}"
case "$model" in
  gpt2) shape=(--layers 12 --d-model 768 --batch 16 --seq 1024) ;;
  # GPT-2-124M with GPT-2's own GELU, the tanh form (Hugging Face's
  # gelu_new; the export's default is nn.GELU()'s erf): its bf16 step
  # computes the GELU in cuBLASLt's epilogue (tx-gemm-gelu), bf16-nogelu
  # keeps it in a kernel (--no-gelu-epilogue), the A/B of the two.
  gpt2-tanh) shape=(--layers 12 --d-model 768 --batch 16 --seq 1024 --gelu tanh) ;;
  gpt1.3b-tanh) shape=(--layers 24 --d-model 2048 --batch 8 --seq 1024 --gelu tanh) ;;
  gpt1.3b) shape=(--layers 24 --d-model 2048 --batch 8 --seq 1024) ;;
  # GPT-1.3B with 16 heads of 128 (GPT-3 XL's head dim; the export's
  # default is 32 of 64): the head dim cuDNN's FP8 attention trains on Hopper.
  gpt1.3b-d128) shape=(--layers 24 --d-model 2048 --heads 16 --batch 8 --seq 1024) ;;
  # The held-out architectures (issue 11's check), at GPT-2-124M's width
  # and 16384 tokens a step: a Llama-style decoder (RMSNorm, RoPE, SwiGLU
  # of 2048, untied head, Llama-2's vocabulary) and a BERT-base encoder
  # (post-LN, bidirectional, its vocabulary of 30522: rows of logits that
  # are not a multiple of 8 elements).
  # (--ffn spelled out, the export's default for d 768: the shape file
  # then says all summarize.py counts the model's FLOPs by.)
  llama) shape=(--arch llama --layers 12 --d-model 768 --ffn 2048 --vocab 32000 --batch 16 --seq 1024) ;;
  bert) shape=(--arch bert --layers 12 --d-model 768 --vocab 30522 --batch 32 --seq 512) ;;
  *) echo "prepare.sh: unknown model '$model' (gpt2, gpt2-tanh, gpt1.3b, gpt1.3b-tanh, gpt1.3b-d128, llama or bert)" >&2; exit 2 ;;
esac
mkdir -p "$dir"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$root/.venv/bin/python" "$root/scripts/export_gpt_external.py" "$work/$model.onnx" "${shape[@]}"
sha256sum "$work/$model.onnx.data" | cut -d' ' -f1 > "$dir/$model.sha256"
echo "${shape[*]}" > "$dir/$model.shape"
: > "$dir/$model.compile.jsonl"
# fp8-cached: the FP8 step with the weights' codes kept as state and
# written by the optimizer (--fp8-weight-cache=on, off by default; it keeps
# two bytes a weight element between steps). bf16-clip and fp8-clip: the
# same steps clipping the gradients to a global norm of 1.0 (as nanoGPT
# and Hugging Face's Trainer do), compared with PyTorch's clipped steps.
# fp8-fast: the forward FP8 GEMMs in the fast accumulator
# (--fp8-fast-accumulation=forward, Transformer Engine's default; txopt's
# is split accumulation everywhere), what it gains.
# FP8 attention needs head dim 128 on Hopper: only gpt1.3b-d128 has it.
extra=()
[ "$model" = gpt1.3b-d128 ] && extra=(fp8-attention)
case "$model" in *-tanh) extra=(bf16-nogelu) ;; esac
# bf16-nolossgrad: the cross-entropy gradient in its own kernel
# (--no-loss-grad-fusion), the A/B of the loss kernel writing it;
# bf16-nopack: one cast kernel a parameter (--no-packed-casts), the A/B of
# the packed parameter cast.
precisions=(fp32 bf16 fp8 fp8-cached bf16-clip fp8-clip bf16-dp1 fp8-lmhead bf16-unfused fp8-fast
            bf16-nolossgrad bf16-nopack "${extra[@]}")
# The held-out models: the configurations the targets name. Llama's rotary
# tables are initializers the export names no module for: frozen, as
# PyTorch's buffers are (txopt would otherwise train and decay them).
common=()
case "$model" in
  llama) precisions=(fp32 bf16 fp8); common=('--freeze=^rope\.') ;;
  # BERT's 30522 classes: the padded head (tx-pad-loss-classes, txopt's
  # default for a GPU step) against the unaligned one (*-nopad).
  bert) precisions=(fp32 bf16 fp8 bf16-nopad fp8-nopad) ;;
esac
# PRECISIONS="bf16 fp8 ..." compiles those configurations only (a device
# session's A/B pack, where the rest would only take time and room).
if [ -n "${PRECISIONS:-}" ]; then
  read -r -a precisions <<< "$PRECISIONS"
fi
for precision in "${precisions[@]}"; do
  case "$precision" in
    fp8-attention) flags=(--precision=fp8 --fp8-attention) ;;
    bf16-nogelu) flags=(--precision=bf16 --no-gelu-epilogue) ;;
    bf16-nolossgrad) flags=(--precision=bf16 --no-loss-grad-fusion) ;;
    bf16-nopack) flags=(--precision=bf16 --no-packed-casts) ;;
    # Attention left unfused (the B*H*T*T scores and probabilities in
    # memory): what the fused attention saves in time and peak memory.
    bf16-unfused) flags=(--precision=bf16 --no-fuse=attention) ;;
    # The LM head's three GEMMs in FP8 too (the default keeps the first
    # and last forward GEMMs in bf16, as Transformer Engine's users do):
    # only the first layer's QKV GEMM (n3_MatMul in this export) excluded.
    fp8-lmhead) flags=(--precision=fp8 '--fp8-exclude=^n3_MatMul$') ;;
    # The ZeRO-1 step for one rank (run.sh starts it as rank 0 of 1, NCCL).
    *-dp1) flags=(--precision="${precision%-dp1}" --data-parallel=1) ;;
    *-nopad) flags=(--precision="${precision%-nopad}" --no-pad-loss-classes) ;;
    # The norm gradients' dy and residual gradient stored by add kernels
    # (--no-norm-grad-input-fusion), the A/B of computing them in the
    # norm-gradient kernel.
    *-nonormgrad) flags=(--precision="${precision%-nonormgrad}" --no-norm-grad-input-fusion) ;;
    fp8-cached) flags=(--precision=fp8 --fp8-weight-cache=on) ;;
    fp8-fast) flags=(--precision=fp8 --fp8-fast-accumulation=forward) ;;
    *-clip) flags=(--precision="${precision%-clip}" --grad-clip=1.0) ;;
    *) flags=(--precision="$precision") ;;
  esac
  start=$(date +%s.%N)
  "$root/build/bin/txopt" "$work/$model.onnx" --train "${flags[@]}" ${common[@]+"${common[@]}"} \
    -o "$dir/${model}_$precision.txa" --report="$dir/${model}_$precision.report.json" -q
  end=$(date +%s.%N)
  python3 -c "import json,sys; print(json.dumps({'model': sys.argv[1], 'precision': sys.argv[2], 'compile_s': float(sys.argv[4]) - float(sys.argv[3])}))" \
    "$model" "$precision" "$start" "$end" >> "$dir/$model.compile.jsonl"
done
cat "$dir/$model.compile.jsonl"

#!/usr/bin/env python3
"""Export a held-out set of real PyTorch transformer graphs to ONNX for txopt.

Why: the fixtures in test/Inputs/models cover a handful of exporter/model
combinations.  This script produces a wider, *held-out* set that txopt's ONNX
importer was not developed against, so we can see which op types, attribute
forms and graph shapes real exporters emit.

What it exports (all models randomly initialised from configs with a fixed seed;
nothing is downloaded):

  * Hugging Face GPT2LMHeadModel, BertForMaskedLM, MistralForCausalLM (sliding
    window), LlamaForCausalLM with tied and untied embeddings (plus an
    eager-attention Llama);
  * torch.nn.TransformerEncoder(Layer) with norm_first False/True and
    activation relu/gelu, wrapped as embedding -> encoder -> linear head ->
    F.cross_entropy;
  * "logits only" variants (no labels input) of GPT-2, Llama and the encoder;
  * a Llama with symbolic batch/sequence dims (dynamic_axes / dynamic_shapes);
  * a Llama saved with external data (weights.bin) in its own sub-folder;
  * Llama in reduced precision (weights in bfloat16; CPU autocast to bfloat16);
  * multi-parameter optimizer steps written in plain PyTorch: AdamW, Adam with
    L2 weight decay folded into the gradient, and AdamW with the step baked in
    as a constant.

Model sizes follow test/Inputs/models: 2 layers, hidden 128, 4 heads, vocab
512, batch 2 x sequence 32, int64 ids (and int64 labels for *_loss models,
which output a scalar cross-entropy loss).

Each model is exported at opset 14 and 17 with the TorchScript exporter
(torch.onnx.export(..., dynamo=False)) and at opsets 18 and 24 with the dynamo
exporter (dynamo=True), where the exporter manages; failures are logged and
skipped.

For every file <name>.onnx it writes <name>.ref.json with the input recipe,
the PyTorch eager outputs and the onnxruntime (CPU) outputs, runs
onnx.checker.check_model on it, and finally writes SUMMARY.md (op counts,
notable ops, attribute forms, failures) into the output folder.

Usage:  python scripts/export_heldout_models.py [--out build/heldout] [--only REGEX]

The exports (and their .ref.json, SUMMARY.md) go to --out, by default
build/heldout under the repository: generated files, never committed.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import os
import re
import sys
import tempfile
import time
import traceback
from typing import Callable

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # models are built from configs; never touch the network

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

VOCAB, HIDDEN, HEADS, LAYERS = 512, 128, 4, 2
BATCH, SEQ, MAX_POS = 2, 32, 64
SEED = 0

IDS_RECIPE = "ids[b,t] = (7*(32*b+t)+3) mod 512"
LABELS_RECIPE = "labels[b,t] = (11*(32*b+t)+5) mod 512"
ADAM_RECIPE = (
    "for parameter i (0-based) with n elements, k = arange(n) reshaped to its shape, float32: "
    "p = sin(0.1*k + i); g = 0.1*cos(0.07*k + 2*i); m = 0.01*sin(0.05*k + 3*i); "
    "v = 1e-4*cos(0.03*k + i)**2; lr = 1e-3 (0-d); step = 10.0 (0-d, if an input)"
)


# --------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------

def token_ids(batch: int = BATCH, seq: int = SEQ) -> torch.Tensor:
    b = torch.arange(batch).unsqueeze(1)
    t = torch.arange(seq).unsqueeze(0)
    # Uses 32 (not seq) as the row stride so the recipe is the same for any shape.
    return (7 * (32 * b + t) + 3) % VOCAB


def token_labels(batch: int = BATCH, seq: int = SEQ) -> torch.Tensor:
    b = torch.arange(batch).unsqueeze(1)
    t = torch.arange(seq).unsqueeze(0)
    return (11 * (32 * b + t) + 5) % VOCAB


def lm_inputs(with_labels: bool, batch: int = BATCH, seq: int = SEQ) -> dict[str, torch.Tensor]:
    inputs = {"input_ids": token_ids(batch, seq)}
    if with_labels:
        inputs["labels"] = token_labels(batch, seq)
    return inputs


# --------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------

class HFWrapper(nn.Module):
    """Calls a Hugging Face model with input_ids only (no attention_mask input).

    With attention_mask=None, transformers' causal-mask code looks for packed
    sequences with torch.diff, which the TorchScript exporter cannot export.
    For TorchScript exports `ones_mask` is therefore set, and an all-ones
    attention_mask is built inside the graph from input_ids instead.
    """

    def __init__(self, model: nn.Module, causal: bool = True):
        super().__init__()
        self.model = model
        self.extra = {"use_cache": False} if causal else {}
        self.ones_mask = False

    def call(self, input_ids, **kw):
        if self.ones_mask:
            kw["attention_mask"] = torch.ones_like(input_ids)
        return self.model(input_ids=input_ids, **kw, **self.extra)


class HFLoss(HFWrapper):
    """forward(input_ids, labels) -> the Hugging Face model's own scalar loss."""

    def forward(self, input_ids, labels):
        return self.call(input_ids, labels=labels).loss


class HFLogits(HFWrapper):
    """forward(input_ids) -> logits [batch, seq, vocab]."""

    def forward(self, input_ids):
        return self.call(input_ids).logits


class AutocastLoss(nn.Module):
    """Runs the wrapped loss module under CPU autocast to bfloat16."""

    def __init__(self, inner: nn.Module):
        super().__init__()
        self.inner = inner

    def forward(self, input_ids, labels):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = self.inner(input_ids, labels)
        return loss.float()


class EncoderLM(nn.Module):
    """Token + learned position embedding -> nn.TransformerEncoder -> linear head."""

    def __init__(self, norm_first: bool, activation: str, causal: bool):
        super().__init__()
        self.causal = causal
        self.tok = nn.Embedding(VOCAB, HIDDEN)
        self.pos = nn.Embedding(MAX_POS, HIDDEN)
        layer = nn.TransformerEncoderLayer(
            HIDDEN, HEADS, dim_feedforward=4 * HIDDEN, dropout=0.1,
            activation=activation, batch_first=True, norm_first=norm_first)
        self.encoder = nn.TransformerEncoder(layer, num_layers=LAYERS, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(HIDDEN) if norm_first else nn.Identity()
        self.head = nn.Linear(HIDDEN, VOCAB)

    def logits(self, input_ids):
        seq = input_ids.shape[1]
        x = self.tok(input_ids) + self.pos(torch.arange(seq, device=input_ids.device))
        mask = None
        if self.causal:
            mask = nn.Transformer.generate_square_subsequent_mask(seq, device=input_ids.device)
        x = self.encoder(x, mask=mask, is_causal=self.causal)
        return self.head(self.norm(x))

    def forward(self, input_ids):
        return self.logits(input_ids)


class EncoderLMLoss(EncoderLM):
    def forward(self, input_ids, labels):
        logits = self.logits(input_ids)
        return F.cross_entropy(logits.reshape(-1, VOCAB), labels.reshape(-1))


def gpt2(**kw):
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(vocab_size=VOCAB, n_positions=MAX_POS, n_embd=HIDDEN, n_layer=LAYERS,
                     n_head=HEADS, **kw)
    return GPT2LMHeadModel(cfg)


def bert(**kw):
    from transformers import BertConfig, BertForMaskedLM
    cfg = BertConfig(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS,
                     num_attention_heads=HEADS, intermediate_size=4 * HIDDEN,
                     max_position_embeddings=MAX_POS, **kw)
    return BertForMaskedLM(cfg)


def llama(tied: bool, **kw):
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=2 * HIDDEN,
                      num_hidden_layers=LAYERS, num_attention_heads=HEADS, num_key_value_heads=2,
                      max_position_embeddings=MAX_POS, tie_word_embeddings=tied, **kw)
    return LlamaForCausalLM(cfg)


def mistral(**kw):
    from transformers import MistralConfig, MistralForCausalLM
    cfg = MistralConfig(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=2 * HIDDEN,
                        num_hidden_layers=LAYERS, num_attention_heads=HEADS, num_key_value_heads=2,
                        max_position_embeddings=MAX_POS, sliding_window=16, **kw)
    return MistralForCausalLM(cfg)


# --------------------------------------------------------------------------
# Optimizer steps (plain PyTorch; exported as graphs over explicit tensors)
# --------------------------------------------------------------------------

ADAM_SHAPES = [(128, 64), (64,), (4, 8, 16)]
BETA1, BETA2, EPS, WD = 0.9, 0.999, 1e-8, 0.01
CONST_STEP = 10


def adam_update(p, g, m, v, lr, step, decoupled: bool):
    if not decoupled:            # Adam: L2 weight decay added to the gradient
        g = g + WD * p
    m = BETA1 * m + (1 - BETA1) * g
    v = BETA2 * v + (1 - BETA2) * g * g
    m_hat = m / (1 - BETA1 ** step)
    v_hat = v / (1 - BETA2 ** step)
    if decoupled:                # AdamW: decoupled weight decay
        p = p - lr * WD * p
    p = p - lr * m_hat / (torch.sqrt(v_hat) + EPS)
    return p, m, v


class MultiAdamStep(nn.Module):
    """forward(p0,g0,m0,v0, p1,g1,m1,v1, p2,g2,m2,v2, lr[, step]) -> (p0',m0',v0', ...)."""

    def __init__(self, decoupled: bool, const_step: int | None = None):
        super().__init__()
        self.decoupled = decoupled
        self.const_step = const_step

    def forward(self, *flat):
        n = len(ADAM_SHAPES)
        groups = [flat[4 * i: 4 * i + 4] for i in range(n)]
        lr = flat[4 * n]
        step = self.const_step if self.const_step is not None else flat[4 * n + 1]
        outs = []
        for p, g, m, v in groups:
            outs.extend(adam_update(p, g, m, v, lr, step, self.decoupled))
        return tuple(outs)


def adam_inputs(with_step: bool) -> dict[str, torch.Tensor]:
    inputs = {}
    for i, shape in enumerate(ADAM_SHAPES):
        n = int(np.prod(shape))
        k = torch.arange(n, dtype=torch.float32).reshape(shape)
        inputs[f"p{i}"] = torch.sin(0.1 * k + i)
        inputs[f"g{i}"] = 0.1 * torch.cos(0.07 * k + 2 * i)
        inputs[f"m{i}"] = 0.01 * torch.sin(0.05 * k + 3 * i)
        inputs[f"v{i}"] = 1e-4 * torch.cos(0.03 * k + i) ** 2
    inputs["lr"] = torch.tensor(1e-3, dtype=torch.float32)
    if with_step:
        inputs["step"] = torch.tensor(10.0, dtype=torch.float32)
    return inputs


def adam_output_names() -> list[str]:
    return [f"{t}{i}_out" for i in range(len(ADAM_SHAPES)) for t in ("p", "m", "v")]


# --------------------------------------------------------------------------
# Export specifications
# --------------------------------------------------------------------------

TS14, TS17, DYN18 = ("torchscript", 14), ("torchscript", 17), ("dynamo", 18)
# Opset 24: the dynamo exporter writes F.scaled_dot_product_attention as
# ONNX Attention and F.gelu as Gelu there.
DYN24 = ("dynamo", 24)
ALL = (TS14, TS17, DYN18, DYN24)


@dataclasses.dataclass
class Spec:
    name: str                              # file stem; "_op<N>" is inserted before the suffix
    suffix: str                            # "loss", "logits" or "" (optimizer steps)
    build: Callable[[], nn.Module]
    inputs: Callable[[], dict]
    output_names: list[str]
    exports: tuple = ALL
    description: str = ""
    dynamic: bool = False                  # symbolic batch/seq dims on input_ids/labels
    external_data: bool = False            # saved as <stem>/model.onnx + weights.bin
    recipe: str = f"{IDS_RECIPE}; {LABELS_RECIPE}"

    def stem(self, opset: int) -> str:
        return f"{self.name}_op{opset}" + (f"_{self.suffix}" if self.suffix else "")


def seeded(fn: Callable[[], nn.Module]) -> Callable[[], nn.Module]:
    def build():
        torch.manual_seed(SEED)
        return fn().eval()
    return build


def specs() -> list[Spec]:
    loss_in = lambda: lm_inputs(True)          # noqa: E731
    logit_in = lambda: lm_inputs(False)        # noqa: E731
    s = []
    add = s.append

    # Hugging Face models (default attention implementation, i.e. SDPA).
    add(Spec("gpt2", "loss", seeded(lambda: HFLoss(gpt2())), loss_in, ["loss"],
             description="HF GPT2LMHeadModel, tied embeddings, SDPA attention"))
    add(Spec("gpt2", "logits", seeded(lambda: HFLogits(gpt2())), logit_in, ["logits"],
             description="HF GPT2LMHeadModel logits only"))
    add(Spec("bert_mlm", "loss", seeded(lambda: HFLoss(bert(), causal=False)), loss_in, ["loss"],
             description="HF BertForMaskedLM (token_type_ids/attention_mask defaulted), MLM loss on all positions"))
    add(Spec("mistral", "loss", seeded(lambda: HFLoss(mistral())), loss_in, ["loss"],
             description="HF MistralForCausalLM, GQA (2 kv heads), sliding_window=16"))
    add(Spec("llama_tied", "loss", seeded(lambda: HFLoss(llama(True))), loss_in, ["loss"],
             description="HF LlamaForCausalLM, tie_word_embeddings=True, GQA"))
    add(Spec("llama_untied", "loss", seeded(lambda: HFLoss(llama(False))), loss_in, ["loss"],
             description="HF LlamaForCausalLM, tie_word_embeddings=False, GQA"))
    add(Spec("llama_eager", "loss", seeded(lambda: HFLoss(llama(False, attn_implementation="eager"))),
             loss_in, ["loss"], description="HF LlamaForCausalLM with eager (non-SDPA) attention"))
    add(Spec("llama_untied", "logits", seeded(lambda: HFLogits(llama(False))), logit_in, ["logits"],
             description="HF LlamaForCausalLM logits only"))

    # Symbolic batch / sequence dims.
    add(Spec("llama_dynamic", "loss", seeded(lambda: HFLoss(llama(False))), loss_in, ["loss"],
             exports=(TS17, DYN18), dynamic=True,
             description="HF Llama, symbolic batch and seq dims on input_ids/labels"))
    add(Spec("encoder_postnorm_relu_dynamic", "logits",
             seeded(lambda: EncoderLM(False, "relu", False)), logit_in, ["logits"],
             exports=(TS14, DYN18), dynamic=True,
             description="nn.TransformerEncoder logits, symbolic batch and seq dims"))

    # External data.
    add(Spec("llama_untied_extdata", "loss", seeded(lambda: HFLoss(llama(False))), loss_in, ["loss"],
             exports=(TS17, DYN18), external_data=True,
             description="HF Llama saved with all tensors in weights.bin (size_threshold=0)"))

    # Reduced precision.
    add(Spec("llama_bf16", "loss", seeded(lambda: HFLoss(llama(False)).to(torch.bfloat16)), loss_in,
             ["loss"], exports=(TS17, DYN18),
             description="HF Llama with all weights in bfloat16 (RMSNorm upcasts to fp32)"))
    add(Spec("llama_autocast", "loss", seeded(lambda: AutocastLoss(HFLoss(llama(False)))), loss_in,
             ["loss"], exports=(TS17, DYN18),
             description="HF Llama fp32 weights run under torch.autocast('cpu', bfloat16)"))

    # torch.nn.TransformerEncoderLayer variants.
    for norm_first in (False, True):
        for act in ("relu", "gelu"):
            tag = f"encoder_{'prenorm' if norm_first else 'postnorm'}_{act}"
            causal = norm_first
            add(Spec(tag, "loss",
                     seeded(lambda nf=norm_first, a=act, c=causal: EncoderLMLoss(nf, a, c)),
                     loss_in, ["loss"],
                     description=f"nn.TransformerEncoderLayer norm_first={norm_first}, "
                                 f"activation={act}, causal mask={causal}; F.cross_entropy"))
    add(Spec("encoder_prenorm_gelu", "logits", seeded(lambda: EncoderLM(True, "gelu", True)),
             logit_in, ["logits"], description="nn.TransformerEncoder pre-norm gelu, logits only"))

    # Optimizer steps.
    add(Spec("adamw_multi", "", seeded(lambda: MultiAdamStep(decoupled=True)),
             lambda: adam_inputs(True), adam_output_names(), exports=(TS17, DYN18),
             recipe=ADAM_RECIPE,
             description=f"AdamW over 3 params {ADAM_SHAPES}, lr and step as 0-d inputs"))
    add(Spec("adam_l2_multi", "", seeded(lambda: MultiAdamStep(decoupled=False)),
             lambda: adam_inputs(True), adam_output_names(), exports=(TS17,),
             recipe=ADAM_RECIPE,
             description="Adam with L2 weight decay added to the gradient, 3 params"))
    add(Spec("adamw_multi_conststep", "", seeded(lambda: MultiAdamStep(True, CONST_STEP)),
             lambda: adam_inputs(False), adam_output_names(), exports=(TS17,),
             recipe=ADAM_RECIPE,
             description=f"AdamW, bias correction with step={CONST_STEP} baked in as a constant"))
    return s


# --------------------------------------------------------------------------
# Export, check, run
# --------------------------------------------------------------------------

def export(module: nn.Module, inputs: dict, path: str, exporter: str, opset: int,
           output_names: list[str], dynamic: bool) -> None:
    args = tuple(inputs.values())
    names = list(inputs)
    dyn_names = [n for n in names if n in ("input_ids", "labels")] if dynamic else []
    if exporter == "torchscript":
        dynamic_axes = {n: {0: "batch", 1: "seq"} for n in dyn_names} or None
        torch.onnx.export(module, args, path, dynamo=False, opset_version=opset,
                          input_names=names, output_names=output_names,
                          dynamic_axes=dynamic_axes, do_constant_folding=True)
    else:
        dynamic_shapes = None
        if dynamic:
            batch = torch.export.Dim("batch", min=1, max=16)
            seq = torch.export.Dim("seq", min=2, max=MAX_POS)
            dynamic_shapes = tuple({0: batch, 1: seq} if n in dyn_names else None for n in names)
        prog = torch.onnx.export(module, args, dynamo=True, opset_version=opset,
                                 input_names=names, output_names=output_names,
                                 dynamic_shapes=dynamic_shapes, external_data=False)
        prog.save(path)


def to_numpy(t: torch.Tensor) -> np.ndarray:
    if t.dtype == torch.bfloat16:
        t = t.float()
    return t.detach().cpu().numpy()


def describe(arr: np.ndarray) -> dict:
    arr = np.asarray(arr)
    d = {"shape": list(arr.shape), "dtype": str(arr.dtype)}
    flat = arr.astype(np.float64).ravel()
    if arr.ndim == 0:
        d["value"] = float(flat[0])
    else:
        d["first"] = [float(x) for x in flat[:6]]
        d["last"] = [float(x) for x in flat[-3:]]
        d["sum"] = float(flat.sum())
        d["mean_abs"] = float(np.abs(flat).mean())
    return d


def run_ort(path_or_bytes, inputs: dict) -> list[np.ndarray]:
    import onnxruntime as ort
    sess = ort.InferenceSession(path_or_bytes, providers=["CPUExecutionProvider"])
    feeds = {i.name: to_numpy(inputs[i.name]) for i in sess.get_inputs()}
    return sess.run(None, feeds)


def check(path: str) -> dict:
    result = {}
    try:
        onnx.checker.check_model(path)
        result["check_model"] = "ok"
    except Exception as e:  # noqa: BLE001
        result["check_model"] = f"FAIL: {str(e).splitlines()[0][:300]}"
    try:
        onnx.checker.check_model(path, full_check=True)
        result["check_model_full"] = "ok"
    except Exception as e:  # noqa: BLE001
        result["check_model_full"] = f"FAIL: {str(e).splitlines()[0][:300]}"
    return result


# --------------------------------------------------------------------------
# Graph analysis
# --------------------------------------------------------------------------

NOTABLE = {"LayerNormalization", "SimplifiedLayerNormalization", "RMSNormalization", "Erf", "Gelu",
           "FastGelu", "SoftmaxCrossEntropyLoss", "NegativeLogLikelihoodLoss", "LogSoftmax",
           "Trilu", "Attention", "Gemm", "Dropout", "Split", "Pad", "If", "Loop", "Scan",
           "ScatterND", "ScatterElements", "GatherND", "CumSum", "Einsum", "Max", "Min",
           "ReduceLogSumExp", "IsInf", "IsNaN", "Not", "And", "Or", "Less", "Greater",
           "LessOrEqual", "ArgMax", "TopK", "OneHot", "Clip"}


def op_key(node: onnx.NodeProto) -> str:
    return f"{node.domain}::{node.op_type}" if node.domain not in ("", "ai.onnx") else node.op_type


def all_nodes(graph: onnx.GraphProto):
    for node in graph.node:
        yield node
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from all_nodes(attr.g)
            for g in attr.graphs:
                yield from all_nodes(g)


def analyse(model: onnx.ModelProto) -> dict:
    nodes = list(all_nodes(model.graph))
    for fn in model.functions:
        nodes.extend(fn.node)
    counts = collections.Counter(op_key(n) for n in nodes)
    init_names = {i.name for i in model.graph.initializer}
    const_outputs = {o for n in nodes if n.op_type == "Constant" for o in n.output}

    forms = collections.defaultdict(set)  # op -> set of "attr/input form" strings
    for n in nodes:
        attrs = sorted(a.name for a in n.attribute)
        n_in = sum(1 for i in n.input if i)
        forms[op_key(n)].add(f"inputs={n_in} attrs=[{','.join(attrs)}]")

    notes = []
    opset = {o.domain or "ai.onnx": o.version for o in model.opset_import}
    for n in nodes:
        a = {x.name: onnx.helper.get_attribute_value(x) for x in n.attribute}
        if n.op_type == "Split":
            if "num_outputs" in a:
                notes.append(f"Split num_outputs={a['num_outputs']}")
            elif len(n.input) > 1 and n.input[1]:
                notes.append("Split sizes as input")
            elif "split" in a:
                notes.append("Split sizes as attribute")
            else:
                notes.append("Split equal (no sizes, no num_outputs)")
        if n.op_type.startswith("Reduce"):
            if len(n.input) > 1 and n.input[1]:
                src = "initializer" if n.input[1] in init_names else (
                    "Constant" if n.input[1] in const_outputs else "computed")
                notes.append(f"{n.op_type} axes as input ({src})")
            elif "axes" in a:
                notes.append(f"{n.op_type} axes as attribute")
            else:
                notes.append(f"{n.op_type} no axes (reduce all)")
            if a.get("keepdims", 1) == 0:
                notes.append(f"{n.op_type} keepdims=0")
        if n.op_type == "Pad":
            notes.append(f"Pad {len(n.input)} inputs" + (" (axes input)" if len(n.input) > 3 and n.input[3] else "")
                         + f" mode={a.get('mode', b'constant')!r}")
        if n.op_type == "Softmax" and opset.get("ai.onnx", 99) < 13:
            notes.append("Softmax at opset < 13 (2-D coercion semantics)")
        if n.op_type in ("Softmax", "LogSoftmax") and a.get("axis", -1) != -1:
            notes.append(f"{n.op_type} axis={a['axis']}")
        if n.op_type == "Cast":
            notes.append(f"Cast to {onnx.TensorProto.DataType.Name(a['to'])}")
        if n.op_type == "Dropout":
            notes.append(f"Dropout inputs={len(n.input)} outputs={len(n.output)}")
        if n.op_type == "Gemm":
            notes.append(f"Gemm transA={a.get('transA', 0)} transB={a.get('transB', 0)}")
        if n.op_type == "LayerNormalization":
            notes.append(f"LayerNormalization axis={a.get('axis', -1)} stash_type={a.get('stash_type', 1)}"
                         f" outputs={len(n.output)}")
        if n.op_type == "Trilu":
            notes.append(f"Trilu upper={a.get('upper', 1)}")
        if n.op_type in ("Squeeze", "Unsqueeze"):
            notes.append(f"{n.op_type} axes as {'input' if len(n.input) > 1 else 'attribute'}")
        if n.op_type == "Constant":
            notes.append(f"Constant {'/'.join(sorted(a))}")
        if n.op_type == "SoftmaxCrossEntropyLoss":
            notes.append(f"SoftmaxCrossEntropyLoss reduction={a.get('reduction', b'mean')!r}"
                         f" ignore_index={a.get('ignore_index')}")

    def dims(vi):
        t = vi.type.tensor_type
        return ["?" if not d.HasField("dim_value") and not d.HasField("dim_param")
                else (d.dim_param if d.HasField("dim_param") else d.dim_value) for d in t.shape.dim]

    sym_io = [f"{vi.name}{dims(vi)}" for vi in list(model.graph.input) + list(model.graph.output)
              if any(isinstance(x, str) for x in dims(vi))]
    sym_vi = sum(1 for vi in model.graph.value_info if any(isinstance(x, str) for x in dims(vi)))
    init_dtypes = collections.Counter(onnx.TensorProto.DataType.Name(i.data_type)
                                      for i in model.graph.initializer)
    return {
        "op_counts": dict(sorted(counts.items())),
        "n_nodes": len(nodes),
        "n_initializers": len(model.graph.initializer),
        "initializer_dtypes": dict(init_dtypes),
        "opset_import": opset,
        "n_functions": len(model.functions),
        "notable": sorted(k for k in counts if k.split("::")[-1] in NOTABLE or "::" in k),
        "notes": dict(collections.Counter(notes)),
        "forms": {k: sorted(v) for k, v in forms.items()},
        "symbolic_io": sym_io,
        "symbolic_value_info": sym_vi,
        "inputs": [f"{vi.name}:{onnx.TensorProto.DataType.Name(vi.type.tensor_type.elem_type)}{dims(vi)}"
                   for vi in model.graph.input],
        "outputs": [f"{vi.name}:{onnx.TensorProto.DataType.Name(vi.type.tensor_type.elem_type)}{dims(vi)}"
                    for vi in model.graph.output],
    }


# --------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------

def process(spec: Spec, exporter: str, opset: int, out_dir: str, log) -> dict:
    stem = spec.stem(opset)
    if spec.external_data:
        rel = os.path.join(stem, "model.onnx")
    else:
        rel = stem + ".onnx"
    final = os.path.join(out_dir, rel)
    os.makedirs(os.path.dirname(final), exist_ok=True)
    rec = {"file": rel, "model": spec.name, "exporter": exporter, "opset": opset,
           "description": spec.description}

    module = spec.build()
    if exporter == "torchscript":
        for m in module.modules():
            if isinstance(m, HFWrapper) and "use_cache" in m.extra:
                m.ones_mask = True
                rec["note"] = "TorchScript: all-ones attention_mask built in-graph (avoids aten::diff)"
    inputs = spec.inputs()
    with torch.no_grad():
        torch_out = module(*inputs.values())
    torch_out = torch_out if isinstance(torch_out, tuple) else (torch_out,)

    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = os.path.join(tmp, "model.onnx")
        try:
            export(module, inputs, tmp_path, exporter, opset, spec.output_names, spec.dynamic)
        except Exception as e:  # noqa: BLE001
            msg = f"{type(e).__name__}: {str(e).strip().splitlines()[0][:300] if str(e).strip() else ''}"
            log(f"  EXPORT FAILED {rel} ({exporter}, opset {opset}): {msg}")
            rec["export_error"] = msg
            rec["traceback_tail"] = traceback.format_exc().splitlines()[-6:]
            return rec
        model = onnx.load(tmp_path)
    rec["export_seconds"] = round(time.time() - t0, 1)
    inline_bytes = model.SerializeToString()  # save_model(external data) rewrites `model` in place
    if spec.external_data:
        onnx.save_model(model, final, save_as_external_data=True, all_tensors_to_one_file=True,
                        location="weights.bin", size_threshold=0)
    else:
        onnx.save_model(model, final)

    model = onnx.load_from_string(inline_bytes)
    rec.update(check(final))
    rec.update(analyse(model))

    ref = {"file": rel, "exporter": exporter, "opset": opset, "torch": torch.__version__,
           "description": spec.description, "input_recipe": spec.recipe,
           "inputs": {k: {"shape": list(v.shape), "dtype": str(v.dtype).replace("torch.", "")}
                      for k, v in inputs.items()},
           "torch_outputs": {n: describe(to_numpy(t)) for n, t in zip(spec.output_names, torch_out)}}
    def short(e):
        return f"{type(e).__name__}: {str(e).strip().splitlines()[0][:300] if str(e).strip() else ''}"

    ort_out = None
    try:
        ort_out = run_ort(final, inputs)
        rec["ort"] = "ok"
    except Exception as e:  # noqa: BLE001
        ref["ort_error"] = short(e)
        rec["ort"] = f"FAIL: {short(e)}"
        if spec.external_data:  # e.g. ORT cannot shape-infer from external constant data
            try:
                ort_out = run_ort(inline_bytes, inputs)
                ref["ort_outputs_source"] = "same graph with weights inlined (external-data copy failed to load)"
                rec["ort"] += " (ran the inlined copy instead)"
            except Exception as e2:  # noqa: BLE001
                ref["ort_error_inlined"] = short(e2)
    if ort_out is not None:
        ref["ort_outputs"] = {n: describe(a) for n, a in zip(spec.output_names, ort_out)}
        diff = max(float(np.max(np.abs(a.astype(np.float64) - to_numpy(t).astype(np.float64))))
                   for a, t in zip(ort_out, torch_out))
        ref["max_abs_diff_torch_vs_ort"] = diff
        rec["max_abs_diff"] = diff
        if len(ort_out) == 1 and ort_out[0].ndim == 0:
            rec["ort_loss"] = float(ort_out[0])
    if spec.dynamic:  # run again at a different shape to exercise the symbolic dims
        alt = lm_inputs("labels" in inputs, batch=3, seq=20)
        ref["alt_shape_inputs"] = {k: list(v.shape) for k, v in alt.items()}
        with torch.no_grad():
            ref["alt_shape_torch_outputs"] = {spec.output_names[0]: describe(to_numpy(module(*alt.values())))}
        try:
            alt_ort = run_ort(final, alt)
            ref["alt_shape_ort_outputs"] = {n: describe(a) for n, a in zip(spec.output_names, alt_ort)}
            rec["ort_alt_shape"] = "ok"
        except Exception as e:  # noqa: BLE001
            ref["alt_shape_ort_error"] = short(e)
            rec["ort_alt_shape"] = f"FAIL: {short(e)}"
    ref_path = final[:-len(".onnx")] + ".ref.json"
    with open(ref_path, "w") as f:
        json.dump(ref, f, indent=1)
    log(f"  wrote {rel}: {rec['n_nodes']} nodes, check={rec['check_model']}, "
        f"full={rec['check_model_full'][:60]}, ort={rec['ort'][:80]}"
        + (f", loss={rec['ort_loss']:.4f}" if "ort_loss" in rec else "")
        + (f", |torch-ort|={rec['max_abs_diff']:.2e}" if "max_abs_diff" in rec else ""))
    return rec


def write_summary(records: list[dict], out_dir: str) -> None:
    ok = [r for r in records if "export_error" not in r]
    bad = [r for r in records if "export_error" in r]
    L = ["# Held-out ONNX exports", "",
         f"Written by scripts/export_heldout_models.py (torch {torch.__version__}, onnx {onnx.__version__}).",
         f"Inputs: {IDS_RECIPE}; {LABELS_RECIPE} (batch {BATCH}, seq {SEQ}); optimizer steps: "
         f"{ADAM_RECIPE}.", "",
         "| file | exporter | opset | nodes | inits | check / full | ORT | loss | notable | op counts |",
         "|---|---|---|---|---|---|---|---|---|---|"]
    for r in ok:
        counts = ", ".join(f"{k} {v}" for k, v in r["op_counts"].items())
        chk = ("ok" if r["check_model"] == "ok" else "FAIL") + " / " + \
              ("ok" if r["check_model_full"] == "ok" else "FAIL")
        ort_ok = "ok" if r.get("ort") == "ok" else "FAIL"
        loss = f"{r['ort_loss']:.4f}" if "ort_loss" in r else ""
        L.append(f"| {r['file']} | {r['exporter']} | {r['opset']} | {r['n_nodes']} | "
                 f"{r['n_initializers']} | {chk} | {ort_ok} | {loss} | {', '.join(r['notable'])} | {counts} |")

    L += ["", "## Failed or skipped exports", ""]
    L += [f"- {r['file']} ({r['exporter']}, opset {r['opset']}): {r['export_error']}" for r in bad] or ["- none"]

    L += ["", "## Checker / onnxruntime problems", ""]
    probs = []
    for r in ok:
        for k in ("check_model", "check_model_full", "ort", "ort_alt_shape"):
            if k in r and r[k] != "ok" or (k == "ort" and k not in r):
                probs.append(f"- {r['file']}: {k}: {r.get(k)}")
        if r.get("max_abs_diff", 0) > 1e-5:
            probs.append(f"- {r['file']}: max |torch - ort| = {r['max_abs_diff']:.3g}")
    L += probs or ["- none"]

    union = collections.Counter()
    files_per_op = collections.Counter()
    for r in ok:
        union.update(r["op_counts"])
        files_per_op.update(r["op_counts"].keys())
    L += ["", "## Union of op types (total count, number of files)", ""]
    L += [f"- {k}: {union[k]} in {files_per_op[k]} files" for k in sorted(union)]

    forms = collections.defaultdict(set)
    for r in ok:
        for k, v in r["forms"].items():
            forms[k].update(v)
    L += ["", "## Input arity / attribute names seen per op type", ""]
    L += [f"- {k}: " + "; ".join(sorted(forms[k])) for k in sorted(forms)]

    L += ["", "## Per-file details", ""]
    for r in ok:
        L.append(f"### {r['file']}")
        L.append(f"- {r['description']}; exporter {r['exporter']}, opset_import {r['opset_import']}, "
                 f"functions {r['n_functions']}")
        L.append(f"- inputs {r['inputs']}; outputs {r['outputs']}")
        L.append(f"- initializers {r['n_initializers']} {r['initializer_dtypes']}; symbolic I/O "
                 f"{r['symbolic_io'] or 'none'}; value_info with symbolic dims {r['symbolic_value_info']}")
        if "note" in r:
            L.append(f"- {r['note']}")
        L.append("- attribute/input forms: " + ", ".join(f"{k} ×{v}" for k, v in sorted(r["notes"].items())))
        L.append("")
    with open(os.path.join(out_dir, "SUMMARY.md"), "w") as f:
        f.write("\n".join(L) + "\n")
    with open(os.path.join(out_dir, "summary.json"), "w") as f:
        json.dump(records, f, indent=1, default=str)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "build", "heldout"),
                    help="output folder (default: build/heldout in the repo)")
    ap.add_argument("--only", default=None, help="regex on file stems to export a subset")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.backends.mha.set_fastpath_enabled(False)  # keep nn.MultiheadAttention on the exportable path
    log_file = open(os.path.join(args.out, "export.log"), "a")

    def log(msg):
        print(msg, flush=True)
        log_file.write(msg + "\n")
        log_file.flush()

    log(f"== export_heldout_models.py, torch {torch.__version__}, onnx {onnx.__version__}")
    records = []
    for spec in specs():
        for exporter, opset in spec.exports:
            if args.only and not re.search(args.only, spec.stem(opset)):
                continue
            log(f"{spec.stem(opset)} [{exporter}, opset {opset}]")
            records.append(process(spec, exporter, opset, args.out, log))
    write_summary(records, args.out)
    n_ok = sum("export_error" not in r for r in records)
    log(f"== {n_ok}/{len(records)} exports written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

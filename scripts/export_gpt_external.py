#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes a GPT-2-style decoder as ONNX (opset 18) with its weights in one
external-data file, to measure what compile time and memory depend on.

  export_gpt_external.py OUT.onnx [--layers 12] [--d-model 768]
      [--vocab 50304] [--seq 1024] [--batch 4] [--seed 0]
      [--arch gpt|llama|bert] [--ffn N]

Defaults give GPT-2-124M's shapes; `--layers 24 --d-model 2048` gives a
GPT-1.3B-sized model (5.3 GB of f32 weights). torch is not needed: the graph
is built with onnx.helper, the way torch.onnx's exports look after constant
folding (pre-LN blocks, fused QKV projection, a float causal mask of -inf
above the diagonal as an initializer, tied embedding and LM head, mean
cross-entropy loss of the logits against `labels`; GELU as nn.GELU()'s erf,
or with `--gelu tanh` as Hugging Face GPT-2's gelu_new). `--arch llama` and
`--arch bert` write the held-out architectures of the benchmark (a Llama-style
RMSNorm/RoPE/SwiGLU decoder, a BERT-style post-LN encoder; llama_blocks and
bert_blocks say how). Weights are drawn from
N(0, 0.02) with numpy's seeded default_rng and streamed to OUT.onnx.data
tensor by tensor, so the script needs memory for one tensor, not the model.
"""

import argparse
import math
import os

import numpy as np
import onnx
from onnx import TensorProto, helper


class Writer:
    """Appends tensors to the external-data file and keeps their protos."""

    def __init__(self, out, rng):
        self.location = os.path.basename(out) + ".data"
        self.file = open(os.path.join(os.path.dirname(out) or ".",
                                      self.location), "wb")
        self.rng = rng
        self.initializers = []

    def add(self, name, array):
        array = np.ascontiguousarray(array)
        offset = self.file.tell()
        # 4 KiB alignment, as onnx's own writer can do, for mmap readers.
        pad = (-offset) % 4096
        self.file.write(b"\0" * pad)
        offset += pad
        self.file.write(array.tobytes())
        tensor = TensorProto()
        tensor.name = name
        tensor.data_type = helper.np_dtype_to_tensor_dtype(array.dtype)
        tensor.dims.extend(array.shape)
        tensor.data_location = TensorProto.EXTERNAL
        for key, value in (("location", self.location), ("offset", str(offset)),
                           ("length", str(array.nbytes))):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
        self.initializers.append(tensor)
        return name

    def normal(self, name, shape):
        return self.add(name, self.rng.standard_normal(shape, dtype=np.float32) * np.float32(0.02))

    def const(self, name, value):
        return self.add(name, np.asarray(value))


def rms_norm(w, node, x, name, d):
    """RMSNorm as torch.onnx writes it at opset 18 (Pow, ReduceMean, Add,
    Sqrt, Reciprocal, Mul, Mul with the weight first)."""
    two = w.const(name + ".two", np.array(2.0, np.float32))
    axes = w.const(name + ".axes", np.array([-1], np.int64))
    eps = w.const(name + ".eps", np.array(1e-5, np.float32))
    mean = node("ReduceMean", [node("Pow", [x, two]), axes], keepdims=1)
    rsqrt = node("Reciprocal", [node("Sqrt", [node("Add", [mean, eps])])])
    return node("Mul", [w.add(name + ".weight", np.ones(d, np.float32)), node("Mul", [x, rsqrt])])


def llama_blocks(args, w, node, attention, heads, wte):
    """A Llama-style decoder: RMSNorm, no biases, rotary position embedding
    on q and k (rotate-half form, as Hugging Face's Llama: Slice, Neg,
    Concat), causal attention, a SwiGLU MLP (SiLU as x * Sigmoid(x)) of
    --ffn hidden units; the LM head untied (lm_head.weight, added by the
    caller). Returns the final norm's output."""
    d, t, hd, f = args.d_model, args.seq, args.d_model // args.heads, args.ffn
    inv_freq = 1.0 / (10000.0 ** (np.arange(0, hd, 2, dtype=np.float64) / hd))
    angles = np.outer(np.arange(t, dtype=np.float64), inv_freq)
    angles = np.concatenate([angles, angles], axis=-1)
    cos = w.add("rope.cos", np.cos(angles).astype(np.float32))
    sin = w.add("rope.sin", np.sin(angles).astype(np.float32))
    mask = w.add("causal_mask", np.triu(np.full((t, t), -np.inf, np.float32), 1))
    lo = (w.const("rope.zero", np.array([0], np.int64)), w.const("rope.half", np.array([hd // 2], np.int64)))
    hi = (lo[1], w.const("rope.full", np.array([hd], np.int64)))
    last = w.const("rope.axis", np.array([-1], np.int64))

    def rope(z):
        first = node("Slice", [z, lo[0], lo[1], last])
        second = node("Slice", [z, hi[0], hi[1], last])
        rotated = node("Concat", [node("Neg", [second]), first], axis=-1)
        return node("Add", [node("Mul", [z, cos]), node("Mul", [rotated, sin])])

    def proj(z, name, n_in, n_out):
        return node("MatMul", [z, w.normal(name + ".weight", (n_in, n_out))])

    x = node("Gather", [wte, "ids"], axis=0)
    for i in range(args.layers):
        p = f"h.{i}"
        a = rms_norm(w, node, x, p + ".ln_1", d)
        q, k, vv = (heads(proj(a, f"{p}.attn.{n}", d, d)) for n in ("q", "k", "v"))
        o = attention(rope(q), rope(k), vv, mask)
        x = node("Add", [x, proj(o, p + ".attn.c_proj", d, d)])
        m = rms_norm(w, node, x, p + ".ln_2", d)
        gate = proj(m, p + ".mlp.gate", d, f)
        silu = node("Mul", [gate, node("Sigmoid", [gate])])
        x = node("Add", [x, proj(node("Mul", [silu, proj(m, p + ".mlp.up", d, f)]), p + ".mlp.down", f, d)])
    return rms_norm(w, node, x, "ln_f", d)


def bert_blocks(args, w, node, attention, heads, gelu, layer_norm, linear, wte, wpe):
    """A BERT-style encoder: learned positions, LayerNorm after the
    embedding and after each residual add (post-LN), bidirectional
    attention (no mask), GELU MLP of 4 d, then the masked-LM head's
    transform (Linear, GELU, LayerNorm); the caller adds the tied decoder
    and its bias. Every position is predicted (the benchmark's labels are
    the next tokens: a masked-LM step's work with every position masked)."""
    d = args.d_model
    split = w.const("qkv_split", np.array([d, d, d], np.int64))
    x = layer_norm(node("Add", [node("Gather", [wte, "ids"], axis=0), wpe]), "emb_ln")
    for i in range(args.layers):
        p = f"h.{i}"
        qkv = linear(x, p + ".attn.c_attn", d, 3 * d)
        q, k, vv = node("Split", [qkv, split], [f"{p}.q", f"{p}.k", f"{p}.v"], axis=-1)
        o = attention(heads(q), heads(k), heads(vv), None)
        x = layer_norm(node("Add", [x, linear(o, p + ".attn.c_proj", d, d)]), p + ".ln_1")
        m = gelu(linear(x, p + ".mlp.c_fc", d, 4 * d))
        x = layer_norm(node("Add", [x, linear(m, p + ".mlp.c_proj", 4 * d, d)]), p + ".ln_2")
    return layer_norm(gelu(linear(x, "head.dense", d, d)), "ln_f")


def build(args):
    d, h, t, b, v = args.d_model, args.heads, args.seq, args.batch, args.vocab
    hd = d // h
    w = Writer(args.out, np.random.default_rng(args.seed))
    nodes = []

    def node(op, inputs, outputs=None, **attrs):
        name = f"n{len(nodes)}_{op}"
        outputs = outputs or [name + "_out"]
        nodes.append(helper.make_node(op, inputs, outputs, name=name, **attrs))
        return outputs[0] if len(outputs) == 1 else outputs

    def layer_norm(x, prefix):
        g = w.add(prefix + ".weight", np.ones(d, np.float32))
        beta = w.add(prefix + ".bias", np.zeros(d, np.float32))
        return node("LayerNormalization", [x, g, beta], axis=-1, epsilon=1e-5)

    def linear(x, prefix, n_in, n_out):
        y = node("MatMul", [x, w.normal(prefix + ".weight", (n_in, n_out))])
        return node("Add", [y, w.add(prefix + ".bias", np.zeros(n_out, np.float32))])

    wte = w.normal("wte.weight", (v, d))
    # The initializers in the order of the first version of this script
    # (the GPT's external-data layout, whose checksums the benchmark packs
    # record, stays as it was).
    if args.arch != "llama":
        wpe = w.normal("wpe.weight", (t, d))
    if args.arch == "gpt":
        mask = w.add("causal_mask", np.triu(np.full((t, t), -np.inf, np.float32), 1))
    heads_shape = w.const("heads_shape", np.array([b, t, h, hd], np.int64))
    model_shape = w.const("model_shape", np.array([b, t, d], np.int64))
    flat_logits = w.const("flat_logits_shape", np.array([b * t, v], np.int64))
    flat_labels = w.const("flat_labels_shape", np.array([b * t], np.int64))
    scale = w.const("attn_scale", np.array(1.0 / math.sqrt(hd), np.float32))
    if args.arch != "llama":  # the GELU's constants (Llama's MLP is SwiGLU)
        half = w.const("half", np.array(0.5, np.float32))
        one = w.const("one", np.array(1.0, np.float32))
    if args.gelu == "erf" and args.arch != "llama":
        inv_sqrt2 = w.const("inv_sqrt2", np.array(1.0 / math.sqrt(2.0), np.float32))
    if args.arch == "gpt":
        split = w.const("qkv_split", np.array([d, d, d], np.int64))
    if args.gelu == "tanh" and args.arch != "llama":
        three = w.const("three", np.array(3.0, np.float32))
        coeff = w.const("gelu_coeff", np.array(0.044715, np.float32))
        sqrt_2_over_pi = w.const("sqrt_2_over_pi", np.array(math.sqrt(2.0 / math.pi), np.float32))

    def gelu(m):
        if args.gelu == "erf":
            inner = node("Erf", [node("Mul", [m, inv_sqrt2])])
        else:
            # Hugging Face GPT-2's gelu_new as its exports write it:
            # tanh(sqrt(2/pi) * (x + 0.044715 * x^3)), the cube a Pow.
            cube = node("Pow", [m, three])
            inner = node("Tanh", [node("Mul", [node("Add", [m, node("Mul", [cube, coeff])]),
                                               sqrt_2_over_pi])])
        return node("Mul", [node("Mul", [m, half]), node("Add", [inner, one])])

    def heads(z):
        return node("Transpose", [node("Reshape", [z, heads_shape])], perm=[0, 2, 1, 3])

    def attention(q, k, vv, mask):
        kt = node("Transpose", [k], perm=[0, 1, 3, 2])
        s = node("Mul", [node("MatMul", [q, kt]), scale])
        if mask:
            s = node("Add", [s, mask])
        o = node("MatMul", [node("Softmax", [s], axis=-1), vv])
        return node("Reshape", [node("Transpose", [o], perm=[0, 2, 1, 3]), model_shape])

    if args.arch == "llama":
        x = llama_blocks(args, w, node, attention, heads, wte)
        logits = node("MatMul", [x, w.normal("lm_head.weight", (d, v))])
    elif args.arch == "bert":
        x = bert_blocks(args, w, node, attention, heads, gelu, layer_norm, linear, wte, wpe)
        logits = node("Add", [node("MatMul", [x, node("Transpose", [wte], perm=[1, 0])]),
                              w.add("head.bias", np.zeros(v, np.float32))])
    else:
        x = node("Add", [node("Gather", [wte, "ids"], axis=0), wpe])
        for i in range(args.layers):
            p = f"h.{i}"
            a = layer_norm(x, p + ".ln_1")
            qkv = linear(a, p + ".attn.c_attn", d, 3 * d)
            q, k, vv = node("Split", [qkv, split], [f"{p}.q", f"{p}.k", f"{p}.v"], axis=-1)
            o = attention(heads(q), heads(k), heads(vv), mask)
            x = node("Add", [x, linear(o, p + ".attn.c_proj", d, d)])
            m = linear(layer_norm(x, p + ".ln_2"), p + ".mlp.c_fc", d, 4 * d)
            x = node("Add", [x, linear(gelu(m), p + ".mlp.c_proj", 4 * d, d)])
        x = layer_norm(x, "ln_f")
        logits = node("MatMul", [x, node("Transpose", [wte], perm=[1, 0])])
    loss = node("SoftmaxCrossEntropyLoss",
                [node("Reshape", [logits, flat_logits]),
                 node("Reshape", ["labels", flat_labels])], ["loss"],
                reduction="mean")
    w.file.close()
    graph = helper.make_graph(
        nodes, "gpt",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [b, t]),
         helper.make_tensor_value_info("labels", TensorProto.INT64, [b, t])],
        [helper.make_tensor_value_info(loss, TensorProto.FLOAT, [])],
        w.initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)],
                              producer_name="export_gpt_external")
    # The architecture, for the PyTorch peer (bench/step/torch_gpt.py; a
    # model without it is the GPT, as every export before --arch was).
    if args.arch != "gpt":
        helper.set_model_props(model, {"arch": args.arch})
    with open(args.out, "wb") as f:
        f.write(model.SerializeToString())
    n = sum(int(np.prod(t.dims)) for t in w.initializers
            if t.data_type == TensorProto.FLOAT and len(t.dims) > 0)
    print(f"{args.out}: {args.layers} layers, d_model {d}, vocab {v}, "
          f"{n / 1e6:.1f} M float parameters, "
          f"{os.path.getsize(args.out + '.data') / 1e6:.0f} MB external data")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--d-model", type=int, default=768)
    parser.add_argument("--heads", type=int, default=0,
                        help="default: d_model / 64")
    parser.add_argument("--vocab", type=int, default=50304)
    parser.add_argument("--seq", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--gelu", choices=["erf", "tanh"], default="erf",
                        help="erf: nn.GELU(); tanh: Hugging Face GPT-2's gelu_new")
    parser.add_argument("--arch", choices=["gpt", "llama", "bert"], default="gpt",
                        help="gpt: GPT-2 (pre-LN, tied head); llama: RMSNorm, RoPE, SwiGLU, "
                             "untied head, no biases; bert: post-LN bidirectional encoder "
                             "with a masked-LM head")
    parser.add_argument("--ffn", type=int, default=0,
                        help="llama's SwiGLU width; default 8 d / 3 rounded up to 256")
    args = parser.parse_args()
    args.heads = args.heads or args.d_model // 64
    args.ffn = args.ffn or -(-8 * args.d_model // 3 // 256) * 256
    build(args)


if __name__ == "__main__":
    main()

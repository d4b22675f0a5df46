#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes a GPT-2-style decoder as ONNX (opset 18) with its weights in one
external-data file, to measure what compile time and memory depend on.

  export_gpt_external.py OUT.onnx [--layers 12] [--d-model 768]
      [--vocab 50304] [--seq 1024] [--batch 4] [--seed 0]

Defaults give GPT-2-124M's shapes; `--layers 24 --d-model 2048` gives a
GPT-1.3B-sized model (5.3 GB of f32 weights). torch is not needed: the graph
is built with onnx.helper, the way torch.onnx's exports look after constant
folding (pre-LN blocks, fused QKV projection, a float causal mask of -inf
above the diagonal as an initializer, tied embedding and LM head, mean
cross-entropy loss of the logits against `labels`; GELU as nn.GELU()'s erf,
or with `--gelu tanh` as Hugging Face GPT-2's gelu_new). Weights are drawn from
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
    wpe = w.normal("wpe.weight", (t, d))
    mask = w.add("causal_mask", np.triu(np.full((t, t), -np.inf, np.float32), 1))
    heads_shape = w.const("heads_shape", np.array([b, t, h, hd], np.int64))
    model_shape = w.const("model_shape", np.array([b, t, d], np.int64))
    flat_logits = w.const("flat_logits_shape", np.array([b * t, v], np.int64))
    flat_labels = w.const("flat_labels_shape", np.array([b * t], np.int64))
    scale = w.const("attn_scale", np.array(1.0 / math.sqrt(hd), np.float32))
    half = w.const("half", np.array(0.5, np.float32))
    one = w.const("one", np.array(1.0, np.float32))
    if args.gelu == "erf":
        inv_sqrt2 = w.const("inv_sqrt2", np.array(1.0 / math.sqrt(2.0), np.float32))
    split = w.const("qkv_split", np.array([d, d, d], np.int64))
    if args.gelu == "tanh":
        three = w.const("three", np.array(3.0, np.float32))
        coeff = w.const("gelu_coeff", np.array(0.044715, np.float32))
        sqrt_2_over_pi = w.const("sqrt_2_over_pi", np.array(math.sqrt(2.0 / math.pi), np.float32))

    x = node("Add", [node("Gather", [wte, "ids"], axis=0), wpe])
    for i in range(args.layers):
        p = f"h.{i}"
        a = layer_norm(x, p + ".ln_1")
        qkv = linear(a, p + ".attn.c_attn", d, 3 * d)
        q, k, vv = node("Split", [qkv, split], [f"{p}.q", f"{p}.k", f"{p}.v"], axis=-1)
        q, k, vv = (node("Transpose", [node("Reshape", [z, heads_shape])], perm=[0, 2, 1, 3])
                    for z in (q, k, vv))
        kt = node("Transpose", [k], perm=[0, 1, 3, 2])
        s = node("Add", [node("Mul", [node("MatMul", [q, kt]), scale]), mask])
        o = node("MatMul", [node("Softmax", [s], axis=-1), vv])
        o = node("Reshape", [node("Transpose", [o], perm=[0, 2, 1, 3]), model_shape])
        x = node("Add", [x, linear(o, p + ".attn.c_proj", d, d)])
        m = linear(layer_norm(x, p + ".ln_2"), p + ".mlp.c_fc", d, 4 * d)
        if args.gelu == "erf":
            inner = node("Erf", [node("Mul", [m, inv_sqrt2])])
        else:
            # Hugging Face GPT-2's gelu_new as its exports write it:
            # tanh(sqrt(2/pi) * (x + 0.044715 * x^3)), the cube a Pow.
            cube = node("Pow", [m, three])
            inner = node("Tanh", [node("Mul", [node("Add", [m, node("Mul", [cube, coeff])]),
                                               sqrt_2_over_pi])])
        gelu = node("Mul", [node("Mul", [m, half]), node("Add", [inner, one])])
        x = node("Add", [x, linear(gelu, p + ".mlp.c_proj", 4 * d, d)])
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
    args = parser.parse_args()
    args.heads = args.heads or args.d_model // 64
    build(args)


if __name__ == "__main__":
    main()

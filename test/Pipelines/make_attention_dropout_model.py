#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""make_attention_dropout_model.py OUT.onnx [--ratio R] [--causal] [--padding] [--gqa]

A small trainable self-attention with a training-mode Dropout on the
probabilities, as PyTorch's eager attention (attn_dropout) exports it:
q, k, v = x Wq, x Wk, x Wv split into H heads, scores = q k^T / sqrt(D)
(plus a causal -inf mask with --causal, and with --padding an additive
[B, 1, 1, T] mask input, which stays a mask operand; with --gqa k and v
have one head, repeated for the query heads as Hugging Face's repeat_kv
writes it), Softmax,
Dropout(R, training),
MatMul with v, heads merged, loss = mean(y * y). opset 18, f32, seeded."""
import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--ratio", type=float, default=0.25)
ap.add_argument("--causal", action="store_true")
ap.add_argument("--padding", action="store_true")
ap.add_argument("--gqa", action="store_true")
args = ap.parse_args()

B, T, H, D = 2, 8, 2, 8
C = H * D
HKV = 1 if args.gqa else H
rng = np.random.default_rng(11)
inits = [numpy_helper.from_array((rng.standard_normal((C, C if n == "wq" else HKV * D))
                                  / np.sqrt(C)).astype(np.float32), n)
         for n in ("wq", "wk", "wv")]
inits += [
    numpy_helper.from_array(np.array([B, T, H, D], dtype=np.int64), "heads_shape"),
    numpy_helper.from_array(np.array([B, T, HKV, D], dtype=np.int64), "kv_heads_shape"),
    numpy_helper.from_array(np.array([B, HKV, H // HKV, T, D], dtype=np.int64), "repeat_shape"),
    numpy_helper.from_array(np.array([2], dtype=np.int64), "repeat_axis"),
    numpy_helper.from_array(np.array([B, T, C], dtype=np.int64), "merged_shape"),
    numpy_helper.from_array(np.array([B, H, T, D], dtype=np.int64), "heads_shape_t"),
    numpy_helper.from_array(np.array(1.0 / np.sqrt(D), dtype=np.float32), "scale"),
    numpy_helper.from_array(np.array(args.ratio, dtype=np.float32), "ratio"),
    numpy_helper.from_array(np.array(True), "training"),
]
nodes = []
for name in ("q", "k", "v"):
    shape = "heads_shape" if name == "q" else "kv_heads_shape"
    out = name if name == "q" or not args.gqa else name + "_kv"
    nodes += [
        helper.make_node("MatMul", ["x", "w" + name], [name + "_proj"]),
        helper.make_node("Reshape", [name + "_proj", shape], [name + "_heads"]),
        helper.make_node("Transpose", [name + "_heads"], [out], perm=[0, 2, 1, 3]),
    ]
    if out != name:
        # repeat_kv: [B, 1, T, D] -> [B, 1, n, T, D] -> [B, H, T, D].
        nodes += [
            helper.make_node("Unsqueeze", [out, "repeat_axis"], [name + "_1"]),
            helper.make_node("Expand", [name + "_1", "repeat_shape"], [name + "_n"]),
            helper.make_node("Reshape", [name + "_n", "heads_shape_t"], [name]),
        ]
nodes += [
    helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
    helper.make_node("MatMul", ["q", "kt"], ["qk"]),
    helper.make_node("Mul", ["qk", "scale"], ["scores"]),
]
logits = "scores"
if args.causal:
    mask = np.triu(np.full((T, T), -np.inf, dtype=np.float32), k=1)
    inits.append(numpy_helper.from_array(mask, "causal_mask"))
    nodes.append(helper.make_node("Add", ["scores", "causal_mask"], ["masked"]))
    logits = "masked"
inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, T, C])]
if args.padding:
    inputs.append(helper.make_tensor_value_info("attention_mask", TensorProto.FLOAT, [B, 1, 1, T]))
    nodes.append(helper.make_node("Add", [logits, "attention_mask"], ["padded"]))
    logits = "padded"
nodes += [
    helper.make_node("Softmax", [logits], ["p"], axis=-1),
    helper.make_node("Dropout", ["p", "ratio", "training"], ["pd"]),
    helper.make_node("MatMul", ["pd", "v"], ["o"]),
    helper.make_node("Transpose", ["o"], ["o_t"], perm=[0, 2, 1, 3]),
    helper.make_node("Reshape", ["o_t", "merged_shape"], ["y"]),
    helper.make_node("Mul", ["y", "y"], ["y2"]),
    helper.make_node("ReduceMean", ["y2"], ["loss"], keepdims=0),
]
graph = helper.make_graph(
    nodes, "attention_dropout", inputs,
    [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
onnx.checker.check_model(model)
onnx.save(model, args.out)
print(f"wrote {args.out}: B={B} T={T} H={H} D={D}, dropout {args.ratio}"
      f"{', causal' if args.causal else ''}{', padding mask' if args.padding else ''}"
      f"{f', {HKV} kv head(s)' if args.gqa else ''}")

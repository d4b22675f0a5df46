#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Ops on tensors with a zero-sized dim (ONNX allows them in graph inputs):
each model runs through txopt and txopt-run and must either match
onnxruntime (same shape, same values) or be refused with one error line
and exit 1; a crash, another exit status or a different answer fails.
check_zero_dims.py TXOPT TXOPT_RUN WORKDIR. One line per case."""
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

txopt, txopt_run, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
F, I = TensorProto.FLOAT, TensorProto.INT64


def const(name, values):
    return helper.make_node("Constant", [], [name], value=helper.make_tensor(
        name + "_v", I, [len(values)], values))


# (name, nodes, inputs [(name, type, shape)], outputs [(name, type)])
cases = [
    ("add", [helper.make_node("Add", ["x", "y"], ["z"])],
     [("x", F, [2, 0]), ("y", F, [0])], [("z", F)]),
    ("relu", [helper.make_node("Relu", ["x"], ["z"])], [("x", F, [0, 3])], [("z", F)]),
    ("matmul_inner_zero", [helper.make_node("MatMul", ["x", "y"], ["z"])],
     [("x", F, [2, 0]), ("y", F, [0, 3])], [("z", F)]),
    ("matmul_outer_zero", [helper.make_node("MatMul", ["x", "y"], ["z"])],
     [("x", F, [0, 4]), ("y", F, [4, 3])], [("z", F)]),
    ("reduce_sum_zero_axis", [const("a", [1]), helper.make_node("ReduceSum", ["x", "a"], ["z"], keepdims=0)],
     [("x", F, [2, 0, 3])], [("z", F)]),
    ("reduce_mean_other_axis", [const("a", [2]), helper.make_node("ReduceMean", ["x", "a"], ["z"])],
     [("x", F, [2, 0, 3])], [("z", F)]),
    ("reduce_max_zero_axis", [const("a", [1]), helper.make_node("ReduceMax", ["x", "a"], ["z"])],
     [("x", F, [2, 0])], [("z", F)]),
    ("softmax", [helper.make_node("Softmax", ["x"], ["z"])], [("x", F, [0, 4])], [("z", F)]),
    ("softmax_zero_axis", [helper.make_node("Softmax", ["x"], ["z"], axis=0)], [("x", F, [0, 4])], [("z", F)]),
    ("layer_norm", [helper.make_node("LayerNormalization", ["x", "g"], ["z"])],
     [("x", F, [0, 4]), ("g", F, [4])], [("z", F)]),
    ("concat", [helper.make_node("Concat", ["x", "y"], ["z"], axis=0)],
     [("x", F, [0, 3]), ("y", F, [2, 3])], [("z", F)]),
    ("transpose", [helper.make_node("Transpose", ["x"], ["z"], perm=[1, 0])], [("x", F, [0, 3])], [("z", F)]),
    ("reshape", [const("s", [3, 0]), helper.make_node("Reshape", ["x", "s"], ["z"])],
     [("x", F, [0, 3])], [("z", F)]),
    ("gather_empty_indices", [helper.make_node("Gather", ["x", "i"], ["z"])],
     [("x", F, [3, 2]), ("i", I, [0])], [("z", F)]),
    ("cumsum", [const("a", [1]), helper.make_node("CumSum", ["x", "a"], ["z"])],
     [("x", F, [2, 0])], [("z", F)]),
    ("slice", [const("s", [0]), const("e", [1]), const("a", [1]),
               helper.make_node("Slice", ["x", "s", "e", "a"], ["z"])],
     [("x", F, [0, 3])], [("z", F)]),
    ("where", [helper.make_node("Less", ["x", "y"], ["c"]), helper.make_node("Where", ["c", "x", "y"], ["z"])],
     [("x", F, [0, 2]), ("y", F, [0, 2])], [("z", F)]),
    ("split", [const("p", [0, 2]), helper.make_node("Split", ["x", "p"], ["z", "w"], axis=1)],
     [("x", F, [3, 2])], [("z", F), ("w", F)]),
    ("expand", [const("s", [0, 3]), helper.make_node("Expand", ["x", "s"], ["z"])],
     [("x", F, [1, 3])], [("z", F)]),
    ("pad", [const("p", [1, 0, 1, 0]), helper.make_node("Pad", ["x", "p"], ["z"])],
     [("x", F, [0, 2])], [("z", F)]),
    ("cross_entropy_mean", [helper.make_node("SoftmaxCrossEntropyLoss", ["x", "l"], ["z"])],
     [("x", F, [0, 4]), ("l", I, [0])], [("z", F)]),
    ("trilu", [helper.make_node("Trilu", ["x"], ["z"])], [("x", F, [0, 3])], [("z", F)]),
]

rng = np.random.default_rng(0)
failed = 0
for name, nodes, inputs, outputs in cases:
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, None) for n, t in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    path = os.path.join(work, name + ".onnx")
    onnx.save(model, path)
    feeds, args = {}, []
    for n, t, s in inputs:
        v = rng.random(s).astype(np.float32) if t == F else np.zeros(s, np.int64)
        feeds[n] = v
        npy = os.path.join(work, "%s_%s.npy" % (name, n))
        np.save(npy, v)
        args += ["--input", "%s=%s" % (n, npy)]
    try:
        want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)
    except Exception as e:
        want = None  # onnxruntime refuses it too: txopt must not crash
    mlir = os.path.join(work, name + ".mlir")
    out = os.path.join(work, name)
    p = subprocess.run([txopt, path, "-o", mlir], capture_output=True, text=True)
    if p.returncode == 0:
        p = subprocess.run([txopt_run, mlir, "--output-dir", out] + args,
                           capture_output=True, text=True)
    lines = p.stderr.strip().splitlines()
    if p.returncode != 0:
        if p.returncode == 1 and len(lines) == 1 and ": error: " in lines[0]:
            print("%s: refused (%s)" % (name, lines[0]))
        else:
            print("%s: FAIL exit %d: %s" % (name, p.returncode, " | ".join(lines[-3:])))
            failed += 1
        continue
    if want is None:
        print("%s: ok (onnxruntime refuses it)" % name)
        continue
    bad = []
    for (n, _), w in zip(outputs, want):
        g = np.load(os.path.join(out, n + ".npy"))
        if g.shape != w.shape or not np.allclose(g, w, rtol=1e-5, atol=1e-6, equal_nan=True):
            bad.append("%s: expected %s %s, got %s %s" % (n, w.shape, w.ravel()[:4], g.shape, g.ravel()[:4]))
    if bad:
        print("%s: FAIL %s" % (name, "; ".join(bad)))
        failed += 1
    else:
        print("%s: ok" % name)
print("%d cases, %d failed" % (len(cases), failed))
sys.exit(1 if failed else 0)

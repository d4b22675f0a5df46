#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Models at opsets 7 to 12 in the older spellings the importer reads
(attribute axes/splits, Dropout's ratio attribute, coerced-2D Softmax on
its last axis, Gemm-7's required C, Max-6/8, Concat-4, Reshape-5, Cast-6,
Pow-7, Flatten-9, ...): txopt-run must match onnxruntime (relative 1e-5,
integers exactly). check_old_opsets.py TXOPT TXOPT_RUN WORKDIR. One line
per case."""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper
from run_case import compile_and_run, save_inputs, save_model

txopt, txopt_run, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
F, I = TensorProto.FLOAT, TensorProto.INT64
node = helper.make_node

# (name, opset, nodes, inputs [(name, type, shape)], outputs [(name, type, shape)])
cases = [
    ("add_bcast_op7", 7, [node("Add", ["a", "b"], ["y"])],
     [("a", F, [2, 3]), ("b", F, [3])], [("y", F, [2, 3])]),
    ("gemm_op7", 7, [node("Gemm", ["a", "b", "c"], ["y"], alpha=0.5, beta=2.0, transB=1)],
     [("a", F, [2, 3]), ("b", F, [4, 3]), ("c", F, [4])], [("y", F, [2, 4])]),
    ("max_op7", 7, [node("Max", ["a", "b", "c"], ["y"])],
     [("a", F, [2, 3]), ("b", F, [2, 3]), ("c", F, [2, 3])], [("y", F, [2, 3])]),
    ("min_bcast_op8", 8, [node("Min", ["a", "b"], ["y"])],
     [("a", F, [2, 3]), ("b", F, [1, 3])], [("y", F, [2, 3])]),
    ("concat_op7", 7, [node("Concat", ["a", "b"], ["y"], axis=1)],
     [("a", F, [2, 3]), ("b", F, [2, 1])], [("y", F, [2, 4])]),
    ("reshape_op7", 7, [node("Constant", [], ["s"], value=helper.make_tensor("s", I, [2], [3, -1])),
                        node("Reshape", ["a", "s"], ["y"])],
     [("a", F, [2, 3])], [("y", F, [3, 2])]),
    ("split_attr_op7", 7, [node("Split", ["a"], ["y", "z"], axis=1, split=[1, 2])],
     [("a", F, [2, 3])], [("y", F, [2, 1]), ("z", F, [2, 2])]),
    ("split_even_op11", 11, [node("Split", ["a"], ["y", "z"], axis=0)],
     [("a", F, [4, 3])], [("y", F, [2, 3]), ("z", F, [2, 3])]),
    ("squeeze_attr_op11", 11, [node("Squeeze", ["a"], ["y"], axes=[-2])],
     [("a", F, [2, 1, 3])], [("y", F, [2, 3])]),
    ("unsqueeze_attr_op11", 11, [node("Unsqueeze", ["a"], ["y"], axes=[0, 3])],
     [("a", F, [2, 3])], [("y", F, [1, 2, 3, 1])]),
    ("reduce_sum_attr_op11", 11, [node("ReduceSum", ["a"], ["y"], axes=[1], keepdims=0)],
     [("a", F, [2, 3, 4])], [("y", F, [2, 4])]),
    ("reduce_mean_attr_op12", 12, [node("ReduceMean", ["a"], ["y"], axes=[-1])],
     [("a", F, [2, 3])], [("y", F, [2, 1])]),
    ("reduce_max_attr_op12", 12, [node("ReduceMax", ["a"], ["y"], axes=[0, 1], keepdims=0)],
     [("a", F, [2, 3])], [("y", F, [])]),
    ("softmax_2d_op12", 12, [node("Softmax", ["a"], ["y"])],
     [("a", F, [2, 5])], [("y", F, [2, 5])]),
    ("softmax_last_axis_op11", 11, [node("Softmax", ["a"], ["y"], axis=2)],
     [("a", F, [2, 3, 4])], [("y", F, [2, 3, 4])]),
    ("dropout_ratio_op10", 10, [node("Dropout", ["a"], ["y"], ratio=0.3)],
     [("a", F, [2, 3])], [("y", F, [2, 3])]),
    ("cast_op7", 7, [node("Cast", ["a"], ["y"], to=I)],
     [("a", F, [2, 3])], [("y", I, [2, 3])]),
    ("pow_op7", 7, [node("Pow", ["a", "b"], ["y"])],
     [("a", F, [2, 3]), ("b", F, [3])], [("y", F, [2, 3])]),
    ("flatten_op9", 9, [node("Flatten", ["a"], ["y"], axis=2)],
     [("a", F, [2, 3, 4])], [("y", F, [6, 4])]),
    ("gather_op7", 7, [node("Constant", [], ["i"], value=helper.make_tensor("i", I, [2], [2, 0])),
                       node("Gather", ["a", "i"], ["y"], axis=1)],
     [("a", F, [2, 3])], [("y", F, [2, 2])]),
    ("transpose_matmul_op9", 9, [node("Transpose", ["a"], ["t"], perm=[1, 0]),
                                 node("MatMul", ["t", "b"], ["y"])],
     [("a", F, [3, 2]), ("b", F, [3, 4])], [("y", F, [2, 4])]),
    ("where_equal_op11", 11, [node("Equal", ["a", "b"], ["c"]), node("Where", ["c", "a", "b"], ["y"])],
     [("a", I, [2, 3]), ("b", I, [2, 3])], [("y", I, [2, 3])]),
    ("pad_op11", 11, [node("Constant", [], ["p"], value=helper.make_tensor("p", I, [4], [1, 0, 0, 2])),
                      node("Constant", [], ["v"], value=helper.make_tensor("v", F, [], [1.5])),
                      node("Pad", ["a", "p", "v"], ["y"])],
     [("a", F, [2, 3])], [("y", F, [3, 5])]),
    ("slice_op10", 10, [node("Constant", [], ["s"], value=helper.make_tensor("s", I, [1], [1])),
                        node("Constant", [], ["e"], value=helper.make_tensor("e", I, [1], [3])),
                        node("Constant", [], ["x"], value=helper.make_tensor("x", I, [1], [1])),
                        node("Slice", ["a", "s", "e", "x"], ["y"])],
     [("a", F, [2, 4])], [("y", F, [2, 2])]),
    ("sigmoid_tanh_op7", 7, [node("Sigmoid", ["a"], ["t"]), node("Tanh", ["t"], ["y"])],
     [("a", F, [2, 3])], [("y", F, [2, 3])]),
]

rng = np.random.default_rng(0)
failed = 0
for name, opset, nodes, inputs, outputs in cases:
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7 if opset >= 12 else 5 if opset >= 10 else 3
    onnx.checker.check_model(model)
    path = save_model(work, name, model)
    feeds = {}
    for n, t, s in inputs:
        feeds[n] = (rng.random(s) + 0.5).astype(np.float32) if t == F else rng.integers(0, 3, s)
    args = save_inputs(work, name, list(feeds.items()))
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)
    out = compile_and_run(txopt, txopt_run, work, name, path, args)
    if out is None:
        failed += 1
        continue
    bad = []
    for (n, t, _), w in zip(outputs, want):
        g = np.load(os.path.join(out, n + ".npy"))
        ok = g.shape == w.shape and (np.array_equal(g, w) if t == I else
                                     np.allclose(g, w, rtol=1e-5, atol=1e-6))
        if not ok:
            bad.append("%s: expected %s, got %s" % (n, w.ravel()[:6], g.ravel()[:6]))
    print("%s: %s" % (name, "FAIL " + "; ".join(bad) if bad else "ok"))
    failed += bool(bad)
print("%d cases, %d failed" % (len(cases), failed))
sys.exit(1 if failed else 0)

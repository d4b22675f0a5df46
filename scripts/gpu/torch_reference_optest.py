#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Single-op checks of torch_reference.py's ONNX interpreter against onnx's
ReferenceEvaluator (the ops the real exports do not exercise, and the
opset-dependent spellings). Prints one line per case and "bad N".
    torch_reference_optest.py"""
import os, sys
import numpy as np, onnx, torch
from onnx import helper as h, TensorProto as T, numpy_helper
from onnx.reference import ReferenceEvaluator
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_reference as tr
rng = np.random.default_rng(0)
X = rng.standard_normal((2, 3, 4)).astype(np.float32)
def i64(*v): return np.array(v, dtype=np.int64)
cases = [
 ("Erf", [X], {}), ("Exp", [X], {}), ("Abs", [X], {}), ("Relu", [X], {}), ("Sin", [X], {}), ("Cos", [X], {}),
 ("Log", [np.abs(X) + 0.1], {}), ("Max", [X, X[:1] * 0.5], {}), ("Min", [X, X * 0.5, X[..., :1]], {}),
 ("Mod", [i64(7, -7, 5), i64(3, 3, -2)], {}), ("Mod", [X, np.float32(0.7) + 0 * X], {"fmod": 1}),
 ("Less", [X, X * 0 + 0.1], {}), ("Greater", [X, X * 0], {}),
 ("LogSoftmax", [X], {"axis": 1}), ("Softmax", [X], {"axis": -1}),
 ("ReduceSum", [X, i64(1)], {"keepdims": 0}), ("ReduceSum", [X, i64()], {}),
 ("ReduceMax", [X, i64(-1)], {}), ("ReduceMean", [X, i64(0, 2)], {"keepdims": 0}),
 ("CumSum", [X, np.array(1, np.int64)], {}), ("CumSum", [X, np.array(2, np.int64)], {"exclusive": 1, "reverse": 1}),
 ("ConstantOfShape", [i64(2, 3)], {"value": numpy_helper.from_array(np.array([1.5], np.float32))}),
 ("Range", [np.array(1, np.int64), np.array(10, np.int64), np.array(3, np.int64)], {}),
 ("Range", [np.array(0.5, np.float32), np.array(2, np.float32), np.array(0.25, np.float32)], {}),
 ("Squeeze", [X[:, :1], i64(1)], {}), ("Unsqueeze", [X, i64(0, -1)], {}),
 ("Flatten", [X], {"axis": 2}), ("Flatten", [X], {"axis": 0}),
 ("Slice", [X, i64(-1), i64(-100), i64(2), i64(-2)], {}), ("Slice", [X, i64(1, 0), i64(100, 2), i64(2, 1)], {}),
 ("Split", [X[:, :, :3].copy()], {"axis": 2, "num_outputs": 2}), ("Split", [X, i64(1, 3)], {"axis": 2}),
 ("GatherElements", [X, np.abs(rng.integers(-3, 3, (2, 3, 4)))], {"axis": 2}),
 ("Gather", [X, i64(-1, 0)], {"axis": 1}),
 ("Pad", [X, i64(0, 1, 2, 0, 0, 1)], {"mode": "edge"}), ("Pad", [X, i64(0, 1, 2, 0, 0, 1)], {"mode": "reflect"}), ("Pad", [X, i64(0, 1, 2, 0, 0, 1)], {"mode": "wrap"}),
 ("Pad", [X, i64(1, 2), np.array(9., np.float32), i64(-1)], {}),
 ("Trilu", [X, np.array(1, np.int64)], {"upper": 0}), ("Expand", [X[:, :1], i64(3, 1, 1, 1)], {}),
 ("Gemm", [X[0], X[1], X[0, 0, :3]], {"transB": 1, "alpha": 0.5, "beta": 2.0}),
 ("Where", [X > 0, X, X * 2], {}), ("Cast", [X], {"to": T.INT64}),
 ("LayerNormalization", [X, X[0, 0], X[1, 0]], {"axis": -1, "epsilon": 1e-3}),
 ("RMSNormalization", [X, X[0, 0]], {"axis": -1}),
]
def tt(a): return h.np_dtype_to_tensor_dtype(np.asarray(a).dtype)
bad = 0
for op, ins, attrs in cases:
    names = ["i%d" % k for k in range(len(ins))]
    sched = onnx.defs.get_schema(op, 23 if op == "RMSNormalization" else 18)
    nout = 2 if op == "Split" else 1
    outs = ["o%d" % k for k in range(nout)]
    node = h.make_node(op, names, outs, **attrs)
    g = h.make_graph([node], "g", [h.make_tensor_value_info(n, tt(a), list(np.shape(a))) for n, a in zip(names, ins)],
                     [h.make_tensor_value_info(o, T.UNDEFINED, None) for o in outs])
    ops = 23 if op == "RMSNormalization" else 18
    m = h.make_model(g, opset_imports=[h.make_opsetid("", ops)])
    try:
        ref = ReferenceEvaluator(m).run(None, dict(zip(names, ins)))
    except Exception as e:
        print("skip", op, "(onnx reference:", str(e)[:80], ")"); continue
    it = tr.Interp(m, torch.device("cpu"), torch.float32)
    env = {n: torch.from_numpy(np.asarray(a).copy()) for n, a in zip(names, ins)}
    env = it.run(env)
    for o, r in zip(outs, ref):
        got = env[o].numpy()
        ok = got.shape == r.shape and np.allclose(got, r, rtol=1e-5, atol=1e-6)
        if not ok: bad += 1
        print("ok " if ok else "BAD", op, attrs.get("mode", ""), got.shape, r.shape)
print("bad", bad)
sys.exit(1 if bad else 0)

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""int4/uint4/int2/uint2 graph inputs (their values given as int8 .npy):
casts to wider types, wrapping Add, equality, and the sign-dependent ops
(Less, Max) on unsigned values past the signed range, against numpy on the
values (results wrapped to the width as ONNX's integer arithmetic does).
check_subbyte_ints.py TXOPT TXOPT_RUN WORKDIR. One line per case."""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

txopt, txopt_run, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)


def wrap(v, bits, signed):
    v = np.asarray(v, np.int64) % (1 << bits)
    return np.where(v >= (1 << (bits - 1)), v - (1 << bits), v) if signed else v


types = [("int4", TensorProto.INT4, 4, True), ("uint4", TensorProto.UINT4, 4, False),
         ("int2", TensorProto.INT2, 2, True), ("uint2", TensorProto.UINT2, 2, False)]
failed = total = 0
for tname, ttype, bits, signed in types:
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    a = np.arange(lo, hi + 1, dtype=np.int64)
    b = a[::-1].copy()
    cases = [
        ("cast_float", [helper.make_node("Cast", ["a"], ["y"], to=TensorProto.FLOAT)],
         TensorProto.FLOAT, a.astype(np.float32)),
        ("cast_int8", [helper.make_node("Cast", ["a"], ["y"], to=TensorProto.INT8)],
         TensorProto.INT8, a.astype(np.int8)),
        ("add", [helper.make_node("Add", ["a", "b"], ["s"]),
                 helper.make_node("Cast", ["s"], ["y"], to=TensorProto.INT64)],
         TensorProto.INT64, wrap(a + b, bits, signed)),
        ("equal", [helper.make_node("Equal", ["a", "b"], ["y"])], TensorProto.BOOL, a == b),
        ("less", [helper.make_node("Less", ["a", "b"], ["y"])], TensorProto.BOOL, a < b),
        ("max", [helper.make_node("Max", ["a", "b"], ["m"]),
                 helper.make_node("Cast", ["m"], ["y"], to=TensorProto.INT64)],
         TensorProto.INT64, np.maximum(a, b)),
    ]
    for cname, nodes, out_type, want in cases:
        name = "%s_%s" % (cname, tname)
        total += 1
        inputs = [helper.make_tensor_value_info("a", ttype, [len(a)]),
                  helper.make_tensor_value_info("b", ttype, [len(a)])]
        used = {i for n in nodes for i in n.input}
        graph = helper.make_graph(nodes, name, [v for v in inputs if v.name in used],
                                  [helper.make_tensor_value_info("y", out_type, [len(a)])])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 25)])
        path = os.path.join(work, name + ".onnx")
        onnx.save(model, path)
        args = []
        for n, v in (("a", a), ("b", b)):
            if n in used:
                npy = os.path.join(work, "%s_%s.npy" % (name, n))
                np.save(npy, v.astype(np.int8))
                args += ["--input", "%s=%s" % (n, npy)]
        mlir, out = os.path.join(work, name + ".mlir"), os.path.join(work, name)
        p = subprocess.run([txopt, path, "-o", mlir, "-q"], capture_output=True, text=True)
        if p.returncode == 0:
            p = subprocess.run([txopt_run, mlir, "--output-dir", out] + args,
                               capture_output=True, text=True)
        if p.returncode != 0:
            print("%s: FAIL %s" % (name, p.stderr.strip()))
            failed += 1
            continue
        got = np.load(os.path.join(out, "y.npy"))
        if np.array_equal(got.astype(np.asarray(want).dtype), want):
            print("%s: ok" % name)
        else:
            print("%s: FAIL expected %s, got %s" % (name, want, got))
            failed += 1
print("%d cases, %d failed" % (total, failed))
sys.exit(1 if failed else 0)

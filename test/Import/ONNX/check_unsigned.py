#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs ONNX ops whose result depends on signedness on unsigned integers
past the signed range (uint8 200, uint16 65535, uint32 4e9, uint64 2^63 +
k) through txopt
and txopt-run, and compares with numpy, whose unsigned semantics are
ONNX's (Div truncates, Mod with fmod = 0 takes the divisor's sign, Cast
zero-extends): check_unsigned.py TXOPT TXOPT_RUN WORKDIR. Prints one line
per case, `NAME: ok` or `NAME: FAIL ...`."""
import os
import sys

import numpy as np
from onnx import TensorProto, helper
from run_case import compile_and_run, save_inputs, save_model

txopt, txopt_run, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)

U = {np.uint8: TensorProto.UINT8, np.uint16: TensorProto.UINT16,
     np.uint32: TensorProto.UINT32, np.float32: TensorProto.FLOAT,
     np.int32: TensorProto.INT32, np.uint64: TensorProto.UINT64,
     np.float64: TensorProto.DOUBLE, np.bool_: TensorProto.BOOL,
     np.int64: TensorProto.INT64, np.float16: TensorProto.FLOAT16}


def values(dtype):
    top = np.iinfo(dtype).max
    return (np.array([1, 7, 100, top // 2 + 1, top - 1, top], dtype=dtype),
            np.array([3, 2, 9, 5, top, 1], dtype=dtype))


cases = []
for dt in (np.uint8, np.uint16, np.uint32):
    a, b = values(dt)
    n = dt.__name__
    cases += [
        ("div_" + n, "Div", {}, [a, b], a // b),
        ("mod_" + n, "Mod", {}, [a, b], a % b),
        ("max_" + n, "Max", {}, [a, b], np.maximum(a, b)),
        ("min_" + n, "Min", {}, [a, b], np.minimum(a, b)),
        ("less_" + n, "Less", {}, [a, b], a < b),
        ("greater_equal_" + n, "GreaterOrEqual", {}, [a, b], a >= b),
        ("cast_float_" + n, "Cast", {"to": TensorProto.FLOAT}, [a], a.astype(np.float32)),
        ("cast_int64_" + n, "Cast", {"to": TensorProto.INT64}, [a], a.astype(np.int64)),
        ("reduce_max_" + n, "ReduceMax", {"keepdims": 0}, [a], np.array(a.max())),
        # Bits-only ops need no widening: wrapping Add, Equal.
        ("add_" + n, "Add", {}, [a, b], a + b),
        ("equal_" + n, "Equal", {}, [a, b], a == b),
    ]
a, b = values(np.uint64)
cases += [
    ("less_uint64", "Less", {}, [a, b], a < b),
    ("greater_uint64", "Greater", {}, [a, b], a > b),
    ("less_equal_uint64", "LessOrEqual", {}, [a, b], a <= b),
    ("greater_equal_uint64", "GreaterOrEqual", {}, [a, b], a >= b),
    ("max_uint64", "Max", {}, [a, b], np.maximum(a, b)),
    ("min_uint64", "Min", {}, [a, b], np.minimum(a, b)),
    ("max3_uint64", "Max", {}, [a, b, b[::-1].copy()], np.maximum(np.maximum(a, b), b[::-1])),
]
f = np.array([1e19, 2.0 ** 63, 5.0, 2.0 ** 63 - 1024, 0.0, 1.8e19])
cases.append(("cast_uint64_from_double", "Cast", {"to": TensorProto.UINT64}, [f], f.astype(np.uint64)))
a8, _ = values(np.uint8)
cases.append(("cast_uint16_uint8", "Cast", {"to": TensorProto.UINT16}, [a8], a8.astype(np.uint16)))
base = np.array([2.0, 1.0, 0.5, 1.0, 1.0, 1.0], dtype=np.float32)
e = np.array([3, 200, 2, 255, 0, 1], dtype=np.uint8)
cases.append(("pow_float_uint8", "Pow", {}, [base, e], np.power(base, e.astype(np.float32))))

# uint64 Div and Mod (no wider type: computed on a halved dividend) over
# every pair of dividends and non-zero divisors around the signed limit.
edges = np.array([0, 1, 2, 3, 7, 2 ** 32 + 5, 2 ** 62, 2 ** 63 - 1, 2 ** 63,
                  2 ** 63 + 1, 3 * 2 ** 62 + 11, 2 ** 64 - 2, 2 ** 64 - 1], dtype=np.uint64)
rng = np.random.default_rng(16)
edges = np.concatenate([edges, rng.integers(0, 2 ** 64 - 1, size=8, dtype=np.uint64, endpoint=True)])
da = np.repeat(edges, len(edges) - 1)
db = np.tile(edges[edges != 0], len(edges))
cases += [
    ("div_uint64", "Div", {}, [da, db], da // db),
    ("mod_uint64", "Mod", {}, [da, db], da % db),
    ("fmod_uint64", "Mod", {"fmod": 1}, [da, db], da % db),
]
# Pow with a uint64 exponent (float bases only in ONNX): exponents from
# 2^63 up included; numpy computes it in float64, as ONNX's reference does.
bases = np.array([-2, -1, -0.5, 0, 0.5, 1, 2, 1.0001, np.nan, np.inf, -np.inf])
exps = np.array([0, 1, 2, 3, 2 ** 53 + 1, 2 ** 63 - 1, 2 ** 63, 2 ** 63 + 1,
                 2 ** 64 - 1], dtype=np.uint64)
pb = np.repeat(bases, len(exps))
pe = np.tile(exps, len(bases))
for ft in (np.float32, np.float16, np.float64):
    with np.errstate(all="ignore"):
        want = np.power(pb.astype(ft).astype(np.float64), pe.astype(np.float64)).astype(ft)
    cases.append(("pow_%s_uint64" % ft.__name__, "Pow", {}, [pb.astype(ft), pe], want))

failed = 0
for name, op, attrs, inputs, want in cases:
    names = ["x%d" % i for i in range(len(inputs))]
    node = helper.make_node(op, names, ["y"], **attrs)
    graph = helper.make_graph(
        [node], name,
        [helper.make_tensor_value_info(nm, U[v.dtype.type], v.shape) for nm, v in zip(names, inputs)],
        [helper.make_tensor_value_info("y", U[want.dtype.type], want.shape)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    path = save_model(work, name, model)
    out = compile_and_run(txopt, txopt_run, work, name, path,
                          save_inputs(work, name, list(zip(names, inputs))))
    if out is None:
        failed += 1
        continue
    got = np.load(os.path.join(out, "y.npy"))
    if got.shape == want.shape and np.array_equal(got.astype(want.dtype), want,
                                                  equal_nan=want.dtype.kind == "f"):
        print("%s: ok" % name)
    else:
        print("%s: FAIL expected %s, got %s" % (name, want, got))
        failed += 1
print("%d cases, %d failed" % (len(cases), failed))
sys.exit(1 if failed else 0)

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""float4e2m1 and float8e8m0 (OCP MX element and scale types, opsets 23
and 24) through txopt and txopt-run: Cast from float, float16 and double
to each and back to float, on values that cover rounding ties, saturation,
the infinities, NaN, zero and subnormals. The expected values are ONNX's
rules written out here, checked against what onnx's reference evaluator
gives where that is defined (it converts float4e2m1 with ml_dtypes and
float8e8m0 with onnx.numpy_helper.to_float8e8m0):
  float4e2m1: round to nearest even among 0, 0.5, 1, 1.5, 2, 3, 4, 6,
              saturating to +-6; NaN (undefined in ONNX) -> -0, as the
              reference gives;
  float8e8m0: round_mode 'up', saturate: the next power of two at or above
              |x|, clamped to [2^-127, 2^127]; NaN stays NaN.
check_mx_types.py TXOPT TXOPT_RUN WORKDIR. One line per case."""
import os
import sys

import numpy as np
from onnx import TensorProto, numpy_helper
from run_case import cast_there_and_back, compile_and_run, save_inputs, save_model

txopt, txopt_run, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
FP4 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


def fp4(x):
    if np.isnan(x):
        return -0.0
    a = min(abs(x), 6.0)
    # Nearest grid value; on a tie the one whose code is even.
    best = min(range(len(FP4)), key=lambda i: (abs(FP4[i] - a), i % 2))
    return float(np.copysign(FP4[best], x))


def e8m0(x):
    if np.isnan(x):
        return np.nan
    a = abs(x)
    if a <= 2.0 ** -127:
        return 2.0 ** -127
    if a >= 2.0 ** 127:
        return 2.0 ** 127
    m, e = np.frexp(a)
    return a if m == 0.5 else float(np.ldexp(1.0, int(e)))


x4 = np.array([0, -0.0, 0.2, 0.25, 0.26, 0.75, 1.25, 1.75, 2.5, 3.5, 5, 5.5, 6,
               6.5, 7, 1e6, np.inf, -np.inf, -0.75, -2.5, -5, -100, np.nan, 1e-8])
x8 = np.array([0, 1e-45, 2.0 ** -127, 2.0 ** -126 * 0.75, 2.0 ** -126, 0.124,
               0.125, 0.126, 1, 1.1, 1.5, 2, 3, 1000, 65504, 2.0 ** 127,
               3e38, np.inf, np.nan, -0.3, -4])
import ml_dtypes  # onnx's own dependency (its float8/int4 numpy types)

failed = total = 0
for tname, ttype, xs, rule in (("float4e2m1", 23, x4, fp4), ("float8e8m0", 24, x8, e8m0)):
    for fname, ftype, np_float in (("float", TensorProto.FLOAT, np.float32),
                                   ("float16", TensorProto.FLOAT16, np.float16),
                                   ("double", TensorProto.DOUBLE, np.float64)):
        name = "cast_%s_to_%s" % (fname, tname)
        total += 1
        with np.errstate(over="ignore"):
            xf = xs.astype(np_float)
        want = np.array([rule(float(v)) for v in xf.astype(np.float64)], np.float32)
        # The reference evaluator, on the values where ONNX defines it.
        with np.errstate(all="ignore"):
            if tname == "float4e2m1":
                ref = xf.astype(np.float32).astype(ml_dtypes.float4_e2m1fn).astype(np.float32)
                assert np.array_equal(ref, want, equal_nan=True), (name, ref, want)
            if tname == "float8e8m0" and np_float is not np.float64:
                f = xf.astype(np.float32)
                defined = np.isfinite(f) & (f >= 2.0 ** -126)  # normal, positive
                ref = numpy_helper.to_float8e8m0(f).astype(np.float32)
                assert np.array_equal(ref[defined], want[defined]), (name, ref, want)
        model = cast_there_and_back(name, ftype, ttype, TensorProto.FLOAT, len(xs), 24)
        path = save_model(work, name, model)
        out = compile_and_run(txopt, txopt_run, work, name, path,
                              save_inputs(work, name, [("x", xf)]))
        if out is None:
            failed += 1
            continue
        got = np.load(os.path.join(out, "y.npy"))
        # Exact, signs of zero included.
        if np.array_equal(got, want, equal_nan=True) and \
                np.array_equal(np.signbit(got), np.signbit(want)):
            print("%s: ok" % name)
        else:
            print("%s: FAIL expected %s, got %s" % (name, want, got))
            failed += 1
print("%d cases, %d failed" % (total, failed))
sys.exit(1 if failed else 0)

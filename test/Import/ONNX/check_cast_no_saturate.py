#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Cast to E4M3FN, E4M3FNUZ, E5M2FNUZ and E5M2 with saturate = 0, from f32
and f16, on values around the overflow threshold (the largest value, the
midpoint to the next step and its tie, beyond, infinities, NaN): txopt-run
must match onnx's reference evaluator exactly (NaNs at the same places).
E5M2 also with saturate = 1, whose infinities become +-57344 although E5M2
values may hold infinities (the saturate = 0 ones).
check_cast_no_saturate.py TXOPT TXOPT_RUN WORKDIR. One line per case."""
import os
import sys

import numpy as np
from onnx import TensorProto
from onnx.reference import ReferenceEvaluator
from run_case import cast_there_and_back, compile_and_run, save_inputs, save_model

txopt, txopt_run, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
e5m2 = [57344, 61439, 61440, 61441, -61440, -61441, np.inf, -np.inf, np.nan, 1e6, 0.3]
values = [
    (TensorProto.FLOAT8E4M3FN, 0, [448, 449, 463.99, 464, 464.01, 480, -464, -464.5,
                                   np.inf, -np.inf, np.nan, 1e6, 0.3]),
    (TensorProto.FLOAT8E4M3FNUZ, 0, [240, 247, 248, 249, -248, -247.9, np.inf, np.nan, 0.3, 1e6]),
    (TensorProto.FLOAT8E5M2FNUZ, 0, [57344, 61439, 61440, 61441, -61440, np.inf, 0.3, 1e6]),
    (TensorProto.FLOAT8E5M2, 0, e5m2),
    (TensorProto.FLOAT8E5M2, 1, e5m2),
]
failed = 0
for to, saturate, v in values:
    for src, dtype in ((TensorProto.FLOAT, np.float32), (TensorProto.FLOAT16, np.float16)):
        name = "%s_saturate%d_from_%s" % (TensorProto.DataType.Name(to), saturate,
                                          TensorProto.DataType.Name(src))
        model = cast_there_and_back(name, src, to, TensorProto.FLOAT, len(v), 25,
                                    saturate=saturate)
        path = save_model(work, name, model)
        with np.errstate(over="ignore"):
            x = np.array(v, dtype)
        want = ReferenceEvaluator(model).run(None, {"x": x})[0]
        out = compile_and_run(txopt, txopt_run, work, name, path,
                              save_inputs(work, name, [("x", x)]))
        if out is None:
            failed += 1
            continue
        got = np.load(os.path.join(out, "y.npy"))
        if np.array_equal(got, want, equal_nan=True):
            print("%s: ok" % name)
        else:
            print("%s: FAIL expected %s, got %s" % (name, want, got))
            failed += 1
print("%d cases, %d failed" % (2 * len(values), failed))
sys.exit(1 if failed else 0)

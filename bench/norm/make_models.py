#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the ONNX training graphs of the norm micro-benchmark (issue 11).

  make_models.py DIR [--shapes 16384x768,16384x4096,8192x8192]
                     [--norms layer,rms] [--dtypes f32,bf16]

One model per norm x dtype x shape, named NORM_DTYPE_ROWSxHIDDEN.onnx
(e.g. layer_bf16_16384x768.onnx), plus DIR/models.json listing them. Each is
a whole training step's forward for `txopt --train`:

    h    = x * a + b                  a, b: a learnable per-column scale
                                      and bias [H]
    y    = LayerNorm(h; gamma, beta)  or RMSNorm(h; gamma)
    loss = ReduceSum(y * c)           c: a graph input [1, H]

Why this shape of graph:
  * x and c are graph inputs, not initializers, so the models and the
    compiled artifacts stay small: txrun fills every non-token float input
    ("data" role) with seeded N(0, 1) values on the GPU machine
    (runtime/src/core/batch.h, randomArgument).
  * The scale a and bias b are what make the step compute and store the
    norm's input gradient dx: without a parameter upstream of the norm,
    autodiff would have no reason to produce dx. b's gradient (dx summed
    over rows) alone would not do since session 38: the norm-gradient
    kernel sums it from its own registers (columnSumEpilogue) and, with no
    other reader, never stores dx. a's gradient (dx * x summed over rows)
    is a second reader, in a kernel of its own, so dx is stored, as a
    transformer's residual stream reads it. Its forward (x * a + b) is
    computed inside the norm's kernel, reading x once, as x + b was.
  * The loss multiplies by c so the norm's output gradient dy (= c broadcast
    over rows, stored by one elementwise kernel before the norm gradient:
    prepare.sh compiles with --no-norm-grad-input-fusion, or the norm
    gradient would compute it from c itself) is not a constant: the
    norm-gradient kernel reads a full [R, H] dy as it would in a model. c is [1, H] rather than [R, H] only to halve the
    host time txrun spends drawing random inputs (8192x8192 would take
    seconds per run); the norm kernels read the same bytes either way.
  * gamma (and beta) are parameters too, so the gradient kernels also sum
    dgamma (dbeta) over rows, as F.layer_norm's backward does for a weight
    and bias that require grad.

bf16: the models are bf16-typed ONNX graphs (x, c, b, gamma, beta and every
intermediate in bf16), compiled without --precision. An f32 model compiled
with --precision=bf16 would not do: txopt's mixed-precision policy
(docs/Precision.md) lowers only GEMMs and attention to bf16 and keeps norms
in f32, so its norm kernels would be the f32 ones. In a bf16-typed model the
fused norm reads and writes bf16 rows (x, y, dy, dx) with f32 statistics
(mean, rstd) and f32 master copies of gamma/beta (txopt keeps parameters in
f32; the optimizer updates those), which is what F.layer_norm on bf16
tensors moves, apart from the parameters' few kilobytes.

RMSNorm is spelled as PyTorch's decomposition of F.rms_norm writes it
(there is no ONNX RMSNormalization before opset 23):
x * rsqrt(mean(x^2) + eps) * gamma, rsqrt as Sqrt + Reciprocal (opset 17 has
no Rsqrt), and for bf16 the computation upcast to f32 between a Cast in and
a Cast out. txopt's tx-fuse-norms must fuse it into one tx.rms_norm;
prepare.sh checks that in each --report.
"""

import argparse
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

OPSET = 17
EPS = 1e-5
DTYPES = {"f32": TensorProto.FLOAT, "bf16": TensorProto.BFLOAT16}


def bf16_bits(values):
    """f32 -> bf16 bit patterns, round to nearest even (finite inputs)."""
    bits = np.asarray(values, np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def constant(name, dtype, shape, value):
    """An initializer filled with |value|, of ONNX type |dtype|."""
    values = np.full(shape, value, np.float32)
    if dtype == "bf16":
        return helper.make_tensor(name, TensorProto.BFLOAT16, shape,
                                  bf16_bits(values).tobytes(), raw=True)
    return helper.make_tensor(name, TensorProto.FLOAT, shape, values.tobytes(), raw=True)


def norm_nodes(norm, dtype):
    """Nodes from h to y, and the extra initializers they need."""
    if norm == "layer":
        return [helper.make_node("LayerNormalization", ["h", "gamma", "beta"], ["y"],
                                 axis=-1, epsilon=EPS, name="layer_norm")], []
    # RMSNorm: computed in f32 (upcast for bf16, as PyTorch's decomposition
    # does), then cast back to the model's type.
    nodes, src, weight = [], "h", "gamma"
    if dtype == "bf16":
        nodes += [helper.make_node("Cast", ["h"], ["h32"], to=TensorProto.FLOAT),
                  helper.make_node("Cast", ["gamma"], ["gamma32"], to=TensorProto.FLOAT)]
        src, weight = "h32", "gamma32"
    out = "y32" if dtype == "bf16" else "y"
    nodes += [helper.make_node("Pow", [src, "two"], ["square"]),
              helper.make_node("ReduceMean", ["square"], ["mean_square"], axes=[-1], keepdims=1),
              helper.make_node("Add", ["mean_square", "eps"], ["variance"]),
              helper.make_node("Sqrt", ["variance"], ["rms"]),
              helper.make_node("Reciprocal", ["rms"], ["rstd"]),
              helper.make_node("Mul", [src, "rstd"], ["normed"]),
              helper.make_node("Mul", ["normed", weight], [out])]
    if dtype == "bf16":
        nodes.append(helper.make_node("Cast", ["y32"], ["y"], to=TensorProto.BFLOAT16))
    inits = [constant("two", "f32", [], 2.0), constant("eps", "f32", [], EPS)]
    return nodes, inits


def make_model(norm, dtype, rows, hidden):
    t = DTYPES[dtype]
    inits = [constant("a", dtype, [hidden], 1.0), constant("b", dtype, [hidden], 0.0),
             constant("gamma", dtype, [hidden], 1.0)]
    if norm == "layer":
        inits.append(constant("beta", dtype, [hidden], 0.0))
    body, extra = norm_nodes(norm, dtype)
    nodes = [helper.make_node("Mul", ["x", "a"], ["xa"], name="scale"),
             helper.make_node("Add", ["xa", "b"], ["h"], name="bias")] + body + [
        helper.make_node("Mul", ["y", "c"], ["weighted"], name="weighted"),
        helper.make_node("ReduceSum", ["weighted"], ["loss"], keepdims=0, name="loss")]
    graph = helper.make_graph(
        nodes, f"{norm}_norm_{dtype}_{rows}x{hidden}",
        [helper.make_tensor_value_info("x", t, [rows, hidden]),
         helper.make_tensor_value_info("c", t, [1, hidden])],
        [helper.make_tensor_value_info("loss", t, [])],
        inits + extra)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="txopt bench/norm")
    onnx.checker.check_model(model, full_check=True)
    return model


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dir")
    p.add_argument("--shapes", default="16384x768,16384x4096,8192x8192")
    p.add_argument("--norms", default="layer,rms")
    p.add_argument("--dtypes", default="f32,bf16")
    a = p.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    listing = []
    for shape in a.shapes.split(","):
        rows, hidden = (int(v) for v in shape.split("x"))
        for norm in a.norms.split(","):
            for dtype in a.dtypes.split(","):
                if norm not in ("layer", "rms") or dtype not in DTYPES:
                    sys.exit(f"make_models.py: unknown norm '{norm}' or dtype '{dtype}'")
                name = f"{norm}_{dtype}_{rows}x{hidden}"
                onnx.save(make_model(norm, dtype, rows, hidden), os.path.join(a.dir, name + ".onnx"))
                listing.append({"name": name, "norm": norm, "dtype": dtype,
                                "rows": rows, "hidden": hidden, "eps": EPS})
    with open(os.path.join(a.dir, "models.json"), "w") as f:
        json.dump(listing, f, indent=1)
        f.write("\n")
    print(f"make_models.py: {len(listing)} models in {a.dir}")


if __name__ == "__main__":
    main()

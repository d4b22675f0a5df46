#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes tiny ONNX models of single ops into a folder, for
compare_onnxruntime.py (see onnxruntime-ops.test).

Each model exercises one op family in several configurations at once; its
data operands are graph inputs (so txopt keeps runtime ops, which
compare_onnxruntime.py feeds with random floats or its integer recipe) and
its index / axis operands are initializers (constants, as exporters write
them).

Usage: make_op_models.py OUTPUT_DIR
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(folder, name, nodes, inputs, outputs, initializers, opset):
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
        [numpy_helper.from_array(np.asarray(v), n) for n, v in initializers])
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)],
        producer_name="make_op_models.py")
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, os.path.join(folder, name + ".onnx"))


F, I = TensorProto.FLOAT, TensorProto.INT64


def max_min(folder, opset):
    # Variadic with three-way broadcasting, one input, and integers.
    save(folder, f"max_min_op{opset}", [
        helper.make_node("Max", ["a", "b", "c"], ["max3"]),
        helper.make_node("Min", ["a", "b", "c"], ["min3"]),
        helper.make_node("Max", ["b"], ["max1"]),
        helper.make_node("Min", ["c", "a"], ["min2"]),
        helper.make_node("Max", ["ids", "lab"], ["imax"]),
        helper.make_node("Min", ["lab", "ids"], ["imin"]),
    ], [("ids", I, [2, 3]), ("a", F, [2, 3, 4]), ("b", F, [3, 1]),
        ("c", F, [4]), ("lab", I, [3])],
       [("max3", F, [2, 3, 4]), ("min3", F, [2, 3, 4]), ("max1", F, [3, 1]),
        ("min2", F, [2, 3, 4]), ("imax", I, [2, 3]), ("imin", I, [2, 3])],
       [], opset)


def cum_sum(folder, opset):
    nodes, outputs = [], []
    for axis, exclusive, reverse in [(0, 0, 0), (1, 1, 0), (-1, 0, 1),
                                     (-2, 1, 1), (2, 1, 1)]:
        name = f"cs_{axis + 3}_{exclusive}{reverse}"
        nodes.append(helper.make_node("CumSum", ["x", f"axis{axis + 3}"],
                                      [name], exclusive=exclusive,
                                      reverse=reverse))
        outputs.append((name, F, [3, 5, 4]))
    nodes.append(helper.make_node("CumSum", ["ids", "axis32"], ["ics"]))
    outputs.append(("ics", I, [4, 6]))
    initializers = [(f"axis{a + 3}", np.array(a, np.int64))
                    for a in (0, 1, -1, -2, 2)]
    # ONNX allows an int32 axis given as a one-element 1-D tensor.
    initializers.append(("axis32", np.array([1], np.int32)))
    save(folder, f"cum_sum_op{opset}", nodes,
         [("ids", I, [4, 6]), ("x", F, [3, 5, 4])], outputs, initializers,
         opset)


def gather_nd(folder, opset):
    rng = np.random.default_rng(1)
    # Element tuples with negative indices; row tuples; batch_dims 1 and 2.
    pairs = np.stack([rng.integers(-2, 2, (5, 3)),
                      rng.integers(-3, 3, (5, 3))], axis=-1)
    rows = rng.integers(-2, 2, (4, 1))
    batch1 = rng.integers(-3, 3, (2, 7, 2))
    batch2 = rng.integers(-4, 4, (2, 3, 1))
    save(folder, f"gather_nd_op{opset}", [
        helper.make_node("GatherND", ["d", "pairs"], ["g_pairs"]),
        helper.make_node("GatherND", ["d", "rows"], ["g_rows"]),
        helper.make_node("GatherND", ["d", "batch1"], ["g_batch1"], batch_dims=1),
        helper.make_node("GatherND", ["d", "batch2"], ["g_batch2"], batch_dims=2),
        helper.make_node("GatherND", ["ids", "rows"], ["g_ints"]),
    ], [("ids", I, [2, 5]), ("d", F, [2, 3, 4])],
       [("g_pairs", F, [5, 3, 4]), ("g_rows", F, [4, 3, 4]),
        ("g_batch1", F, [2, 7]), ("g_batch2", F, [2, 3]),
        ("g_ints", I, [4, 5])],
       [("pairs", pairs.astype(np.int64)), ("rows", rows.astype(np.int64)),
        ("batch1", batch1.astype(np.int64)), ("batch2", batch2.astype(np.int64))],
       opset)


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    folder = sys.argv[1]
    os.makedirs(folder, exist_ok=True)
    for opset in (13, 18):
        max_min(folder, opset)
        gather_nd(folder, opset)
    cum_sum(folder, 14)
    return 0


if __name__ == "__main__":
    sys.exit(main())

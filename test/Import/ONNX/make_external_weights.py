#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes test models whose initializers live in ONNX external data.

  make_external_weights.py convert IN.onnx OUT.onnx
      Re-saves IN.onnx with every initializer (weights, masks, integer
      shapes, scalars alike: size_threshold=0) in one file OUT.onnx.data next
      to OUT.onnx, as torch.onnx.export does for models over 2 GB.
  make_external_weights.py bf16 OUT.onnx
      A tiny bf16 regression (loss = mean((x @ W) ^ 2), W bf16 [8, 8],
      seeded) with W in OUT.onnx.data: its f32 master copy under --train
      starts from the bytes the executor reads through the source.
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save_external(model, out):
    name = os.path.basename(out) + ".data"
    data = os.path.join(os.path.dirname(out) or ".", name)
    if os.path.exists(data):
        os.remove(data)  # onnx appends to an existing file
    onnx.save_model(model, out, save_as_external_data=True,
                    all_tensors_to_one_file=True, location=name,
                    size_threshold=0)


def bf16_model():
    rng = np.random.default_rng(7)
    w = (rng.standard_normal((8, 8)) * 0.5).astype(np.float32)
    # Round to bf16 by keeping the top 16 bits (exact: the values are set).
    bits = (w.view(np.uint32) >> 16).astype(np.uint16)
    weight = helper.make_tensor("W", TensorProto.BFLOAT16, [8, 8],
                                bits.tobytes(), raw=True)
    nodes = [
        helper.make_node("Cast", ["x"], ["xb"], to=TensorProto.BFLOAT16,
                         name="cast_in"),
        helper.make_node("MatMul", ["xb", "W"], ["yb"], name="matmul"),
        helper.make_node("Cast", ["yb"], ["y"], to=TensorProto.FLOAT,
                         name="cast_out"),
        helper.make_node("Mul", ["y", "y"], ["sq"], name="square"),
        helper.make_node("ReduceMean", ["sq"], ["loss"], keepdims=0,
                         name="mean"),
    ]
    graph = helper.make_graph(
        nodes, "bf16_regression",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
        [weight])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                             producer_name="make_external_weights")


def main(argv):
    if len(argv) == 3 and argv[0] == "convert":
        save_external(onnx.load(argv[1]), argv[2])
    elif len(argv) == 2 and argv[0] == "bf16":
        save_external(bf16_model(), argv[1])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])

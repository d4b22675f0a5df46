#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the malformed ONNX models the importer's error tests read.

Every file is deterministic (fixed seed, no timestamps), so rerunning this
script reproduces the committed bytes exactly:

    python3 scripts/make_bad_onnx.py test/Import/ONNX/Inputs/bad

Needs the `onnx` Python package (pip install onnx). Each model is the
smallest graph that shows one defect; the lit tests next to the inputs
(test/Import/ONNX/bad-*.test) check the one-line error txopt prints.
"""

import os
import random
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

IR_VERSION = 8


def model(nodes, inputs, outputs, initializers=(), opset=18, extra_opsets=(),
          value_info=()):
    graph = helper.make_graph(list(nodes), "bad", list(inputs), list(outputs),
                              initializer=list(initializers),
                              value_info=list(value_info))
    opsets = [helper.make_opsetid("", opset)] + list(extra_opsets)
    m = helper.make_model(graph, opset_imports=opsets,
                          producer_name="make_bad_onnx.py")
    m.ir_version = IR_VERSION
    return m


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def i64(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.INT64, shape)


def add_model():
    """A valid two-input Add, the base several defects start from."""
    node = helper.make_node("Add", ["x", "y"], ["z"], name="add0")
    return model([node], [f32("x", [2, 3]), f32("y", [2, 3])], [f32("z", [2, 3])])


def save(directory, name, m):
    # SerializeToString is deterministic for a given message.
    with open(os.path.join(directory, name), "wb") as f:
        f.write(m.SerializeToString())


def raw_tensor(name, dims, data_type, raw):
    t = TensorProto()
    t.name = name
    t.dims.extend(dims)
    t.data_type = data_type
    t.raw_data = raw
    return t


def external_tensor(name, dims, location, offset=None, length=None):
    t = TensorProto()
    t.name = name
    t.dims.extend(dims)
    t.data_type = TensorProto.FLOAT
    t.data_location = TensorProto.EXTERNAL
    entries = [("location", location)]
    if offset is not None:
        entries.append(("offset", str(offset)))
    if length is not None:
        entries.append(("length", str(length)))
    for key, value in entries:
        e = t.external_data.add()
        e.key = key
        e.value = value
    return t


def weight_model(tensor, shape):
    """y = x * w with w an initializer (possibly malformed)."""
    node = helper.make_node("Mul", ["x", "w"], ["y"], name="mul0")
    return model([node], [f32("x", shape)], [f32("y", shape)], [tensor])


def main(directory):
    os.makedirs(directory, exist_ok=True)
    good = add_model().SerializeToString()

    # --- Files that are not models -------------------------------------
    open(os.path.join(directory, "empty.onnx"), "wb").close()
    with open(os.path.join(directory, "truncated.onnx"), "wb") as f:
        f.write(good[: len(good) // 2])
    rng = random.Random(20240601)
    with open(os.path.join(directory, "random.onnx"), "wb") as f:
        f.write(bytes(rng.randrange(256) for _ in range(4096)))

    # --- Graph structure -----------------------------------------------
    save(directory, "unknown_op.onnx", model(
        [helper.make_node("FancyAttention", ["x"], ["y"], name="attn0")],
        [f32("x", [2, 3])], [f32("y", [2, 3])]))
    save(directory, "unknown_domain.onnx", model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu0",
                          domain="com.example")],
        [f32("x", [2, 3])], [f32("y", [2, 3])],
        extra_opsets=[helper.make_opsetid("com.example", 1)]))
    m = add_model()
    m.opset_import[0].version = 11
    save(directory, "opset11.onnx", m)
    m = add_model()
    m.opset_import[0].version = 24
    save(directory, "opset24.onnx", m)
    save(directory, "cycle.onnx", model(
        [helper.make_node("Add", ["x", "b"], ["a"], name="cyc_a"),
         helper.make_node("Relu", ["a"], ["b"], name="cyc_b"),
         helper.make_node("Neg", ["x"], ["y"], name="out")],
        [f32("x", [2, 3])], [f32("y", [2, 3]), f32("a", [2, 3])]))
    save(directory, "undefined_input.onnx", model(
        [helper.make_node("Add", ["x", "nowhere"], ["y"], name="add_undef")],
        [f32("x", [2, 3])], [f32("y", [2, 3])]))
    # The exporter declared `fc.weight` (value_info) but dropped its data.
    save(directory, "missing_initializer.onnx", model(
        [helper.make_node("MatMul", ["x", "fc.weight"], ["y"], name="fc")],
        [f32("x", [2, 3])], [f32("y", [2, 4])],
        value_info=[f32("fc.weight", [3, 4])]))
    save(directory, "type_mismatch.onnx", model(
        [helper.make_node("Add", ["x", "n"], ["y"], name="add_mixed")],
        [f32("x", [2, 3]), i64("n", [2, 3])], [f32("y", [2, 3])]))
    save(directory, "bad_attr_type.onnx", model(
        [helper.make_node("Gather", ["x", "i"], ["y"], name="gather0",
                          axis="zero")],
        [f32("x", [4, 3]), i64("i", [2])], [f32("y", [2, 3])]))

    # --- Shapes and dims -------------------------------------------------
    save(directory, "zero_dim.onnx", model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu0")],
        [f32("x", [2, 0])], [f32("y", [2, 0])]))
    save(directory, "symbolic_dim.onnx", model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu0")],
        [f32("x", ["batch", 3])], [f32("y", ["batch", 3])]))
    t = raw_tensor("w", [2, 3], TensorProto.FLOAT, b"\0" * 24)
    t.dims[1] = -3
    save(directory, "negative_dim.onnx", weight_model(t, [2, 3]))
    # 2^21 x 2^21 = 2^42 elements, with 8 bytes of data.
    save(directory, "huge_dims.onnx", weight_model(
        raw_tensor("w", [1 << 21, 1 << 21], TensorProto.FLOAT, b"\0" * 8),
        [2, 3]))
    save(directory, "expand_huge.onnx", model(
        [helper.make_node("Expand", ["x", "shape"], ["y"], name="expand0")],
        [f32("x", [1])], [f32("y", None)],
        [numpy_helper.from_array(np.array([1 << 30, 1 << 30], np.int64),
                                 "shape")]))

    # --- Tensor data -----------------------------------------------------
    save(directory, "raw_size.onnx", weight_model(
        raw_tensor("w", [2, 3], TensorProto.FLOAT, b"\0" * 20), [2, 3]))
    save(directory, "bad_dtype.onnx", weight_model(
        raw_tensor("w", [2, 3], 99, b"\0" * 24), [2, 3]))
    t = TensorProto()
    t.name = "w"
    t.dims.extend([2, 3])
    t.data_type = TensorProto.FLOAT
    t.float_data.extend([1.0, 2.0, 3.0])
    save(directory, "float_data_count.onnx", weight_model(t, [2, 3]))

    # --- External data ---------------------------------------------------
    weights = np.arange(6, dtype=np.float32).reshape(2, 3)
    with open(os.path.join(directory, "weights.bin"), "wb") as f:
        f.write(b"\0" * 16 + weights.tobytes())
    save(directory, "ext_ok.onnx", weight_model(
        external_tensor("w", [2, 3], "weights.bin", offset=16, length=24), [2, 3]))
    save(directory, "ext_parent.onnx", weight_model(
        external_tensor("w", [2, 3], "../bad/weights.bin"), [2, 3]))
    save(directory, "ext_absolute.onnx", weight_model(
        external_tensor("w", [2, 3], "/etc/passwd"), [2, 3]))
    # A symlink inside the folder that points outside it, at a file that
    # would otherwise load fine (so only the containment check stops it).
    with open(os.path.join(directory, "..", "outside.bin"), "wb") as f:
        f.write(weights.tobytes())
    link = os.path.join(directory, "outside_link.bin")
    if os.path.lexists(link):
        os.remove(link)
    os.symlink("../outside.bin", link)
    save(directory, "ext_symlink.onnx", weight_model(
        external_tensor("w", [2, 3], "outside_link.bin"), [2, 3]))
    save(directory, "ext_short.onnx", weight_model(
        external_tensor("w", [2, 3], "weights.bin", offset=32), [2, 3]))
    save(directory, "ext_missing.onnx", weight_model(
        external_tensor("w", [2, 3], "no_such_file.bin"), [2, 3]))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_bad_onnx.py OUTPUT_DIR")
    main(sys.argv[1])

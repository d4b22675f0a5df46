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
    m.opset_import[0].version = 6
    save(directory, "opset6.onnx", m)
    m = add_model()
    m.opset_import[0].version = 29
    save(directory, "opset29.onnx", m)
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
    # Both raw_data and float_data: which one wins is up to the reader.
    t = raw_tensor("w", [2, 3], TensorProto.FLOAT,
                   np.ones(6, np.float32).tobytes())
    t.float_data.extend([2.0] * 6)
    save(directory, "raw_and_float_data.onnx", weight_model(t, [2, 3]))

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


# ---------------------------------------------------------------------------
# The generated corpus (issue 13): `make_bad_onnx.py --corpus DIR` writes
# several hundred malformed or extreme models and DIR/manifest.json, which
# test/Import/ONNX/check_bad_corpus.py runs through txopt (and txopt-run,
# and onnxruntime for the valid-but-extreme ones). Nothing is committed:
# the lit test regenerates the corpus each run, deterministically.
#
# Manifest entries: {"file", "kind", "names", ...}
#   kind "import": `txopt FILE --emit=tx` exits 1 or 2 with one line on
#                  stderr that contains every string of "names".
#   kind "run":    txopt imports it; `txopt-run` (with "run_args") exits 1
#                  with one line that contains "names".
#   kind "ort":    a valid model with extreme attribute or index values:
#                  txopt + txopt-run give onnxruntime's answer on "inputs".
# ---------------------------------------------------------------------------

INT64_MAX = (1 << 63) - 1
INT64_MIN = -(1 << 63)

SUPPORTED_OPS = {
    # op: (number of inputs, required attributes)
    "Add": (2, {}), "Sub": (2, {}), "Mul": (2, {}), "Div": (2, {}),
    "Pow": (2, {}), "Mod": (2, {}), "Equal": (2, {}), "Less": (2, {}),
    "Greater": (2, {}), "LessOrEqual": (2, {}), "GreaterOrEqual": (2, {}),
    "And": (2, {}), "Or": (2, {}), "Xor": (2, {}), "Not": (1, {}),
    "Max": (2, {}), "Min": (2, {}), "Where": (3, {}), "Sqrt": (1, {}),
    "Reciprocal": (1, {}), "Neg": (1, {}), "Erf": (1, {}), "Tanh": (1, {}),
    "Sigmoid": (1, {}), "Relu": (1, {}), "Exp": (1, {}), "Log": (1, {}),
    "Sin": (1, {}), "Cos": (1, {}), "IsNaN": (1, {}),
    "Cast": (1, {"to": TensorProto.FLOAT}), "MatMul": (2, {}),
    "Gemm": (2, {}), "Gather": (2, {}), "GatherElements": (2, {}),
    "GatherND": (2, {}), "Reshape": (2, {}), "Flatten": (1, {}),
    "Expand": (2, {}), "Transpose": (1, {}), "Split": (1, {}),
    "Slice": (3, {}), "Concat": (1, {"axis": 0}), "Squeeze": (1, {}),
    "Unsqueeze": (2, {}), "Pad": (2, {}), "Trilu": (1, {}),
    "ReduceMean": (1, {}), "ReduceSum": (1, {}), "ReduceMax": (1, {}),
    "CumSum": (2, {}), "Softmax": (1, {}), "LayerNormalization": (2, {}),
    "SoftmaxCrossEntropyLoss": (2, {}), "Dropout": (1, {}),
    "Identity": (1, {}), "Shape": (1, {}), "ConstantOfShape": (1, {}),
    "Range": (3, {}),
}
MIN_OPSET = {"Trilu": 14, "LayerNormalization": 17}


class Corpus:
    def __init__(self, directory):
        self.directory = directory
        self.entries = []
        os.makedirs(directory, exist_ok=True)

    def add(self, name, m, kind, names=(), **extra):
        path = name + ".onnx"
        if isinstance(m, bytes):
            with open(os.path.join(self.directory, path), "wb") as f:
                f.write(m)
        else:
            save(self.directory, path, m)
        entry = {"file": path, "kind": kind, "names": list(names)}
        entry.update(extra)
        self.entries.append(entry)

    def write_manifest(self):
        import json
        with open(os.path.join(self.directory, "manifest.json"), "w") as f:
            json.dump(self.entries, f, indent=1)


def generic_node_model(op, opset, attrs, name):
    """One `op` node over float inputs x0..xN-1 (the shapes need not fit:
    the schema check runs before anything else is looked at)."""
    count, required = SUPPORTED_OPS[op]
    all_attrs = dict(required)
    all_attrs.update(attrs)
    inputs = [f32("x%d" % i, [2, 2]) for i in range(count)]
    node = helper.make_node(op, [i.name for i in inputs], ["y"], name=name,
                            **all_attrs)
    return model([node], inputs, [f32("y", None)], opset=opset)


def corpus_schema(c):
    """Attributes the node's opset does not define, or of the wrong kind."""
    for op in sorted(SUPPORTED_OPS):
        for opset in (13, 15, 17, 18, 21, 23):
            if opset < MIN_OPSET.get(op, 13):
                continue
            name = "n_%s_%d_foreign" % (op, opset)
            c.add("schema_foreign_%s_op%d" % (op, opset),
                  generic_node_model(op, opset, {"bogus_attr": 1}, name),
                  "import", [name, "bogus_attr"])
    # Split's `split` attribute was replaced by an input in opset 13.
    for opset in range(13, 24):
        name = "split_attr_%d" % opset
        node = helper.make_node("Split", ["x"], ["a", "b"], name=name,
                                axis=0, split=[-1, 5])
        c.add("split_attr_op%d" % opset,
              model([node], [f32("x", [4, 2])],
                    [f32("a", None), f32("b", None)], opset=opset),
              "import", [name])
    # Dropout: `ratio` is an input since opset 12; an attribute is foreign.
    for opset in (13, 17, 18, 22):
        name = "drop_attr_%d" % opset
        node = helper.make_node("Dropout", ["x"], ["y"], name=name, ratio=0.1)
        c.add("dropout_ratio_attr_op%d" % opset,
              model([node], [f32("x", [2, 2])], [f32("y", [2, 2])],
                    opset=opset), "import", [name])
    # Attributes of the wrong kind.
    wrong = [("Gather", {"axis": 0.5}), ("Gather", {"axis": "0"}),
             ("Softmax", {"axis": [1]}), ("Transpose", {"perm": 1}),
             ("Gemm", {"alpha": "one"}), ("Concat", {"axis": 1.0}),
             ("Trilu", {"upper": 1.0}), ("CumSum", {"reverse": "yes"}),
             ("LayerNormalization", {"epsilon": 1}),
             ("Pad", {"mode": 3}), ("Cast", {"to": 1.0}),
             ("Flatten", {"axis": [1, 2]})]
    for i, (op, attrs) in enumerate(wrong):
        for opset in (17, 18, 23):
            if opset < MIN_OPSET.get(op, 13):
                continue
            name = "n_wrongkind_%d_%d" % (i, opset)
            c.add("schema_wrong_kind_%d_op%d" % (i, opset),
                  generic_node_model(op, opset, attrs, name), "import",
                  [name, list(attrs)[0]])


def gather_model(op, data_shape, indices, axis, name, constant_data=False):
    data = f32("data", data_shape)
    ind = numpy_helper.from_array(np.array(indices, np.int64), "idx")
    node = helper.make_node(op, ["data", "idx"], ["y"], name=name, axis=axis)
    inits = [ind]
    inputs = [data]
    if constant_data:
        inputs = []
        inits.append(numpy_helper.from_array(
            np.zeros(data_shape, np.int64), "data"))
    return model([node], inputs, [helper.make_tensor_value_info(
        "y", TensorProto.FLOAT if not constant_data else TensorProto.INT64,
        None)], inits)


def corpus_gather(c):
    """Constant indices out of range for the gathered dim."""
    for op in ("Gather", "GatherElements"):
        for axis in (0, 1, -1):
            dim = 4 if axis == 0 else 3
            for bad in (dim, -dim - 1, 1000, INT64_MAX, INT64_MIN, -(1 << 40)):
                for const in (False, True):
                    name = "%s_ax%d_%s_%s" % (op.lower(), axis,
                                              str(bad).replace("-", "m"),
                                              "c" if const else "v")
                    if op == "Gather":
                        idx = [0, bad]
                    else:
                        idx = [[0] * 3, [0] * 3] if axis == 0 else [[0] * 3] * 4
                        idx = [list(r) for r in idx]
                        idx[-1][-1] = bad
                    c.add(name, gather_model(op, [4, 3], idx, axis, name,
                                             constant_data=const),
                          "import", [name])


def corpus_ir_version(c):
    for v in (-1, 0, 1, 2, 15, 1 << 40, INT64_MIN, INT64_MAX):
        m = add_model()
        m.ir_version = v
        c.add("ir_version_%s" % str(v).replace("-", "m"), m, "import",
              ["ir_version"])
    m = add_model()
    m.ClearField("ir_version")
    c.add("ir_version_missing", m, "import", ["ir_version"])


def corpus_output_shape(c):
    cases = [([2, 4], "dims"), ([3, 3], "dims2"), ([2, 3, 1], "rank"),
             ([6], "flat"), ([], "scalar"), ([1, 3], "broadcastlike")]
    for shape, label in cases:
        node = helper.make_node("Add", ["x", "y"], ["z"], name="add0")
        m = model([node], [f32("x", [2, 3]), f32("y", [2, 3])],
                  [f32("z", shape)])
        c.add("output_shape_%s" % label, m, "import", ["graph output 'z'"])
    for op in ("Relu", "Neg", "Exp", "Sigmoid"):
        node = helper.make_node(op, ["x"], ["y"], name="u0")
        m = model([node], [f32("x", [4, 5])], [f32("y", [5, 4])])
        c.add("output_shape_%s" % op.lower(), m, "import",
              ["graph output 'y'"])


def corpus_tensor_fields(c):
    """Tensors holding data in two fields, or external-data records on a
    tensor that says its data is inline."""
    combos = [
        (TensorProto.FLOAT, "raw_data", "float_data"),
        (TensorProto.FLOAT, "float_data", "int32_data"),
        (TensorProto.FLOAT, "raw_data", "double_data"),
        (TensorProto.INT64, "raw_data", "int64_data"),
        (TensorProto.INT64, "int64_data", "int32_data"),
        (TensorProto.INT32, "raw_data", "int32_data"),
        (TensorProto.DOUBLE, "raw_data", "double_data"),
        (TensorProto.FLOAT16, "raw_data", "int32_data"),
        (TensorProto.UINT64, "raw_data", "uint64_data"),
        (TensorProto.FLOAT, "float_data", "uint64_data"),
    ]
    for dtype, first, second in combos:
        for where in ("initializer", "constant"):
            t = TensorProto()
            t.name = "w"
            t.dims.extend([2, 3])
            t.data_type = dtype
            width = {TensorProto.FLOAT: 4, TensorProto.INT64: 8,
                     TensorProto.INT32: 4, TensorProto.DOUBLE: 8,
                     TensorProto.FLOAT16: 2, TensorProto.UINT64: 8}[dtype]
            for field in (first, second):
                if field == "raw_data":
                    t.raw_data = b"\0" * (6 * width)
                else:
                    getattr(t, field).extend([0] * 6)
            label = "%s_%s_%s_%s" % (where, TensorProto.DataType.Name(dtype),
                                     first, second)
            if where == "initializer":
                node = helper.make_node("Identity", ["w"], ["y"], name="id0")
                m = model([node], [], [helper.make_tensor_value_info(
                    "y", dtype, [2, 3])], [t])
                c.add("fields_" + label, m, "import", ["'w'", second])
            else:
                node = helper.make_node("Constant", [], ["y"],
                                        name="const_" + label, value=t)
                m = model([node], [], [helper.make_tensor_value_info(
                    "y", dtype, [2, 3])])
                c.add("fields_" + label, m, "import", [second])
    t = raw_tensor("w", [2, 3], TensorProto.FLOAT, b"\0" * 24)
    e = t.external_data.add()
    e.key = "location"
    e.value = "weights.bin"
    c.add("fields_external_records_inline", weight_model(t, [2, 3]),
          "import", ["'w'", "external_data"])


def corpus_dropout(c):
    for dtype in (TensorProto.INT64, TensorProto.INT32, TensorProto.BOOL):
        for opset in (13, 18, 22):
            name = "drop_ratio_%s_%d" % (TensorProto.DataType.Name(dtype), opset)
            ratio = helper.make_tensor("r", dtype, [], [0])
            mode = helper.make_tensor("t", TensorProto.BOOL, [], [1])
            node = helper.make_node("Dropout", ["x", "r", "t"], ["y"],
                                    name=name)
            m = model([node], [f32("x", [2, 2])], [f32("y", [2, 2])],
                      [ratio, mode], opset=opset)
            c.add(name, m, "import", [name, "ratio"])
    for opset in (13, 18):
        name = "drop_mode_f32_%d" % opset
        ratio = helper.make_tensor("r", TensorProto.FLOAT, [], [0.1])
        mode = helper.make_tensor("t", TensorProto.FLOAT, [], [1.0])
        node = helper.make_node("Dropout", ["x", "r", "t"], ["y"], name=name)
        m = model([node], [f32("x", [2, 2])], [f32("y", [2, 2])],
                  [ratio, mode], opset=opset)
        c.add(name, m, "import", [name, "training_mode"])
        for attr in ("seed_str", "training_mode", "foo"):
            name = "drop_foreign_%s_%d" % (attr, opset)
            node = helper.make_node("Dropout", ["x"], ["y"], name=name,
                                    **{attr: 1})
            m = model([node], [f32("x", [2, 2])], [f32("y", [2, 2])],
                      opset=opset)
            c.add(name, m, "import", [name, attr])


def corpus_arith(c):
    """Extreme attribute values that are impossible: a clear error."""
    for pads in ([INT64_MIN, 0, 0, 0], [0, 0, INT64_MIN, 0],
                 [INT64_MAX, 0, 0, 0], [0, INT64_MAX, 0, 0],
                 [-(1 << 41), 0, 0, 0], [1 << 41, 0, 0, 0],
                 [-5, 0, 0, 0], [0, -3, 0, -3]):
        for mode in ("constant", "reflect", "edge", "wrap"):
            name = "pad_%s_%s" % (mode, "_".join(
                str(p).replace("-", "m") for p in pads))
            node = helper.make_node("Pad", ["x", "p"], ["y"], name=name,
                                    mode=mode)
            m = model([node], [f32("x", [2, 3])], [f32("y", None)],
                      [numpy_helper.from_array(np.array(pads, np.int64), "p")])
            c.add(name, m, "import", [name])
    for sizes in ([INT64_MAX, 1], [INT64_MIN, 4], [-1, 5], [2, 2, 0],
                  [1 << 62, 1 << 62, -(1 << 62), -(1 << 62) + 4], [5, -1],
                  [4, 1], [3]):
        name = "split_%s" % "_".join(str(v).replace("-", "m") for v in sizes)
        outs = ["o%d" % i for i in range(2)]
        node = helper.make_node("Split", ["x", "s"], outs, name=name, axis=0)
        m = model([node], [f32("x", [4, 2])], [f32(o, None) for o in outs],
                  [numpy_helper.from_array(np.array(sizes, np.int64), "s")])
        c.add(name, m, "import", [name])
    for perm in ([0, 0], [2, 0], [-1, 0], [INT64_MAX, 0], [INT64_MIN, 1],
                 [0, 1, 2], [1]):
        name = "perm_%s" % "_".join(str(v).replace("-", "m") for v in perm)
        node = helper.make_node("Transpose", ["x"], ["y"], name=name, perm=perm)
        c.add(name, model([node], [f32("x", [2, 3])], [f32("y", None)]),
              "import", [name])
    for shape in ([INT64_MAX, 2], [1 << 31, 1 << 31], [-2, 3], [-1, -1],
                  [1 << 40, 1 << 1], [INT64_MIN, 1]):
        name = "reshape_%s" % "_".join(str(v).replace("-", "m") for v in shape)
        node = helper.make_node("Reshape", ["x", "s"], ["y"], name=name)
        m = model([node], [f32("x", [2, 3])], [f32("y", None)],
                  [numpy_helper.from_array(np.array(shape, np.int64), "s")])
        c.add(name, m, "import", [name])
        name = "expand_%s" % "_".join(str(v).replace("-", "m") for v in shape)
        node = helper.make_node("Expand", ["x", "s"], ["y"], name=name)
        m = model([node], [f32("x", [1, 1])], [f32("y", None)],
                  [numpy_helper.from_array(np.array(shape, np.int64), "s")])
        c.add(name, m, "import", [name])
        name = "cos_%s" % "_".join(str(v).replace("-", "m") for v in shape)
        node = helper.make_node("ConstantOfShape", ["s"], ["y"], name=name)
        m = model([node], [], [f32("y", None)],
                  [numpy_helper.from_array(np.array(shape, np.int64), "s")])
        c.add(name, m, "import", [name])
    for start, limit, delta in ((0, INT64_MAX, 1), (INT64_MIN, INT64_MAX, 1),
                                (0, 10, 0), (INT64_MAX, INT64_MIN, -1)):
        name = "range_%d_%d_%d" % (start, limit, delta)
        name = name.replace("-", "m")
        node = helper.make_node("Range", ["a", "b", "d"], ["y"], name=name)
        inits = [numpy_helper.from_array(np.array(v, np.int64), n)
                 for v, n in ((start, "a"), (limit, "b"), (delta, "d"))]
        c.add(name, model([node], [], [i64("y", None)], inits), "import",
              [name])
    for axis in (3, -3, INT64_MAX, INT64_MIN):
        for op in ("Softmax", "Concat", "Gather", "Flatten", "CumSum"):
            name = "axis_%s_%s" % (op, str(axis).replace("-", "m"))
            if op == "CumSum":
                node = helper.make_node(op, ["x", "a"], ["y"], name=name)
                inits = [numpy_helper.from_array(np.array(axis, np.int64), "a")]
                m = model([node], [f32("x", [2, 3])], [f32("y", None)], inits)
            elif op == "Gather":
                node = helper.make_node(op, ["x", "i"], ["y"], name=name,
                                        axis=axis)
                m = model([node], [f32("x", [2, 3]), i64("i", [1])],
                          [f32("y", None)])
            else:
                node = helper.make_node(op, ["x"], ["y"], name=name, axis=axis)
                m = model([node], [f32("x", [2, 3])], [f32("y", None)])
            c.add(name, m, "import", [name])


def corpus_memory(c):
    """Models import accepts whose tensors do not fit txopt-run's budget."""
    for dims, dtype in (([1 << 31], TensorProto.FLOAT),
                        ([1 << 31, 4], TensorProto.INT64),
                        ([1 << 20, 1 << 20], TensorProto.FLOAT),
                        ([1 << 36], TensorProto.FLOAT16),
                        ([3, 1 << 33], TensorProto.BFLOAT16)):
        label = "x".join(str(d) for d in dims)
        node = helper.make_node("Neg", ["x"], ["y"], name="neg0")
        m = model([node], [helper.make_tensor_value_info("x", dtype, dims)],
                  [helper.make_tensor_value_info("y", dtype, dims)])
        c.add("mem_input_%s_%d" % (label, dtype), m, "run", ["argument 'x'"],
              run_args=["--max-memory", "1G"])
    # Through the default budget (physical memory): 2^40 elements (8 TiB in
    # the executor) fit no machine this runs on.
    for dims in ([1 << 40], [1 << 20, 1 << 20], [2, 1 << 39]):
        label = "x".join(str(d) for d in dims)
        node = helper.make_node("Relu", ["x"], ["y"], name="relu0")
        m = model([node], [f32("x", dims)], [f32("y", dims)])
        c.add("mem_input_default_%s" % label, m, "run",
              ["argument 'x'", "bytes"], run_args=[])
    for dims in ([1 << 31, 64], [1 << 34], [1 << 20, 1 << 18]):
        label = "x".join(str(d) for d in dims)
        node = helper.make_node(
            "ConstantOfShape", ["s"], ["y"], name="splat_" + label,
            value=helper.make_tensor("v", TensorProto.INT64, [1], [7]))
        m = model([node], [], [i64("y", dims)],
                  [numpy_helper.from_array(np.array(dims, np.int64), "s")])
        c.add("mem_splat_%s" % label, m, "run", ["tx.constant", "bytes"],
              run_args=["--max-memory", "4G"])
    # A result too large for the budget, from a small input.
    node = helper.make_node("Expand", ["x", "s"], ["y"], name="expand_big")
    m = model([node], [f32("x", [1, 1])], [f32("y", [1 << 16, 1 << 16])],
              [numpy_helper.from_array(np.array([1 << 16, 1 << 16], np.int64),
                                       "s")])
    c.add("mem_expand_result", m, "run", ["tx.expand", "bytes"],
          run_args=["--max-memory", "1G"])


def corpus_extreme_valid(c):
    """Valid models with extreme values: onnxruntime's answer is the answer.
    k is a constant (folded at import) or a graph input's constant
    initializer kept at run time through a float path."""
    ks = [INT64_MAX, INT64_MIN, INT64_MAX - 1, INT64_MIN + 1, 1 << 62,
          -(1 << 62), 3, -3]
    for k in ks:
        for upper in (0, 1):
            label = ("%d_u%d" % (k, upper)).replace("-", "m")
            # Folded at import: the data is a constant.
            data = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
            node = helper.make_node("Trilu", ["d", "k"], ["y"],
                                    name="trilu_c_" + label, upper=upper)
            inits = [numpy_helper.from_array(data, "d"),
                     numpy_helper.from_array(np.array(k, np.int64), "k")]
            m = model([node], [], [f32("y", [3, 4])], inits)
            c.add("trilu_const_" + label, m, "ort", inputs={})
            # Computed at run time on an input.
            node = helper.make_node("Trilu", ["x", "k"], ["y"],
                                    name="trilu_r_" + label, upper=upper)
            m = model([node], [f32("x", [3, 4])], [f32("y", [3, 4])],
                      [numpy_helper.from_array(np.array(k, np.int64), "k")])
            c.add("trilu_run_" + label, m, "ort",
                  inputs={"x": data.tolist()})
    vals = [INT64_MAX, INT64_MIN, INT64_MAX - 1, INT64_MIN + 1, -(1 << 40),
            1 << 40, -1, 2]
    rng = random.Random(13)
    for i in range(24):
        start, end = rng.choice(vals), rng.choice(vals)
        step = rng.choice([1, -1, 2, -2, INT64_MAX, INT64_MIN, INT64_MIN + 1,
                           3])
        node = helper.make_node("Slice", ["x", "s", "e", "a", "t"], ["y"],
                                name="slice_%d" % i)
        inits = [numpy_helper.from_array(np.array([v], np.int64), n)
                 for v, n in ((start, "s"), (end, "e"), (1, "a"),
                              (step, "t"))]
        data = np.arange(20, dtype=np.float32).reshape(4, 5)
        m = model([node], [f32("x", [4, 5])], [f32("y", None)], inits)
        # The expected value from the spec's formula, not onnxruntime (which
        # reads end = INT64_MAX with a negative step as "to the front" where
        # the spec and onnx's shape inference clamp it to dim - 1) nor onnx's
        # reference evaluator (whose Python slicing reads a clamped end of
        # -1 as "the last element").
        c.add("slice_extreme_%d" % i, m, "ort", inputs={"x": data.tolist()},
              expected={"y": slice_spec(data, start, end, 1, step).tolist()})


def slice_spec(x, start, end, axis, step):
    """ONNX Slice on one axis, as the operator spec words it."""
    dim = x.shape[axis]
    if start < 0:
        start += dim
    if end < 0:
        end += dim
    if step > 0:
        start, end = min(max(start, 0), dim), min(max(end, 0), dim)
    else:
        start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
    return np.take(x, list(range(start, end, step)), axis=axis)


def write_corpus(directory):
    c = Corpus(directory)
    corpus_schema(c)
    corpus_gather(c)
    corpus_ir_version(c)
    corpus_output_shape(c)
    corpus_tensor_fields(c)
    corpus_dropout(c)
    corpus_arith(c)
    corpus_memory(c)
    corpus_extreme_valid(c)
    c.write_manifest()
    return c.entries


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--corpus":
        entries = write_corpus(sys.argv[2])
        print("%d models" % len(entries))
        sys.exit(0)
    if len(sys.argv) != 2:
        sys.exit("usage: make_bad_onnx.py OUTPUT_DIR | --corpus DIR")
    main(sys.argv[1])

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Compares txopt-run (the CPU reference executor) with onnxruntime.

For every MODEL.onnx in --models (sorted by name):
  1. `txopt MODEL.onnx --emit=tx --print-locations -o MODEL.mlir` imports it;
  2. inputs are generated and written as .npy: int64 inputs follow the recipe
     of the shared models' README (the first integer input holds token ids
     (7*i + 3) mod 512, every later one labels (11*i + 5) mod 512, where i is
     the row-major element index, i.e. 32*b + t for a [2, 32] batch); float
     inputs are uniform in [0.1, 1.0) from numpy's default_rng(0) (positive,
     so an optimizer's second moment and step count are valid);
  3. `txopt-run MODEL.mlir --input NAME=FILE.npy ... --output-dir DIR` runs
     the reference executor;
  4. onnxruntime (CPUExecutionProvider) runs the same model on the same
     inputs. A model onnxruntime refuses with default options (e.g.
     rmsnorm_op14.onnx, "Node input '/Cast_1_output_0' is not a graph input"
     from one of its graph optimizers) is retried with graph optimizations
     disabled (ORT_DISABLE_ALL), and the line says so. Dropout in training
     mode (gpt2_op18_loss.onnx was exported so, ratio 0.1) draws different
     random numbers in each implementation, so it is turned off on both
     sides: txopt-run --no-dropout, and training_mode = false in the model
     given to onnxruntime;
  5. every output is compared. Tolerance: the normwise relative error
     max|txopt - ort| / max|ort| of each float output must be at most
     --rtol (default 1e-5); integer and bool outputs must be equal; NaNs
     must sit at the same positions.

Prints one line per model, `NAME: ok (...)` or `NAME: FAIL (...)`, and exits
1 if any model failed, 0 otherwise.
Needs: numpy, onnx, onnxruntime (pip install numpy onnx onnxruntime).
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

ONNX_TO_NUMPY = {
    onnx.TensorProto.FLOAT: np.float32,
    onnx.TensorProto.DOUBLE: np.float64,
    onnx.TensorProto.FLOAT16: np.float16,
    onnx.TensorProto.INT64: np.int64,
    onnx.TensorProto.INT32: np.int32,
    onnx.TensorProto.BOOL: np.bool_,
}


def npy_file_name(name):
    """The file name txopt-run writes output NAME to (see fileNameFor)."""
    out = re.sub(r"[^A-Za-z0-9._-]", "_", name)
    if not out or out.startswith("."):
        out = "_" + out
    return out + ".npy"


def graph_inputs(model):
    initializers = {init.name for init in model.graph.initializer}
    inputs = []
    for value in model.graph.input:
        if value.name in initializers:
            continue
        tensor_type = value.type.tensor_type
        dims = []
        for dim in tensor_type.shape.dim:
            if not dim.HasField("dim_value"):
                raise ValueError(f"input '{value.name}' has a symbolic dim")
            dims.append(dim.dim_value)
        if tensor_type.elem_type not in ONNX_TO_NUMPY:
            raise ValueError(f"input '{value.name}' has an unsupported type")
        inputs.append((value.name, ONNX_TO_NUMPY[tensor_type.elem_type], dims))
    return inputs


def make_inputs(inputs):
    rng = np.random.default_rng(0)
    values = {}
    int_index = 0
    for name, dtype, dims in inputs:
        count = int(np.prod(dims, dtype=np.int64))
        i = np.arange(count, dtype=np.int64)
        if np.issubdtype(dtype, np.integer):
            data = (7 * i + 3) % 512 if int_index == 0 else (11 * i + 5) % 512
            int_index += 1
        elif dtype == np.bool_:
            data = i % 2 == 0
        else:
            data = rng.uniform(0.1, 1.0, size=count)
        values[name] = data.astype(dtype).reshape(dims).copy()
    return values


def without_dropout(model):
    """Sets training_mode = false on every Dropout (in place); returns how
    many were in training mode or had a non-constant mode."""
    changed = 0
    name = "txopt_compare_training_mode_false"
    for node in model.graph.node:
        if node.op_type == "Dropout" and len(node.input) >= 3 and node.input[2]:
            node.input[2] = name
            changed += 1
    if changed:
        model.graph.initializer.append(
            onnx.numpy_helper.from_array(np.array(False), name))
    return changed


def run_onnxruntime(path, feeds):
    """Returns (outputs by name, note)."""
    note = ""
    model = onnx.load(path)
    if without_dropout(model):
        note += ", training-mode Dropout disabled on both sides"
    data = model.SerializeToString()
    try:
        session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    except Exception:  # onnxruntime raises its own exception types
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        session = ort.InferenceSession(data, options,
                                       providers=["CPUExecutionProvider"])
        note += ", onnxruntime without graph optimizations"
    names = [out.name for out in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds))), note


def compare(name, ours, ref):
    """Returns (error message or None, normwise relative error)."""
    ref = np.asarray(ref)
    if ours.shape != ref.shape:
        return f"output '{name}': shape {ours.shape} vs {ref.shape}", 0.0
    if not np.issubdtype(ref.dtype, np.floating):
        if not np.array_equal(ours, ref):
            return f"output '{name}': integer values differ", 0.0
        return None, 0.0
    ours = ours.astype(np.float64)
    ref = ref.astype(np.float64)
    if not np.array_equal(np.isnan(ours), np.isnan(ref)):
        return f"output '{name}': NaNs at different positions", float("inf")
    mask = ~np.isnan(ref)
    if ours.size == 0 or not mask.any():
        return None, 0.0
    if not np.array_equal(np.isinf(ours[mask]), np.isinf(ref[mask])) or \
            not np.array_equal(ours[mask][np.isinf(ours[mask])],
                               ref[mask][np.isinf(ref[mask])]):
        return f"output '{name}': infinities differ", float("inf")
    finite = mask & ~np.isinf(ref)
    scale = np.max(np.abs(ref[finite])) if finite.any() else 0.0
    diff = np.max(np.abs(ours[finite] - ref[finite])) if finite.any() else 0.0
    rel = diff / scale if scale > 0 else diff
    return None, rel


def check_model(path, args, workdir):
    model_name = os.path.splitext(os.path.basename(path))[0]
    mlir = os.path.join(workdir, model_name + ".mlir")
    imported = subprocess.run(
        [args.txopt, path, "--emit=tx", "--print-locations", "-q", "-o", mlir],
        capture_output=True, text=True)
    if imported.returncode != 0:
        return False, "import failed: " + imported.stderr.strip().splitlines()[-1] \
            if imported.stderr.strip() else "import failed"

    inputs = graph_inputs(onnx.load(path, load_external_data=False))
    values = make_inputs(inputs)
    command = [args.txopt_run, mlir, "--no-dropout", "--output-dir",
               os.path.join(workdir, model_name + ".out")]
    for name, value in values.items():
        file = os.path.join(workdir, model_name + "." + npy_file_name(name))
        np.save(file, value)
        command += ["--input", f"{name}={file}"]
    ran = subprocess.run(command, capture_output=True, text=True)
    if ran.returncode != 0:
        return False, "txopt-run failed: " + ran.stderr.strip()

    reference, note = run_onnxruntime(path, values)
    worst = 0.0
    scalars = []
    for name, ref in reference.items():
        file = os.path.join(workdir, model_name + ".out", npy_file_name(name))
        if not os.path.exists(file):
            return False, f"txopt-run wrote no output '{name}'"
        ours = np.load(file)
        error, rel = compare(name, ours, ref)
        if error:
            return False, error
        worst = max(worst, rel)
        if np.ndim(ref) == 0:
            scalars.append(f"{name} {float(ours):.6g} vs {float(ref):.6g}")
    if worst > args.rtol:
        return False, f"max rel err {worst:.2g} > {args.rtol:g}{note}"
    detail = "; ".join(scalars)
    return True, (f"{detail}, " if detail else "") + f"max rel err {worst:.2g}{note}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--txopt", required=True, help="path of txopt")
    parser.add_argument("--txopt-run", required=True, help="path of txopt-run")
    parser.add_argument("--models", required=True,
                        help="folder of .onnx models (the repo's fixtures are "
                             "in test/Inputs/models)")
    parser.add_argument("--rtol", type=float, default=1e-5)
    parser.add_argument("--keep", help="keep the intermediate files here")
    args = parser.parse_args()

    # Only the folder given: a fallback outside the repo would make the
    # result depend on the machine.
    models = []
    if os.path.isdir(args.models):
        models = sorted(os.path.join(args.models, f)
                        for f in os.listdir(args.models) if f.endswith(".onnx"))
    if not models:
        print("compare_onnxruntime: error: no .onnx models in " + args.models)
        return 1

    failed = 0
    with tempfile.TemporaryDirectory() as temp:
        workdir = args.keep or temp
        os.makedirs(workdir, exist_ok=True)
        for path in models:
            name = os.path.splitext(os.path.basename(path))[0]
            try:
                ok, detail = check_model(path, args, workdir)
            except Exception as e:  # report, then go on with the next model
                ok, detail = False, f"{type(e).__name__}: {e}"
            failed += not ok
            print(f"{name}: {'ok' if ok else 'FAIL'} ({detail})", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

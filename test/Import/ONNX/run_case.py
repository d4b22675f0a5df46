# SPDX-License-Identifier: Apache-2.0
"""What every check_*.py script of this folder does per case: save the ONNX
model and its .npy inputs, compile it with txopt, run it with txopt-run and
leave its outputs in a folder. The scripts import it (python puts a
script's own folder on sys.path); lit does not run it on its own."""
import os
import subprocess

import numpy as np
import onnx
from onnx import helper


def cast_there_and_back(name, x_type, to, back, n, opset, **attrs):
    """The model y = Cast(Cast(x, to=|to|, **|attrs|), to=|back|) of an
    input x of |n| elements of |x_type|: how the scripts read a type that
    has no .npy form through one that has."""
    graph = helper.make_graph(
        [helper.make_node("Cast", ["x"], ["c"], to=to, **attrs),
         helper.make_node("Cast", ["c"], ["y"], to=back)], name,
        [helper.make_tensor_value_info("x", x_type, [n])],
        [helper.make_tensor_value_info("y", back, [n])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def save_model(work, name, model):
    """Saves |model| as WORK/NAME.onnx and returns the path."""
    path = os.path.join(work, name + ".onnx")
    onnx.save(model, path)
    return path


def save_inputs(work, name, values):
    """Saves each (input name, array) of |values| as WORK/NAME_INPUT.npy and
    returns the txopt-run arguments that feed them."""
    args = []
    for n, v in values:
        npy = os.path.join(work, "%s_%s.npy" % (name, n))
        np.save(npy, v)
        args += ["--input", "%s=%s" % (n, npy)]
    return args


def compile_and_run(txopt, txopt_run, work, name, path, args):
    """Compiles the model at |path| with txopt and runs it with txopt-run
    with |args|. Returns the folder of its outputs (one NAME.npy each), or
    None after printing `NAME: FAIL <the tool's error>`."""
    mlir, out = os.path.join(work, name + ".mlir"), os.path.join(work, name)
    p = subprocess.run([txopt, path, "-o", mlir, "-q"], capture_output=True, text=True)
    if p.returncode == 0:
        p = subprocess.run([txopt_run, mlir, "--output-dir", out] + args,
                           capture_output=True, text=True)
    if p.returncode != 0:
        print("%s: FAIL %s" % (name, p.stderr.strip()))
        return None
    return out

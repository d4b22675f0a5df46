#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks `txopt --train` + `txopt-run --steps` against an independent AdamW.

The step function built by txopt (gradient, global norm, fused tx.adam) runs
N steps on one fixed batch. Independently, this script keeps its own
parameters and AdamW moments in numpy, asks the reference executor only for
the gradient of the *forward* at numpy's parameters (tx-differentiate on the
imported model, no optimizer, no step builder), and applies AdamW itself:

    m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
    p = p - lr wd p        (decoupled decay; rank >= 2 parameters only)
    p = p - lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)

in float32 (see adamw_f32). Both trajectories must agree within --tolerance
(max |difference| over every parameter element), and the loss must fall
below --fall of its first value.
"""

import argparse
import os
import re
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def run(cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit("command failed: %s\n%s%s" % (" ".join(cmd), result.stdout, result.stderr))
    return result.stdout


f32 = np.float32


def adamw_f32(p, g, m, v, t, wd):
    """One AdamW step in float32 arithmetic, one rounding per operation, in
    the order tx.adam documents (TxOptimOps.td). numpy's float32 +, -, *, /
    and sqrt are correctly rounded, so this is bit-exact wherever the
    executor is: needed because Adam turns gradient noise into steps of size
    lr (a key bias has an exact gradient of 0 and a noise gradient of 1e-9),
    so a one-ulp difference would grow into visible divergence.

    The hyper-parameters are Python floats, as in torch.optim: scalars are
    formed in double and rounded to float32 once (f32(1 - 0.999) = 0.001,
    not 1 - f32(0.999); 1 - b^t from the double beta, as torch's
    `1 - beta1 ** step`), while a multiply by beta uses f32(beta)."""
    b1, b2, eps, lr = BETA1, BETA2, EPS, ADAM_LR[0]
    one_minus_b1, one_minus_b2 = f32(1.0 - b1), f32(1.0 - b2)
    lr_wd = f32(float(lr) * wd)
    bc1 = f32(1.0 - b1 ** t)
    bc2 = f32(1.0 - b2 ** t)
    m1 = f32(b1) * m + one_minus_b1 * g
    v1 = f32(b2) * v + (one_minus_b2 * g) * g
    den = np.sqrt(v1 / bc2) + f32(eps)
    pd = p - lr_wd * p
    return pd - (lr * (m1 / bc1)) / den, m1, v1


# txopt --train's defaults (torch.optim.AdamW's).
BETA1, BETA2, EPS = 0.9, 0.999, 1e-8
ADAM_LR = [f32(1e-3)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--txopt", required=True)
    ap.add_argument("--txopt-opt", required=True)
    ap.add_argument("--txopt-run", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--tolerance", type=float, default=1e-5)
    ap.add_argument("--fall", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    w = lambda *p: os.path.join(args.work, *p)
    ADAM_LR[0] = f32(args.lr)

    # The step under test, and the plain forward gradient for the reference.
    run([args.txopt, args.model, "--train", "--lr=%r" % args.lr,
         "--weight-decay=%r" % args.weight_decay, "-q", "-o", w("step.mlir")])
    # With locations: tx-untie-parameters names the weights it unties after
    # the modules their locations name, as `txopt --train` does.
    run([args.txopt, args.model, "-q", "--print-locations", "-o", w("forward.mlir")])
    # The same cleanup the step gets after its gradient is built, so both
    # sides round identically: Adam turns gradient noise (e.g. of a key bias,
    # whose exact gradient is 0) into steps of size lr, so the gradients must
    # agree bit for bit for the trajectories to be comparable.
    run([args.txopt_opt, w("forward.mlir"),
         "--pass-pipeline=builtin.module(tx-untie-parameters,tx-differentiate,"
         "func.func(canonicalize,cse))",
         "-o", w("grad.mlir")])
    grad_ir = open(w("grad.mlir")).read()
    header = re.search(r"func\.func @(\w+_grad)\((.*?)\)\s*->", grad_ir, re.S)
    grad_fn = header.group(1)
    param_names = re.findall(r'tx\.name = "([^"]+)", tx\.parameter = @', header.group(2))

    # One fixed batch of token ids / labels for both sides.
    model = onnx.load(args.model)
    rng = np.random.default_rng(args.seed)
    batch = {}
    for inp in model.graph.input:
        dims = [d.dim_value for d in inp.type.tensor_type.shape.dim]
        batch[inp.name] = rng.integers(0, 512, size=dims, dtype=np.int64)
        np.save(w(inp.name + ".npy"), batch[inp.name])
    batch_flags = sum([["--input", "%s=%s" % (n, w(n + ".npy"))] for n in batch], [])

    out = run([args.txopt_run, w("step.mlir"), "--steps", str(args.steps),
               "--output-dir", w("txopt")] + batch_flags)
    losses = [float(x) for x in re.findall(r"^step \d+  loss (\S+)", out, re.M)]
    assert len(losses) == args.steps, out

    # Initial parameters: the ONNX initializers the parameters are named after.
    init = {t.name: numpy_helper.to_array(t).astype(np.float32) for t in model.graph.initializer}
    # An untied copy starts from its original's value.
    untied = re.search(r"tx\.untied_parameters = \{(.*?)\}", grad_ir)
    for original, copies in re.findall(r'"?([^",={}\s]+)"? = \[([^\]]*)\]',
                                       untied.group(1) if untied else ""):
        for copy in re.findall(r'"([^"]+)"', copies):
            init[copy] = init[original]
    params = {n: init[n].copy() for n in param_names}
    m = {n: np.zeros_like(p) for n, p in params.items()}
    v = {n: np.zeros_like(p) for n, p in params.items()}
    ref_losses = []
    for t in range(1, args.steps + 1):
        flags = list(batch_flags)
        for n, p in params.items():
            path = w("p_%d.npy" % param_names.index(n))
            np.save(path, p)
            flags += ["--input", "%s=%s" % (n, path)]
        text = run([args.txopt_run, w("grad.mlir"), "--function", grad_fn,
                    "--output-dir", w("grads"), "--print-limit", "0"] + flags)
        ref_losses.append(float(re.search(r"= (\S+)", text).group(1)))
        for i, n in enumerate(param_names):
            g = np.load(w("grads", "result%d.npy" % (i + 1))).astype(np.float32)
            wd = args.weight_decay if params[n].ndim >= 2 else 0.0
            params[n], m[n], v[n] = adamw_f32(params[n], g, m[n], v[n], t, wd)

    worst, where = 0.0, ""
    for n in param_names:
        mine = np.load(w("txopt", re.sub(r"[^A-Za-z0-9._-]", "_", n) + ".npy"))
        diff = float(np.max(np.abs(mine.astype(np.float64) - params[n])))
        if diff > worst:
            worst, where = diff, n
    # The two losses come from different IR (the step's forward went through
    # the step's cleanup): compare relative to the starting loss as well,
    # since a loss near 0 is a difference of large logits.
    loss_diff = max(abs(a - b) / (abs(b) + abs(ref_losses[0]))
                    for a, b in zip(losses, ref_losses))
    print("%d parameters, %d of them untied copies" % (
        len(param_names), sum(1 for n in param_names
                              if n not in {t.name for t in model.graph.initializer})))
    print("steps %d, loss %.6f -> %.6f (%.1f%% of start)" % (
        args.steps, losses[0], losses[-1], 100 * losses[-1] / losses[0]))
    print("params vs numpy AdamW: max |diff| %.3g at %s (tolerance %g)" % (worst, where, args.tolerance))
    print("loss vs reference trajectory: max |diff| / (|loss| + |loss_0|) %.3g" % loss_diff)
    ok = worst <= args.tolerance and losses[-1] < args.fall * losses[0] and loss_diff <= 1e-6
    print("adamw reference: %s" % ("ok" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

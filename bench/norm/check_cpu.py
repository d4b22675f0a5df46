#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""CPU check of the norm benchmark's training step (run by prepare.sh):
the step txopt builds from make_models.py's graph must compute the norm's
forward and its gradients, dx included. It compiles a small model of each
norm x dtype to tx IR (`txopt --train`), runs one step on txopt-run (the
CPU reference executor) with x and c given, and compares the loss and the
first Adam moments after step 1 (exp_avg = (1 - beta1) * grad, so b's
moment is 0.1 * dx summed over rows, a's 0.1 * (dx * x) summed over rows)
with PyTorch on the CPU in float64.

  check_cpu.py TXOPT TXOPT_RUN WORKDIR [ROWSxHIDDEN]
"""

import json
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_models  # noqa: E402

# Relative error allowed against the float64 reference: f32 steps round
# once per op; bf16 steps store x * a + b, y, dy and dx in bf16 (8 bits of
# mantissa: 2^-9 relative per rounding).
TOLERANCE = {"f32": 1e-4, "bf16": 1e-2}


def reference(norm, x, c):
    """Loss and parameter gradients of make_models.py's graph, float64."""
    rows, hidden = x.shape
    xt = torch.tensor(x, dtype=torch.float64)
    a = torch.ones(hidden, dtype=torch.float64, requires_grad=True)
    b = torch.zeros(hidden, dtype=torch.float64, requires_grad=True)
    gamma = torch.ones(hidden, dtype=torch.float64, requires_grad=True)
    beta = torch.zeros(hidden, dtype=torch.float64, requires_grad=True)
    h = xt * a + b
    if norm == "layer":
        y = F.layer_norm(h, (hidden,), gamma, beta, make_models.EPS)
        params = {"a": a, "b": b, "gamma": gamma, "beta": beta}
    else:
        y = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + make_models.EPS) * gamma
        params = {"a": a, "b": b, "gamma": gamma}
    terms = y * torch.tensor(c, dtype=torch.float64)
    loss = terms.sum()
    grads = torch.autograd.grad(loss, list(params.values()))
    # The loss is a sum of terms of both signs: its error is measured
    # against the sum of their magnitudes, not against the (cancelled) sum.
    return loss.item(), terms.abs().sum().item(), {k: g.numpy() for k, g in zip(params, grads)}


def relative(a, b):
    return float(np.linalg.norm(np.asarray(a, np.float64) - b) / max(np.linalg.norm(b), 1e-30))


def main():
    txopt, txopt_run, work = sys.argv[1:4]
    shape = sys.argv[4] if len(sys.argv) > 4 else "64x256"
    rows, hidden = (int(v) for v in shape.split("x"))
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(11)
    failed = False
    for norm in ("layer", "rms"):
        for dtype in ("f32", "bf16"):
            name = f"{norm}_{dtype}_{rows}x{hidden}"
            x = rng.standard_normal((rows, hidden)).astype(np.float32)
            c = rng.standard_normal((1, hidden)).astype(np.float32)
            if dtype == "bf16":
                # Feed values bf16 holds exactly, so the reference sees the
                # same inputs as the step (txopt-run rounds <f4 to bf16).
                x = (make_models.bf16_bits(x).astype(np.uint32) << 16).view(np.float32)
                c = (make_models.bf16_bits(c).astype(np.uint32) << 16).view(np.float32)
            make_models.onnx.save(make_models.make_model(norm, dtype, rows, hidden), f"{work}/{name}.onnx")
            np.save(f"{work}/{name}.x.npy", x)
            np.save(f"{work}/{name}.c.npy", c)
            subprocess.run([txopt, f"{work}/{name}.onnx", "--train", "-o", f"{work}/{name}.mlir",
                            f"--report={work}/{name}.report.json", "-q"], check=True)
            report = json.load(open(f"{work}/{name}.report.json"))
            out = f"{work}/{name}.out"
            run = subprocess.run([txopt_run, f"{work}/{name}.mlir", "--steps", "1",
                                  "--input", f"x={work}/{name}.x.npy",
                                  "--input", f"c={work}/{name}.c.npy", "--output-dir", out],
                                 check=True, capture_output=True, text=True)
            loss_ref, magnitude, grads = reference(norm, x, c)
            loss = float(np.load(f"{out}/loss.npy"))
            errors = {"loss": abs(loss - loss_ref) / magnitude}
            for param, g in grads.items():
                errors[f"d{param}"] = relative(np.load(f"{out}/{param}.exp_avg.npy") / 0.1, g)
            fused = report["fused"].get(f"{norm}_norm", 0), report["fused"].get(f"{norm}_norm_grad", 0)
            ok = max(errors.values()) <= TOLERANCE[dtype] and fused == (1, 1)
            failed |= not ok
            print(f"check_cpu: {name}: {'ok' if ok else 'FAILED'}  fused {norm}_norm/_grad "
                  f"{fused[0]}/{fused[1]}  " +
                  "  ".join(f"{k} rel {v:.1e}" for k, v in errors.items()) +
                  f"  (txopt-run: {run.stdout.strip().splitlines()[-1]})")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

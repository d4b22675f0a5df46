#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Compares a txopt training log (txopt-run --steps or txrun) with
torch_reference.py's log, and optionally the parameters they wrote.

    compare_torch.py CPU_OR_GPU_LOG TORCH_LOG [--rtol 1e-4]
        [--params TXOPT_DIR TORCH_DIR [--ptol 1e-4] [--noise-floor 1e-6]]

Losses: every step present in both logs (txrun prints only every
--log-every steps) must agree within --rtol relative. Gradient norms are
printed for information (txopt-run prints 6 decimals).

Parameters (--params): every DIR/<name>.npy that torch_reference wrote (not
the moments) is compared with the txopt file of the same name; the error of a
tensor is max|a - b| / max|b|, which must be within --ptol. Adam turns a
gradient that is exactly zero in exact arithmetic (the attention key bias:
softmax ignores a constant shift of the scores) into +-lr steps from
rounding noise of ~1e-9, so such elements differ by up to 2*steps*lr on any
two correct implementations. The table therefore also shows the error over
the elements whose gradient is real: those whose bias-free second moment
sqrt(exp_avg_sq) is above --noise-floor in the torch run (needs the
.exp_avg_sq.npy files); FAIL is decided on that column, and the count of
noise elements excluded is printed, with the number of real elements over
--ptol (">ptol") and the same error for the first moment exp_avg
(information only).

Prints PASS or FAIL with the worst step / tensor; exit status 0 on PASS.
"""
import argparse
import os
import re
import sys

import numpy as np

STEP = re.compile(r"^step (\d+)\s+loss (\S+)(?:\s+grad_norm (\S+))?")


def read_log(path):
    out = {}
    for line in open(path):
        m = STEP.match(line.strip())
        if m:
            out[int(m.group(1))] = (float(m.group(2)),
                                    float(m.group(3)) if m.group(3) else None)
    return out


def compare_losses(a_path, b_path, rtol):
    a, b = read_log(a_path), read_log(b_path)
    common = sorted(set(a) & set(b))
    if not common:
        print("FAIL: no common steps (%d in %s, %d in %s)" %
              (len(a), a_path, len(b), b_path))
        return False
    worst, worst_step, worst_norm = -1.0, None, 0.0
    for s in common:
        la, lb = a[s][0], b[s][0]
        rel = abs(la - lb) / max(abs(lb), 1e-30)
        if not np.isfinite(rel):
            rel = float("inf")
        if rel > worst:
            worst, worst_step = rel, s
        if a[s][1] is not None and b[s][1] is not None:
            worst_norm = max(worst_norm,
                             abs(a[s][1] - b[s][1]) / max(abs(b[s][1]), 1e-30))
    ok = worst <= rtol
    s = worst_step
    print("%s: losses of %d common steps within %g relative: worst %.3g at step %d "
          "(%.9g vs %.9g); grad_norm worst %.3g relative" %
          ("PASS" if ok else "FAIL", len(common), rtol, worst, s, a[s][0], b[s][0],
           worst_norm))
    return ok


def compare_params(tx_dir, torch_dir, ptol, floor):
    names = sorted(f[:-4] for f in os.listdir(torch_dir)
                   if f.endswith(".npy") and not f.endswith((".exp_avg.npy",
                                                             ".exp_avg_sq.npy")))
    if not names:
        print("FAIL: no parameters in %s" % torch_dir)
        return False
    ok = True
    worst_all, worst_real = (-1.0, None), (-1.0, None)
    print("%-44s %9s %9s %6s %6s %9s" % ("parameter", "err", "err(real)", "noise",
                                         ">ptol", "exp_avg"))
    for name in names:
        path = os.path.join(tx_dir, name + ".npy")
        if not os.path.exists(path):
            print("%-48s missing in %s" % (name, tx_dir))
            ok = False
            continue
        a = np.load(path).astype(np.float64)
        b = np.load(os.path.join(torch_dir, name + ".npy")).astype(np.float64)
        if a.shape != b.shape:
            print("%-48s shapes differ: %s vs %s" % (name, a.shape, b.shape))
            ok = False
            continue
        scale = max(np.max(np.abs(b)), 1e-30)
        diff = np.abs(a - b) / scale
        err = float(np.max(diff))
        real = np.ones(b.shape, dtype=bool)
        vpath = os.path.join(torch_dir, name + ".exp_avg_sq.npy")
        if os.path.exists(vpath):
            real = np.sqrt(np.load(vpath).astype(np.float64)) > floor
        err_real = float(np.max(diff[real])) if real.any() else 0.0
        noise = int(real.size - real.sum())
        over = int(np.sum(diff[real] > ptol))
        m_err = float("nan")
        ma = os.path.join(tx_dir, name + ".exp_avg.npy")
        mb = os.path.join(torch_dir, name + ".exp_avg.npy")
        if os.path.exists(ma) and os.path.exists(mb):
            m_a, m_b = np.load(ma).astype(np.float64), np.load(mb).astype(np.float64)
            m_err = float(np.max(np.abs(m_a - m_b)[real]) /
                          max(np.max(np.abs(m_b)), 1e-30)) if real.any() else 0.0
        print("%-44s %9.3g %9.3g %6d %6d %9.3g" % (name, err, err_real, noise, over,
                                                   m_err))
        if err > worst_all[0]:
            worst_all = (err, name)
        if err_real > worst_real[0]:
            worst_real = (err_real, name)
        if err_real > ptol:
            ok = False
    print("%s: %d parameters within %g of each tensor's largest magnitude "
          "(elements with a real gradient): worst %.3g (%s); over all elements "
          "worst %.3g (%s)" %
          ("PASS" if ok else "FAIL", len(names), ptol, worst_real[0], worst_real[1],
           worst_all[0], worst_all[1]))
    return ok


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("txopt_log")
    p.add_argument("torch_log")
    p.add_argument("--rtol", type=float, default=1e-4)
    p.add_argument("--params", nargs=2, metavar=("TXOPT_DIR", "TORCH_DIR"))
    p.add_argument("--ptol", type=float, default=1e-4)
    p.add_argument("--noise-floor", type=float, default=1e-6)
    args = p.parse_args()
    ok = compare_losses(args.txopt_log, args.torch_log, args.rtol)
    if args.params:
        ok = compare_params(args.params[0], args.params[1], args.ptol,
                            args.noise_floor) and ok
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

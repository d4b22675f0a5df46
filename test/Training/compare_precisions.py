#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Trains one model for N steps at several --precision settings on the same
token stream (txopt --train, txopt-run --steps --data, all emulated
bit-exactly on the CPU reference executor) and checks that each loss curve
ends within --tolerance (relative) of the --reference one (f32 by default):
the mean loss over the last --window steps is compared, since single steps
are noisy.

A mode `P+attention` is `--precision=P --fp8-attention`. Its first step must
also be within 1e-3 of mode P's and differ from it: the same GEMMs, only the
attention in FP8, so the comparison shows the attention's own numerics (and
that the flag changed something).

compare_precisions.py --model M.onnx --data T.npy --txopt BIN --txopt-run BIN
    --work DIR [--steps 200] [--precisions bf16,fp8] [--tolerance 0.02]
    [--reference fp32]"""
import argparse
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--txopt", required=True)
    ap.add_argument("--txopt-run", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--window", type=int, default=20)
    ap.add_argument("--precisions", default="bf16,fp8")
    ap.add_argument("--tolerance", type=float, default=0.02)
    ap.add_argument("--reference", default="fp32",
                    help="the mode every curve is compared with")
    ap.add_argument("--lr", type=float, default=None,
                    help="learning rate (txopt --lr; default: txopt's)")
    ap.add_argument("--below", type=float, default=None,
                    help="the f32 curve must end (mean of the last --window "
                         "steps) below this loss, else the comparison is of "
                         "curves that learned nothing")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    modes = ["fp32"] + [p for p in args.precisions.split(",") if p]

    def train(mode):
        step = os.path.join(args.work, mode + ".mlir")
        lr = ["--lr=%g" % args.lr] if args.lr else []
        precision, _, extra = mode.partition("+")
        flags = ["--fp8-attention"] if extra == "attention" else []
        subprocess.run([args.txopt, args.model, "--train", "--precision=" + precision,
                        "-q", "-o", step] + lr + flags, check=True)
        out = subprocess.run([args.txopt_run, step, "--steps", str(args.steps),
                              "--data", args.data], check=True,
                             capture_output=True, text=True).stdout
        return [float(x) for x in re.findall(r"^step \d+  loss (\S+)", out, re.M)]

    with ThreadPoolExecutor(len(modes)) as pool:
        curves = dict(zip(modes, pool.map(train, modes)))
    tail = {m: sum(c[-args.window:]) / args.window for m, c in curves.items()}
    ok = True
    reference = args.reference
    for mode in modes:
        rel = abs(tail[mode] - tail[reference]) / tail[reference]
        good = len(curves[mode]) == args.steps and rel <= args.tolerance
        ok &= good
        print("%-5s loss %.4f -> %.4f (mean of last %d steps), vs %s %+.2f%% %s" % (
            mode, curves[mode][0], tail[mode], args.window,
            "f32" if reference == "fp32" else reference, 100 * rel,
            "ok" if good else "FAILED"))
    for mode in modes:
        base = mode.partition("+")[0]
        if mode == base or base not in curves:
            continue
        first, base_first = curves[mode][0], curves[base][0]
        rel = abs(first - base_first) / abs(base_first)
        good = 0 < rel <= 1e-3
        ok &= good
        print("%s step 1: loss %.6f vs %s %.6f, relative %.2e %s" % (
            mode, first, base, base_first, rel, "ok" if good else "FAILED"))
    if args.below is not None:
        learned = tail["fp32"] < args.below
        ok &= learned
        print("fp32 learned: %.4f %s %.4f %s" % (
            tail["fp32"], "<" if learned else ">=", args.below,
            "ok" if learned else "FAILED"))
    print("precision curves: %s" % ("ok" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

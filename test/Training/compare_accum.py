# SPDX-License-Identifier: Apache-2.0
"""Compares the --log records of two runs step by step: gradient
accumulation over N micro-batches of B against one step on N * B (the same
tokens). Both are means over the same tokens, so loss and grad_norm agree
up to f32 rounding of the different summation order.

Usage: compare_accum.py ACCUM.jsonl PLAIN.jsonl [REL_TOL]  (default 1e-5)
Prints the largest relative differences; exit 1 when one exceeds REL_TOL.
"""
import json
import sys


def records(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    accum, plain = records(sys.argv[1]), records(sys.argv[2])
    tol = float(sys.argv[3]) if len(sys.argv) > 3 else 1e-5
    if len(accum) != len(plain) or not accum:
        print(f"step counts differ: {len(accum)} vs {len(plain)}")
        return 1
    worst = {"loss": (0.0, 0), "grad_norm": (0.0, 0)}
    for a, p in zip(accum, plain):
        assert a["step"] == p["step"]
        for key in worst:
            rel = abs(a[key] - p[key]) / max(abs(p[key]), 1e-30)
            if rel > worst[key][0]:
                worst[key] = (rel, a["step"])
    print(f"{len(accum)} steps: max relative difference loss {worst['loss'][0]:.2e} "
          f"(step {worst['loss'][1]}), grad_norm {worst['grad_norm'][0]:.2e} "
          f"(step {worst['grad_norm'][1]})")
    bad = [k for k, (rel, _) in worst.items() if rel > tol]
    if bad:
        print(f"MISMATCH: {', '.join(bad)} beyond {tol:g}")
        return 1
    print(f"match within {tol:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

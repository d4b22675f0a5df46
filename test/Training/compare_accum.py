# SPDX-License-Identifier: Apache-2.0
"""Compares the --log records of two runs step by step: gradient
accumulation over N micro-batches of B against one step on N * B (the same
tokens). Both are means over the same tokens, so loss and grad_norm agree
up to f32 rounding of the different summation order. Validation records
({"step": N, "val_loss": L}, from --val-data) are compared too; both logs
must hold the same kinds of records (training step, validation, skipped
step) for the same steps in the same order.

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
    if any("val_loss" in p for p in plain):
        worst["val_loss"] = (0.0, 0)
    for a, p in zip(accum, plain):
        kind = [(r["step"], "val_loss" in r, r.get("skipped", False)) for r in (a, p)]
        if kind[0] != kind[1]:
            print(f"records differ: {a} vs {p}")
            return 1
        for key in (k for k in worst if k in p):
            if a.get(key) is None or p[key] is None:  # not finite (logged null)
                if a.get(key) is not p[key]:
                    print(f"step {p['step']}: {key} {a.get(key)} vs {p[key]}")
                    return 1
                continue
            rel = abs(a[key] - p[key]) / max(abs(p[key]), 1e-30)
            if rel > worst[key][0]:
                worst[key] = (rel, a["step"])
    unit = "records" if "val_loss" in worst else "steps"
    print(f"{len(accum)} {unit}: max relative difference " +
          ", ".join(f"{k} {rel:.2e} (step {step})" for k, (rel, step) in worst.items()))
    bad = [k for k, (rel, _) in worst.items() if rel > tol]
    if bad:
        print(f"MISMATCH: {', '.join(bad)} beyond {tol:g}")
        return 1
    print(f"match within {tol:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Compares a reduced-precision loss curve with the f32 one (txrun logs).

compare_curves.py [--vocab V] [--tolerance T] [--tail N] F32_LOG OTHER_LOG...
Passes when the f32 run learned (mean loss of its last N steps at least 1
below ln V, uniform guessing) and each other run's last-N mean is within T
(relative) of f32's: the curves are compared only once they mean something.
The tail is long (default 500 steps) because two runs of one model drift
apart by rounding alone (atomics make even f32 runs differ in the last
bits, and training amplifies it): their short-window means differ by a few
percent before the loss settles.
"""
import argparse
import math
import re
import sys

STEP = re.compile(r"^step (\d+)\s+loss (\S+)")


def curve(path):
    out = []
    for line in open(path):
        m = STEP.match(line.strip())
        if m:
            out.append(float(m.group(2)))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vocab", type=int, required=True)
    ap.add_argument("--tolerance", type=float, default=0.02)
    ap.add_argument("--tail", type=int, default=500)
    ap.add_argument("f32")
    ap.add_argument("others", nargs="+")
    a = ap.parse_args()
    ref = curve(a.f32)
    n = a.tail
    if len(ref) < n:
        print(f"f32 curve has {len(ref)} steps; need {n}")
        return 1
    tail = sum(ref[-n:]) / n
    uniform = math.log(a.vocab)
    ok = tail < uniform - 1.0
    print(f"f32   first {ref[0]:.4f}  last-{n} mean {tail:.4f}  (uniform guessing {uniform:.4f})"
          f"  {'learned' if ok else 'DID NOT LEARN'}")
    for path in a.others:
        c = curve(path)
        if len(c) != len(ref):
            print(f"{path}: {len(c)} steps, f32 has {len(ref)}")
            ok = False
            continue
        t = sum(c[-n:]) / n
        rel = abs(t - tail) / tail
        good = math.isfinite(t) and rel <= a.tolerance
        ok &= good
        print(f"{path}: last-{n} mean {t:.4f}  vs f32 {rel:.2%}  {'ok' if good else 'FAIL'}")
    print("precision curves:", "ok" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

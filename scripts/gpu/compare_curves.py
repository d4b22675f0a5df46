#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Compares reduced-precision loss curves with f32 ones (txrun logs).

compare_curves.py --vocab V [--tolerance T] [--sigmas K] [--tail N] --runs R F32_LOGS... OTHER_LOGS...
The logs come in groups of R runs (different seeds: another data order)
per precision, f32 first. A precision's figure is the mean over its runs
of each run's mean loss over its last N steps. Passes when the f32 runs
learned (figure at least 1 below ln V, uniform guessing) and every other
precision's figure is within the bound (relative) of f32's: curves are
compared only once they mean something. Several seeds and a long tail
because one run of a small model drifts from another by rounding alone
(training amplifies last-bit differences): the seed-to-seed spread of f32
is printed so a reader sees what a difference is worth.

The bound is T, or with --sigmas K (R >= 3) the larger of T and K
standard errors of the difference of the two figures, estimated from the
runs' own spread: the figure of a few runs moves by its noise alone. (The
Llama curves of check.sh, 6000 steps: a run's tail sits ~3% from another
seed's, so two 3-run figures of the same compiler differ by ~2% by chance:
DeviceLog session 41, run 3, where 8 runs of two compilers stood 0.6-0.8%
apart after 3 runs had stood 2.17% apart.)
"""
import argparse
import math
import re
import statistics
import sys

STEP = re.compile(r"^step (\d+)\s+loss (\S+)")


def curve(path):
    seen, out = set(), []
    for line in open(path):
        m = STEP.match(line.strip())
        if m and m.group(1) not in seen:
            seen.add(m.group(1))
            out.append(float(m.group(2)))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vocab", type=int, required=True)
    ap.add_argument("--tolerance", type=float, default=0.02)
    ap.add_argument("--sigmas", type=float, default=0.0)
    ap.add_argument("--tail", type=int, default=500)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("logs", nargs="+")
    a = ap.parse_args()
    if len(a.logs) % a.runs or len(a.logs) < 2 * a.runs:
        print(f"expected groups of {a.runs} logs, f32 first and at least one more")
        return 1
    if a.sigmas and a.runs < 3:
        print("--sigmas needs at least 3 runs a precision to estimate their spread")
        return 1
    groups = [a.logs[i:i + a.runs] for i in range(0, len(a.logs), a.runs)]
    figures = []
    for group in groups:
        tails = []
        for path in group:
            c = curve(path)
            if len(c) < a.tail or not all(math.isfinite(x) for x in c[-a.tail:]):
                print(f"{path}: {len(c)} steps (need {a.tail}) or non-finite losses")
                return 1
            tails.append(sum(c[-a.tail:]) / a.tail)
        figures.append((statistics.mean(tails), tails))
    ref, ref_tails = figures[0]
    uniform = math.log(a.vocab)
    ok = ref < uniform - 1.0
    spread = (max(ref_tails) - min(ref_tails)) / ref
    print(f"f32   last-{a.tail} mean over {a.runs} seeds {ref:.4f} (runs "
          f"{', '.join(f'{t:.4f}' for t in ref_tails)}; spread {spread:.2%}); "
          f"uniform guessing {uniform:.4f}: {'learned' if ok else 'DID NOT LEARN'}")
    for group, (fig, tails) in zip(groups[1:], figures[1:]):
        rel = abs(fig - ref) / ref
        bound, why = a.tolerance, ""
        if a.sigmas:
            # Standard error of the difference of two means of a.runs runs.
            error = math.sqrt((statistics.variance(ref_tails) + statistics.variance(tails))
                              / a.runs) / ref
            bound = max(a.tolerance, a.sigmas * error)
            why = f" (the larger of {a.tolerance:.0%} and {a.sigmas:g} x {error:.2%})"
        good = rel <= bound
        ok &= good
        print(f"{group[0]}...: mean {fig:.4f} (runs {', '.join(f'{t:.4f}' for t in tails)})"
              f"  vs f32 {rel:.2%}, bound {bound:.2%}{why}  {'ok' if good else 'FAIL'}")
    print("precision curves:", "ok" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

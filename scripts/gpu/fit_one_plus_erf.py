#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The constants of the GPU kernels' `1 + erf(u)` (EmitArithmetic.cpp,
emitOnePlusErf), and the check of their accuracy.

GELU and its gradient write 0.5 * x * (1 + erf(x / sqrt 2)). libdevice's erff
is some 28 instructions a value (two polynomials chosen lane by lane, and a
branch), which made the GELU kernels issue-bound. The kernels instead compute

    1 + erf(u) = 2 - erfc(t) for u >= 0, erfc(t) for u < 0,   t = |u|,
    erfc(t)    = 2^(t * P(t)) for t < 4, 0 from t = 4 on,

P a polynomial of degree 8 fitted here to log2(erfc(t)) / t on [0, 4]
(weighted least squares iterated towards the minimax error of erf, Lawson's
method), evaluated in f32 with fused multiply-adds; erfc(4) = 1.5e-8 is under
half an ulp of 1.

The check reads the constants EmitArithmetic.cpp ships, evaluates the formula
as the GPU does (f32 FMA Horner, an ex2.approx with the 2-ulp relative error
PTX documents) over 2M values of u, and prints its error beside that of erf
rounded to f32 and then added to 1 (libdevice's at best). Exit status 1 if
the error exceeds the bounds EmitArithmetic.cpp states.

Usage: fit_one_plus_erf.py [EmitArithmetic.cpp]   check the shipped constants
       fit_one_plus_erf.py --fit                  fit them again and print them
(numpy only)
"""
import os
import re
import math
import sys

import numpy as np

DEGREE = 8
LIMIT = 4.0
f32 = np.float32
erf = np.frompyfunc(math.erf, 1, 1)
erfc = np.frompyfunc(math.erfc, 1, 1)


def fit():
    n = 6000
    t = (LIMIT / 2) * (1 - np.cos(np.pi * (np.arange(n) + 0.5) / n))
    tail = erfc(t).astype(np.float64)
    target = np.log2(tail) / t
    weight = tail * math.log(2) * t  # d erf = erfc * ln2 * t * dP
    v = np.vander(t, DEGREE + 1, increasing=True)
    lawson = np.ones(n)
    for _ in range(400):
        w = np.sqrt(lawson) * weight
        c, *_ = np.linalg.lstsq(v * w[:, None], target * w, rcond=None)
        err = np.abs(v @ c - target) * weight
        lawson *= err
        lawson /= lawson.sum()
    return c.astype(np.float32)


def fma(a, b, c):  # one rounding, as fma.rn.f32 (the f64 product is exact)
    return (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)).astype(np.float32)


def one_plus_erf(u, c, rng):
    t = np.abs(u)
    p = np.full_like(t, c[-1])
    for k in range(len(c) - 2, -1, -1):
        p = fma(p, t, np.full_like(t, c[k]))
    e = (p * t).astype(np.float32)
    ex2_error = 2.0 ** -22 * rng.uniform(-1, 1, e.shape)
    y = (np.exp2(e.astype(np.float64)) * (1 + ex2_error)).astype(np.float32)
    y = np.where(t >= f32(LIMIT), f32(0), y)
    return np.where(u >= 0, (f32(2) - y).astype(np.float32), y)


def shipped_constants(path):
    text = open(path).read()
    m = re.search(r"kLog2ErfcOverT\[\] = \{([^}]*)\}", text)
    if not m:
        raise SystemExit("fit_one_plus_erf.py: no kLog2ErfcOverT[] in " + path)
    return np.array([float.fromhex(v.strip().rstrip("f")) for v in m.group(1).split(",")], dtype=np.float32)


def main():
    if sys.argv[1:] == ["--fit"]:
        c = fit()
        print("constants (C++, lowest degree first):")
        print("  " + ", ".join("%sf" % float(x).hex() for x in c))
        return 0
    source = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "../../lib/Target/CUDA/EmitArithmetic.cpp")
    c = shipped_constants(source)
    if len(c) != DEGREE + 1:
        print("fit_one_plus_erf.py: %d constants in %s, expected %d" % (len(c), source, DEGREE + 1), file=sys.stderr)
        return 1
    rng = np.random.default_rng(7)
    u = np.concatenate([rng.uniform(-5, 5, 1_600_000),
                        np.exp(rng.uniform(-25, 1.7, 400_000)) * rng.choice([-1, 1], 400_000),
                        np.array([0.0, -0.0, 4.0, -4.0, 3.99, -3.99, 1e-30, -1e-30])]).astype(np.float32)
    ud = u.astype(np.float64)
    exact = np.where(ud >= 0, 2 - erfc(ud).astype(np.float64), erfc(-ud).astype(np.float64))
    ours = one_plus_erf(u, c, rng).astype(np.float64)
    rounded_erf = (f32(1) + erf(ud).astype(np.float32)).astype(np.float64)
    middle = (ud > -4) & (ud < -0.5)
    ours_abs = np.abs(ours - exact).max()
    ours_rel = (np.abs(ours - exact) / exact)[middle].max()
    print("1 + erf(u), %d values of u:" % len(u))
    print("  this formula:          max abs error %.2e, relative for -4 < u < -0.5 %.2e" % (ours_abs, ours_rel))
    print("  f32 erf, then + 1:     max abs error %.2e, relative for -4 < u < -0.5 %.2e"
          % (np.abs(rounded_erf - exact).max(), (np.abs(rounded_erf - exact) / exact)[middle].max()))
    # The bounds EmitArithmetic.cpp states.
    if ours_abs > 4e-7 or ours_rel > 0.03:
        print("fit_one_plus_erf.py: error above the stated bounds (4e-7 absolute, 3% relative)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

# SPDX-License-Identifier: Apache-2.0
"""tx.dropout on the reference executor against an independent transcription
of the mask formula in tx.dropout's description (plain Python integers, no
numpy), which the GPU code generator implements too:

    s = seed + key * 0x2545F4914F6CDD1D                 (wrapping uint64)
    z = s + (i + 1) * 0x9E3779B97F4A7C15
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
    z = (z ^ (z >> 27)) * 0x94D049BB133111EB
    z = z ^ (z >> 31)
    keep = (z >> 11) * 2^-53 >= ratio,   y = keep ? f32(x * (1 / (1 - ratio))) : 0

1. Every element of a rank-3 tensor (row-major index i) for (seed, key)
   pairs that exercise the wrapping: negative seeds and keys (their uint64
   bits), keys of the form seed * 2^32 + step that txopt-run feeds, the
   largest i64. Values must match bit for bit.
2. Masks differ between keys and between seeds of one shape, and repeat for
   the same (seed, key).
3. The kept fraction of 200000 elements is within 4 sigma of 1 - ratio for
   several (seed, key, ratio).

Prints one line per check and exits 1 on the first disagreement.
"""

import argparse
import math
import os
import struct
import subprocess
import sys

M64 = (1 << 64) - 1


def uniform(seed, key, index):
    z = (seed + key * 0x2545F4914F6CDD1D) & M64
    z = (z + (index + 1) * 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    z ^= z >> 31
    return (z >> 11) * 2.0**-53


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def expected(seed, key, ratio, xs):
    r = f32(ratio)
    scale = 1.0 / (1.0 - r)
    return [f32(x * scale) if uniform(seed & M64, key & M64, i) >= r else 0.0
            for i, x in enumerate(xs)]


def read_npy_f32(path):
    """The data of a little-endian f32 .npy file, as Python floats."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:6] == b"\x93NUMPY", path
    header_len = struct.unpack("<H", data[8:10])[0]
    header = data[10:10 + header_len].decode()
    assert "'<f4'" in header and "False" in header, header
    body = data[10 + header_len:]
    return list(struct.unpack("<%df" % (len(body) // 4), body))


def run(args, model, function, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    subprocess.run([args.txopt_run, model, "--function", function,
                    "--output-dir", out_dir],
                   check=True, stdout=subprocess.DEVNULL)


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


SHAPE = (3, 5, 8)
# Exactly representable, distinct inputs, so the scale is checked too.
XS = [(i % 13 + 1) * 0.125 * (-1 if i % 3 == 0 else 1)
      for i in range(SHAPE[0] * SHAPE[1] * SHAPE[2])]
CASES = [  # seed, key, ratio
    (42, 0, 0.5),
    (42, 1, 0.5),
    (43, 1, 0.5),
    (7, (3 << 32) + 5, 0.1),
    (-5, -1, 0.3),
    (0x7FFFFFFFFFFFFFFF, 0x7FFFFFFFFFFFFFFF, 0.25),
    (-0x8000000000000000, 123456789, 0.75),
]


def run_dropouts(args, work, name, t, setup, cases):
    """Writes @NAME: the lines |setup| define %x of type |t|, then one
    tx.dropout of %x per (seed, key, ratio) of |cases|, returned as caseN;
    runs it and returns the folder of the caseN.npy outputs."""
    lines = ["func.func @%s() -> (%s) {" % (name, ", ".join(
        "%s {tx.name = \"case%d\"}" % (t, n) for n in range(len(cases))))] + setup
    for n, (seed, key, ratio) in enumerate(cases):
        lines.append("  %%k%d = tx.constant dense<%d> : tensor<i64>" % (n, key))
        lines.append("  %%y%d = tx.dropout %%x, %%k%d ratio(%r) seed(%d) : %s"
                     % (n, n, ratio, seed, t))
    lines.append("  return %s : %s" % (
        ", ".join("%%y%d" % n for n in range(len(cases))),
        ", ".join([t] * len(cases))))
    lines.append("}")
    model = os.path.join(work, name + ".mlir")
    with open(model, "w") as f:
        f.write("\n".join(lines) + "\n")
    out = os.path.join(work, name)
    run(args, model, name, out)
    return out


def check_masks(args, work):
    t = "tensor<%sxf32>" % "x".join(map(str, SHAPE))
    dense = ", ".join(repr(x) for x in XS)
    out = run_dropouts(args, work, "masks", t, [
        "  %%flat = tx.constant dense<[%s]> : tensor<%dxf32>" % (dense, len(XS)),
        "  %%x = tx.reshape %%flat : tensor<%dxf32> -> %s" % (len(XS), t)], CASES)
    masks = []
    for n, (seed, key, ratio) in enumerate(CASES):
        got = read_npy_f32(os.path.join(out, "case%d.npy" % n))
        want = expected(seed, key, ratio, XS)
        for i, (g, w) in enumerate(zip(got, want)):
            if struct.pack("<f", g) != struct.pack("<f", w):
                fail("seed %d key %d ratio %r element %d: executor %r, formula %r"
                     % (seed, key, ratio, i, g, w))
        masks.append([g != 0 for g in got])
    print("masks: %d (seed, key) cases x %d elements match the formula bit for bit"
          % (len(CASES), len(XS)))
    if masks[0] == masks[1]:
        fail("keys 0 and 1 gave the same mask")
    if masks[1] == masks[2]:
        fail("seeds 42 and 43 gave the same mask under one key")
    print("masks: another key or another seed gives another mask")


def check_fraction(args, work):
    n = 200000
    cases = [(1, 0, 0.1), (1, 1, 0.1), (99, (1 << 32) + 7, 0.5), (-3, -9, 0.9)]
    t = "tensor<%dxf32>" % n
    out = run_dropouts(args, work, "fraction", t,
                       ["  %%x = tx.constant dense<1.0> : %s" % t], cases)
    for c, (seed, key, ratio) in enumerate(cases):
        kept = sum(1 for v in read_npy_f32(os.path.join(out, "case%d.npy" % c))
                   if v != 0)
        p = 1 - f32(ratio)
        sigma = math.sqrt(n * p * (1 - p))
        deviation = (kept - n * p) / sigma
        if abs(deviation) > 4:
            fail("seed %d key %d ratio %r: kept %d of %d, %.2f sigma from %.0f"
                 % (seed, key, ratio, kept, n, deviation, n * p))
    print("kept fraction: %d cases of %d elements within 4 sigma of 1 - ratio"
          % (len(cases), n))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--txopt-run", default="txopt-run")
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    check_masks(args, args.work)
    check_fraction(args, args.work)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks the losses txopt-run prints for step-inputs.test's dropout step.

The forward is loss = sum(dropout(w, ratio 0.5, seed 5)) over w = 64 ones
and the run uses --lr 0, so w stays ones and each step's loss is
2 * (kept elements): it reveals the mask, hence the key txopt-run fed.

  fresh SEED: step k (from 0) must use rng_key = SEED * 2^32 + k, the
              formula of docs/Training.md (transcribed here independently).
  fixed KEY:  every step must use KEY (an --input rng_key).
Prints one line; exits 1 on a mismatch. Reads txopt-run's output on stdin.
"""
import re
import sys

M64 = (1 << 64) - 1
OP_SEED, RATIO, N = 5, 0.5, 64


def uniform(seed, key, index):
    z = (seed + key * 0x2545F4914F6CDD1D) & M64
    z = (z + (index + 1) * 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    z ^= z >> 31
    return (z >> 11) * 2.0**-53


def loss(key):
    return 2.0 * sum(uniform(OP_SEED, key & M64, i) >= RATIO for i in range(N))


mode, value = sys.argv[1], int(sys.argv[2])
losses = [float(m.group(1)) for m in
          re.finditer(r"^step \d+  loss (\S+)", sys.stdin.read(), re.M)]
if mode == "fresh":
    keys = [((value << 32) + k) & M64 for k in range(len(losses))]
else:
    keys = [value] * len(losses)
want = [loss(k) for k in keys]
if losses != want:
    print("MISMATCH: losses %s, expected %s for keys %s" % (losses, want, keys))
    sys.exit(1)
print("%s keys: %d losses match (%s distinct)" % (
    mode, len(losses), len(set(losses))))

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks the lr of every step of a --log JSONL file against the schedule's
formula (docs/Training.md), rounded to float32 as the step reads it:

check_schedule.py LOG KIND LR[f] WARMUP DECAY_STEPS MIN_LR [FIRST_STEP]"""
import json
import math
import sys

import numpy as np


def lr_at(kind, lr, warmup, decay, min_lr, s):
    if warmup > 0 and s <= warmup:
        return lr * s / warmup
    if kind == "constant":
        return lr
    if s >= decay:
        return min_lr
    p = (s - warmup) / (decay - warmup)
    if kind == "cosine":
        return min_lr + 0.5 * (1.0 + math.cos(math.pi * p)) * (lr - min_lr)
    return lr + p * (min_lr - lr)


path, kind = sys.argv[1], sys.argv[2]
# "0.01f": the compiled lr, an f32 (tx.init) widened to double.
lr = float(np.float32(sys.argv[3][:-1])) if sys.argv[3].endswith("f") else float(sys.argv[3])
warmup, decay, min_lr = int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
first = int(sys.argv[7]) if len(sys.argv) > 7 else 1
records = [json.loads(line) for line in open(path)]
steps = [r["step"] for r in records]
if steps != list(range(first, first + len(records))):
    sys.exit(f"steps {steps} are not consecutive from {first}")
for r in records:
    want = float(np.float32(lr_at(kind, lr, warmup, decay, min_lr, r["step"])))
    got = r["lr"]
    if np.float32(got) != np.float32(want):
        sys.exit(f"step {r['step']}: lr {got!r}, the formula gives {want!r}")
    for key in ("loss", "grad_norm", "ms"):
        if key not in r:
            sys.exit(f"step {r['step']}: no {key!r} in {r}")
print(f"{kind} schedule: {len(records)} steps match the formula "
      f"(first {records[0]['lr']:.6g}, last {records[-1]['lr']:.6g})")

# SPDX-License-Identifier: Apache-2.0
"""Checks a --log of a run on a one-window stream with --val-data on the
same stream and --eval-every 1: the validation loss after step s (0: before
the first) must equal the loss step s + 1 reports, exactly in f32 (both
are the same forward on the same batch and parameters).

Usage: check_eval.py LOG.jsonl; exit 1 on a mismatch."""
import json
import sys

import numpy as np

records = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
train = {r["step"]: r["loss"] for r in records if "loss" in r}
val = {r["step"]: r["val_loss"] for r in records if "val_loss" in r}
pairs = [(s, val[s], train[s + 1]) for s in sorted(val) if s + 1 in train]
bad = [(s, v, t) for s, v, t in pairs if np.float32(v) != np.float32(t)]
if not pairs or bad:
    print(f"MISMATCH (step, val_loss, next step's loss): {bad or 'no pairs'}")
    sys.exit(1)
print(f"{len(pairs)} validation losses equal the next step's loss exactly (f32)")

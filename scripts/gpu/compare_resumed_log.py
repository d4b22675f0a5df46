#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks that a resumed run continued bit for bit: every record of the
uninterrupted run's --log after step FROM (training: loss, grad_norm, lr;
validation: val_loss) is in the resumed run's log with the same values,
and the resumed log reaches the uninterrupted run's last step.

  compare_resumed_log.py FULL.jsonl RESUMED.jsonl FROM

Exit 1 when a record differs or is missing (or there is none to compare)."""
import json
import sys


def records(path):
    out = {}
    for line in open(path):
        if line.strip():
            x = json.loads(line)
            key = ("val", x["step"]) if "val_loss" in x else ("train", x["step"])
            out[key] = (x.get("val_loss"), x.get("loss"), x.get("grad_norm"), x.get("lr"))
    return out


full, resumed, start = records(sys.argv[1]), records(sys.argv[2]), int(sys.argv[3])
keys = sorted(k for k in full if k[1] > start)
differ = [k for k in keys if full[k] != resumed.get(k)]
last = max((k for k in full if k[0] == "train"), key=lambda k: k[1], default=None)
print(f"{len(keys)} records after step {start} compared with the resumed run; "
      f"differing or missing: {differ[:5]}")
sys.exit(0 if keys and not differ and last in resumed else 1)

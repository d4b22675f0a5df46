#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Reads `step N  loss L ...` lines on stdin; checks last loss < FRACTION * first."""
import re
import sys

fraction = float(sys.argv[1])
losses = [float(m.group(1)) for m in re.finditer(r"^step \d+  loss (\S+)", sys.stdin.read(), re.M)]
if len(losses) < 2:
    sys.exit("expected at least two steps, got %d" % len(losses))
ok = losses[-1] < fraction * losses[0]
print("loss %s: %.6f -> %.6f over %d steps (threshold %g of start)" % (
    "falls" if ok else "DOES NOT FALL", losses[0], losses[-1], len(losses), fraction))
sys.exit(0 if ok else 1)

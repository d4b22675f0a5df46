#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""same_outputs.py BEFORE AFTER: the .npy files under the two folders are
the same set, each pair bit-identical, and none is all zeros. Prints
"N outputs bit-identical, none all zeros", or each difference (exit 1)."""
import os
import sys

import numpy as np

before, after = sys.argv[1], sys.argv[2]
def files(root):
    return sorted(os.path.relpath(os.path.join(d, f), root)
                  for d, _, fs in os.walk(root) for f in fs if f.endswith(".npy"))
names = files(before)
bad = []
if names != files(after) or not names:
    bad.append(f"output sets differ: {names} vs {files(after)}")
for name in names:
    a, b = np.load(os.path.join(before, name)), np.load(os.path.join(after, name))
    if a.dtype != b.dtype or a.shape != b.shape or a.tobytes() != b.tobytes():
        bad.append(f"{name}: differs")
    elif not np.any(a):
        bad.append(f"{name}: all zeros")
print("\n".join(bad) if bad else f"{len(names)} outputs bit-identical, none all zeros")
sys.exit(1 if bad else 0)

# SPDX-License-Identifier: Apache-2.0
"""padded-vocabulary.test: txopt-run's final state (one .npy a tensor) of two
runs, A and B, must hold the same files with bitwise equal contents."""
import os
import sys

import numpy as np

a, b = sys.argv[1:3]
names = sorted(os.listdir(b))
assert names == sorted(os.listdir(a)), (sorted(os.listdir(a)), names)
assert any(n.endswith(".exp_avg.npy") for n in names), names
for name in names:
    x, y = np.load(os.path.join(a, name)), np.load(os.path.join(b, name))
    assert x.shape == y.shape and x.dtype == y.dtype, (name, x.shape, y.shape)
    assert np.array_equal(x, y), (name, float(np.max(np.abs(x.astype(np.float64) - y))))
print(f"{len(names)} state files, bitwise equal")

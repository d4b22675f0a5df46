# SPDX-License-Identifier: Apache-2.0
"""Compares a data-parallel run (txopt-run --ranks N on a step compiled with
--data-parallel=N, batch B) with a plain run on batch N * B over the same
tokens: the --output-dir state after the last step.

Usage: compare_data_parallel.py PLAIN_DIR SHARDED_DIR RANKS [REL_TOL]

Every trained parameter (an .npy with optimizer state beside it) must have
the same shape in both folders and, with REL_TOL, agree within REL_TOL of
the tensor's largest magnitude. Every optimizer moment of the sharded run
must be one shard: ceil(n / RANKS) elements where the plain run holds n.
Exit 1 on a mismatch, printing it.
"""
import math
import os
import sys

import numpy as np

MOMENTS = (".exp_avg.npy", ".exp_avg_sq.npy", ".momentum_buffer.npy")


def main():
    plain_dir, sharded_dir, ranks = sys.argv[1], sys.argv[2], int(sys.argv[3])
    tol = float(sys.argv[4]) if len(sys.argv) > 4 else None
    files = set(os.listdir(plain_dir))
    params = moments = 0
    plain_moment_elems = sharded_moment_elems = 0
    worst, worst_name = 0.0, ""
    failures = []
    for name in sorted(os.listdir(plain_dir)):
        trained = any(name[:-len(".npy")] + m in files for m in MOMENTS)
        if not trained and not name.endswith(MOMENTS):
            continue
        plain = np.load(os.path.join(plain_dir, name))
        sharded = np.load(os.path.join(sharded_dir, name))
        if name.endswith(MOMENTS):
            moments += 1
            plain_moment_elems += plain.size
            sharded_moment_elems += sharded.size
            want = math.ceil(plain.size / ranks)
            if sharded.shape != (want,):
                failures.append(f"{name}: expected a shard of shape ({want},), but got {sharded.shape}")
            continue
        params += 1
        if sharded.shape != plain.shape:
            failures.append(f"{name}: shape {sharded.shape} != {plain.shape}")
            continue
        scale = max(float(np.abs(plain).max()), 1e-30)
        rel = float(np.abs(sharded.astype(np.float64) - plain).max()) / scale
        if rel > worst:
            worst, worst_name = rel, name
        if tol is not None and rel > tol:
            failures.append(f"{name}: max difference {rel:.2e} of its largest magnitude")
    print(f"{params} parameters: max relative difference {worst:.2e} ({worst_name})")
    print(f"{moments} moments: {sharded_moment_elems} elements per rank vs {plain_moment_elems} "
          f"(1/{plain_moment_elems / max(sharded_moment_elems, 1):.2f})")
    if not params or failures:
        print("MISMATCH: " + ("; ".join(failures) if failures else "no parameters compared"))
        return 1
    print(f"match within {tol:g}" if tol is not None else "shapes match")
    return 0


if __name__ == "__main__":
    sys.exit(main())

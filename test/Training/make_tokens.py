#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes COUNT seeded random tokens below VOCAB as an llm.c .bin token file
(header: 256 int32, magic 20240520, version 1, count; then uint16 tokens)
and as a 1-D int64 .npy: make_tokens.py OUT.bin OUT.npy COUNT VOCAB."""
import sys

import numpy as np

bin_path, npy_path, count, vocab = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
tokens = np.random.default_rng(0).integers(0, vocab, size=count)
header = np.zeros(256, dtype="<i4")
header[:3] = [20240520, 1, count]
with open(bin_path, "wb") as f:
    f.write(header.tobytes())
    f.write(tokens.astype("<u2").tobytes())
np.save(npy_path, tokens.astype(np.int64))

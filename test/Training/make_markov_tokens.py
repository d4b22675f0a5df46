#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes a 1-D int64 .npy token stream from a seeded Markov chain over
VOCAB tokens in which each token has 4 (or SUCCESSORS) equally likely
successors: a model can learn it, but not below ln 4, so the loss of a
short training run stays well above 0 and can be compared between
precisions.
make_markov_tokens.py OUT.npy COUNT VOCAB [SUCCESSORS]"""
import sys

import numpy as np

path, count, vocab = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
fanout = int(sys.argv[4]) if len(sys.argv) > 4 else 4
rng = np.random.default_rng(0)
successors = rng.integers(0, vocab, size=(vocab, fanout))
tokens = np.empty(count, dtype=np.int64)
tokens[0] = 0
choices = rng.integers(0, fanout, size=count)
for i in range(1, count):
    tokens[i] = successors[tokens[i - 1], choices[i]]
np.save(path, tokens)

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Recomputes tiny_lm_logits' mean cross-entropy with numpy from the model's
initializers and compares it with the loss txopt-run printed at step 1:
check_ce_loss.py MODEL.onnxtxt IDS.npy TARGETS.npy TXOPT_RUN_OUTPUT."""
import re
import sys

import numpy as np

text = open(sys.argv[1]).read()
tensors = {}
for dtype, dims, name, values in re.findall(r"(float)\[([\d,]+)\] (\w+) = \{([^}]*)\}", text):
    shape = [int(d) for d in dims.split(",")]
    tensors[name] = np.array([float(v) for v in values.split(",")], dtype=np.float64).reshape(shape)
ids, targets = np.load(sys.argv[2]), np.load(sys.argv[3])
logits = tensors["emb"][ids] @ tensors["head"] + tensors["head_bias"]
logits = logits.reshape(-1, logits.shape[-1])
shifted = logits - logits.max(axis=1, keepdims=True)
logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
expected = -logp[np.arange(len(logp)), targets.reshape(-1)].mean()
got = float(re.search(r"^step 1  loss (\S+)", open(sys.argv[4]).read(), re.M).group(1))
rel = abs(got - expected) / abs(expected)
print("txopt %.6f numpy %.6f rel %.2g" % (got, expected, rel))
# txopt-run prints 6 decimals.
if rel > 1e-5:
    sys.exit("cross-entropy differs")
print("cross-entropy matches numpy")
